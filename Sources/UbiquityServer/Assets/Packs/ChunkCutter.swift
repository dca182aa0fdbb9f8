// SPDX-License-Identifier: Apache-2.0
import Crypto
import NIOCore
import UbiquityCore
import UbiquityWire

/// The FastCDC cutter and whole-content hash of one ``PackBlobWriter``, run on the blocking pool
/// (one call at a time: the writer awaits each).
final class ChunkCutter: @unchecked Sendable {
    // @unchecked because: every property is touched only inside `BlockingWork` closures the
    // owning writer runs one after the other (it awaits each before the next).

    /// A chunk cut from the content: its hash and bytes.
    struct Chunk: Sendable {
        var hash: String
        var bytes: [UInt8]
    }

    private var chunker: FastCDC
    private var whole: SHA256
    private var pending: [UInt8]

    init(parameters: FastCDC.Parameters, whole: SHA256, tail: [UInt8]) {
        chunker = FastCDC(parameters: parameters)
        self.whole = whole
        pending = tail
        pending.reserveCapacity(parameters.maximumSize)
        if !tail.isEmpty { tail.withUnsafeBytes { _ = chunker.boundary(in: $0) } }
    }

    /// The bytes of the chunk still open.
    var tail: [UInt8] { pending }

    /// Cuts `buffer`'s bytes; the chunks they complete. The whole hash is updated alongside.
    func cut(_ buffer: ByteBuffer) async throws -> [Chunk] {
        async let hashed: Void = BlockingWork.run { buffer.withUnsafeReadableBytes { self.whole.update(bufferPointer: $0) } }
        let chunks = try await BlockingWork.run { buffer.withUnsafeReadableBytes { self.cutLocked($0) } }
        try await hashed
        return chunks
    }

    private func cutLocked(_ bytes: UnsafeRawBufferPointer) -> [Chunk] {
        var out: [Chunk] = []
        var offset = 0
        while offset < bytes.count {
            let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
            if let boundary = chunker.boundary(in: rest) {
                pending.append(contentsOf: rest[..<boundary])
                out.append(Chunk(hash: Hex.encode(SHA256.hash(data: pending)), bytes: pending))
                pending.removeAll(keepingCapacity: true)
                offset += boundary
            } else {
                pending.append(contentsOf: rest)
                offset = bytes.count
            }
        }
        return out
    }

    /// Ends the content: the last chunk (if bytes were open) and the whole hash.
    func finish() async throws -> (Chunk?, [UInt8]) {
        try await BlockingWork.run {
            var last: Chunk?
            if self.chunker.finish() != nil, !self.pending.isEmpty {
                last = Chunk(hash: Hex.encode(SHA256.hash(data: self.pending)), bytes: self.pending)
                self.pending = []
            }
            return (last, Array(self.whole.finalize()))
        }
    }
}
