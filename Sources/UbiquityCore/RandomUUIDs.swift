// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Random (version 4) UUID strings made in bulk, spelled as Foundation's `UUID().uuidString`.
///
/// `UUID()` asks the kernel for randomness once per UUID (~4 µs each here: 40 ms before the
/// first upload of a 10,000-file batch, each new item needing its record's ID); this takes the
/// bytes of all of them with one `arc4random_buf(3)` call and only formats them (~0.4 µs each).
package enum RandomUUIDs {
    /// `count` new UUID strings, from `source`'s bytes.
    package static func make(_ count: Int, using source: RandomSource = .system) -> [String] {
        guard count > 0 else { return [] }
        var b = [UInt8](repeating: 0, count: 16 * count)  // 16 random bytes a UUID
        b.withUnsafeMutableBytes { source.fill($0) }
        var uuids: [String] = []
        uuids.reserveCapacity(count)
        for start in stride(from: 0, to: b.count, by: 16) {
            let uuid: uuid_t = (b[start], b[start + 1], b[start + 2], b[start + 3], b[start + 4], b[start + 5],
                                (b[start + 6] & 0x0f) | 0x40, b[start + 7],  // version 4
                                (b[start + 8] & 0x3f) | 0x80, b[start + 9],  // RFC 4122 variant
                                b[start + 10], b[start + 11], b[start + 12], b[start + 13], b[start + 14], b[start + 15])
            uuids.append(UUID(uuid: uuid).uuidString)
        }
        return uuids
    }
}
