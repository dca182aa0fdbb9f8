// SPDX-License-Identifier: Apache-2.0
import NIOCore
import UbiquityCore

/// Where a read of a ``PackBlobStore`` asset is: the runs left to fetch, the next one already
/// being fetched, and the bytes of the range still to give.
actor PackReadCursor {
    private let store: PackBlobStore
    private var runs: [ArraySlice<PackChunkLocation>]
    private var ahead: Task<ByteBuffer, any Error>?
    private var skip: Int64
    private var remaining: Int64

    init(store: PackBlobStore, runs: [ArraySlice<PackChunkLocation>], skip: Int64, remaining: Int64) {
        self.store = store
        self.runs = runs
        self.skip = skip
        self.remaining = remaining
    }

    deinit { ahead?.cancel() }

    /// The next piece of the range, or nil at its end.
    func next() async throws -> ByteBuffer? {
        while remaining > 0 {
            let current: Task<ByteBuffer, any Error>
            if let ahead {
                current = ahead
                self.ahead = nil
            } else if !runs.isEmpty {
                let run = runs.removeFirst()
                current = Task { [store] in try await store.fetch(run) }
            } else {
                throw UbiquityError(.io, "the asset's manifest ends before the bytes asked for")
            }
            if !runs.isEmpty {
                let run = runs.removeFirst()
                ahead = Task { [store] in try await store.fetch(run) }
            }
            var bytes = try await current.value
            if skip > 0 {
                let dropped = Int(min(skip, Int64(bytes.readableBytes)))
                bytes.moveReaderIndex(forwardBy: dropped)
                skip -= Int64(dropped)
            }
            if Int64(bytes.readableBytes) > remaining { bytes = bytes.getSlice(at: bytes.readerIndex, length: Int(remaining))! }
            remaining -= Int64(bytes.readableBytes)
            if bytes.readableBytes > 0 { return bytes }
        }
        return nil
    }
}
