// SPDX-License-Identifier: Apache-2.0
import Crypto
import NIOCore
import UbiquityCore

/// A SHA-256 of content read piece by piece, fed on the blocking pool: hashing a large asset on
/// Swift's cooperative pool (as wide as the machine has cores) would starve every other task.
/// One caller feeds it, one piece at a time.
final class BlockingSHA256: @unchecked Sendable {
    // @unchecked because: `hash` is touched only by the awaited BlockingWork closure of one
    // update at a time (the caller awaits each), and by `finalize` after the last.
    private var hash = SHA256()

    /// Adds `buffer`'s bytes.
    func update(_ buffer: ByteBuffer) async throws {
        try await BlockingWork.run { buffer.withUnsafeReadableBytes { self.hash.update(bufferPointer: $0) } }
    }

    /// The hash so far, to go on with elsewhere.
    var state: SHA256 { hash }

    /// The digest of everything added.
    func finalize() -> [UInt8] { Array(hash.finalize()) }
}
