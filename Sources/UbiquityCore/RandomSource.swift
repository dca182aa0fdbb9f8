// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
#if canImport(Glibc)
import Glibc
#endif

/// Where the sync engine's random choices come from: the kernel (``system``), or a seeded
/// generator, so that a simulated run (the sync simulator's devices) makes the same record IDs
/// and conflict names every time its seed is replayed.
package final class RandomSource: Sendable {
    /// Whether the bytes come from the kernel (else from ``seeded``).
    private let isSystem: Bool
    private let seeded: Mutex<SeededRandom>

    /// The kernel's randomness (`arc4random_buf(3)`).
    package static let system = RandomSource(seed: 0, isSystem: true)

    /// A generator that repeats itself for the same `seed`.
    package convenience init(seed: UInt64) {
        self.init(seed: seed, isSystem: false)
    }

    private init(seed: UInt64, isSystem: Bool) {
        self.isSystem = isSystem
        seeded = Mutex(SeededRandom(seed: seed))
    }

    /// Fills `buffer` with random bytes.
    package func fill(_ buffer: UnsafeMutableRawBufferPointer) {
        guard !isSystem else {
            if let base = buffer.baseAddress, buffer.count > 0 { arc4random_buf(base, buffer.count) }
            return
        }
        seeded.withLock { generator in
            for index in 0..<buffer.count { buffer[index] = UInt8(truncatingIfNeeded: generator.next()) }
        }
    }

    /// `count` random hexadecimal digits (upper case, as in `UUID().uuidString`).
    package func hexadecimal(_ count: Int) -> String {
        var bytes = [UInt8](repeating: 0, count: (count + 1) / 2)
        bytes.withUnsafeMutableBytes { fill($0) }
        return String(Hex.encode(bytes).uppercased().prefix(count))
    }
}
