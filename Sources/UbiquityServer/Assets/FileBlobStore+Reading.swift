// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

extension FileBlobStore {
    /// Streams the asset (or `range` of it), verifying each chunk; see ``BlobStore/read(fileChecksum:range:)``.
    package func read(fileChecksum: String, range: Range<Int64>?) async throws -> BlobByteStream {
        guard let manifest = try await BlockingWork.run({ try self.loadManifest(fileChecksum) }) else {
            throw UbiquityError(.notFound, "no asset with checksum \(fileChecksum) is stored")
        }
        let range = range ?? 0..<manifest.size
        guard range.lowerBound >= 0, range.upperBound <= manifest.size else {
            throw UbiquityError(.invalidArgument, "bytes \(range.lowerBound)..<\(range.upperBound) are outside the asset's \(manifest.size) bytes")
        }
        var starts: [Int64] = []
        starts.reserveCapacity(manifest.chunks.count)
        var offset: Int64 = 0
        for chunk in manifest.chunks {
            starts.append(offset)
            offset += Int64(chunk.size)
        }
        // The last chunk starting at or before the range's start.
        var low = 0
        var high = manifest.chunks.count
        while high - low > 1 {
            let middle = (low + high) / 2
            if starts[middle] <= range.lowerBound { low = middle } else { high = middle }
        }
        let plan = BlobReadPlan(chunks: manifest.chunks, starts: starts, range: range, firstIndex: low)
        return BlobByteStream {
            let cursor = BlobReadCursor(store: self, plan: plan)
            return { try await cursor.next() }
        }
    }

    /// A chunk's bytes in a new buffer, checking its size and hash (blocking).
    func readChunkBuffer(_ chunk: AssetChunkRef) throws -> ByteBuffer {
        let path = chunkPath(chunk.hash)
        readCounter.add(1, ordering: .relaxed)
        guard let buffer = try BlobFiles.read(path, limit: chunk.size) else {
            throw UbiquityError(.notFound, "chunk \(chunk.hash) is missing from the blob store")
        }
        guard buffer.readableBytes == chunk.size else {
            throw UbiquityError(.io, "chunk \(chunk.hash) is damaged: it is not \(chunk.size) bytes long")
        }
        let hash = buffer.withUnsafeReadableBytes { Hex.encode(SHA256.hash(data: $0)) }
        guard hash == chunk.hash else {
            throw UbiquityError(.io, "chunk \(chunk.hash) is damaged: its bytes no longer match its hash")
        }
        return buffer
    }
}

/// Which chunks a read covers.
struct BlobReadPlan: Sendable {
    let chunks: [AssetChunkRef]
    /// Where each chunk starts in the asset.
    let starts: [Int64]
    let range: Range<Int64>
    let firstIndex: Int
}

/// One iteration of a read: reads the next chunks (about 1 MiB at a time) only when asked.
final class BlobReadCursor: Sendable {
    private struct State {
        var index: Int
        var ready: [ByteBuffer] = []
    }

    /// How many bytes of chunks one blocking read gathers.
    static let batchBytes = 1 << 20

    let store: FileBlobStore
    let plan: BlobReadPlan
    private let state: Mutex<State>

    init(store: FileBlobStore, plan: BlobReadPlan) {
        self.store = store
        self.plan = plan
        state = Mutex(State(index: plan.firstIndex))
    }

    func next() async throws -> ByteBuffer? {
        if let buffer = state.withLock({ $0.ready.isEmpty ? nil : $0.ready.removeFirst() }) { return buffer }
        let index = state.withLock { $0.index }
        let plan = self.plan
        guard !plan.range.isEmpty, index < plan.chunks.count, plan.starts[index] < plan.range.upperBound else { return nil }
        let store = self.store
        let (buffers, nextIndex) = try await BlockingWork.run { () throws -> ([ByteBuffer], Int) in
            var buffers: [ByteBuffer] = []
            var gathered = 0
            var current = index
            while current < plan.chunks.count, plan.starts[current] < plan.range.upperBound, gathered < BlobReadCursor.batchBytes {
                let chunk = plan.chunks[current]
                let start = plan.starts[current]
                let buffer = try store.readChunkBuffer(chunk)
                let from = Int(max(plan.range.lowerBound, start) - start)
                let to = Int(min(plan.range.upperBound, start + Int64(chunk.size)) - start)
                if let slice = buffer.getSlice(at: buffer.readerIndex + from, length: to - from), slice.readableBytes > 0 {
                    buffers.append(slice)
                    gathered += slice.readableBytes
                }
                current += 1
            }
            return (buffers, current)
        }
        return state.withLock { state in
            state.index = nextIndex
            state.ready = buffers
            return state.ready.isEmpty ? nil : state.ready.removeFirst()
        }
    }
}
