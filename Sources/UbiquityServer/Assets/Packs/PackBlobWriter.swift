// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

/// A streaming write into a ``PackBlobStore``. Each appended buffer is cut by FastCDC and its
/// chunks hashed on the blocking pool while the whole content's hash is computed beside it
/// (``ChunkCutter``); chunks the store holds are referred to where they are, new ones appended
/// to the writer's pack (``PackUpload``), a new pack begun every
/// ``PackBlobStore/Configuration/packSize`` bytes. Calls must not overlap (one request drives
/// one writer).
///
/// In an upload session, ``suspend()`` closes the pack and saves the chunk list and the open
/// chunk's bytes under `sessions/<id>/`, so that any server can continue the session.
actor PackBlobWriter: SessionBlobWriter {
    private enum Phase { case open, finished, aborted, failed }

    let store: PackBlobStore
    /// The upload session's id, if any.
    let session: String?
    /// The announced size of a session upload.
    let totalSize: Int64?
    /// When the session was created.
    let created: Date
    private let cutter: ChunkCutter
    private var chunks: [PackChunkLocation]
    private var pack: PackUpload?
    /// Packs of chunks reused from the store (their age restarted when first used).
    private var reusedPacks: Set<String> = []
    /// This writer's own new chunks, by hash (a chunk repeated within the asset is stored once).
    private var own: [String: PackChunkLocation] = [:]
    private var total: Int64
    private var phase = Phase.open
    /// Bytes appended and not yet cut: gathered to ``batchSize`` so that the blocking pool is
    /// asked once per batch, not once per network read.
    private var input = ByteBuffer()
    /// The batch being cut while the next is gathered.
    private var cutting: Task<Void, any Error>?

    /// Bytes cut together.
    static let batchSize = 1 << 20

    init(store: PackBlobStore, session: String?, totalSize: Int64?, created: Date, chunks: [PackChunkLocation] = [],
         tail: [UInt8] = [], whole: SHA256 = SHA256()) {
        self.store = store
        self.session = session
        self.totalSize = totalSize
        self.created = created
        self.chunks = chunks
        cutter = ChunkCutter(parameters: store.chunking, whole: whole, tail: tail)
        total = chunks.reduce(Int64(0)) { $0 + Int64($1.size) } + Int64(tail.count)
        for chunk in chunks { own[chunk.hash] = chunk }
    }

    /// Bytes appended so far (since the session began).
    var bytesWritten: Int64 { total }

    /// Whether the writer can take more bytes.
    var isUsable: Bool { phase == .open }

    func append(_ buffer: ByteBuffer) async throws {
        guard buffer.readableBytes > 0 else { return }
        guard phase == .open else { throw UbiquityError(.invalidArgument, "the blob writer is already finished") }
        if let totalSize, total + Int64(buffer.readableBytes) > totalSize {
            throw UbiquityError(.invalidArgument, "the upload is longer than the \(totalSize) bytes it announced")
        }
        total += Int64(buffer.readableBytes)
        var buffer = buffer
        input.writeBuffer(&buffer)
        guard input.readableBytes >= Self.batchSize else { return }
        // one batch is cut while the next is received: wait for the one before, start this one
        try await waitForCutting()
        let bytes = takeInput()
        cutting = Task { try await self.cut(bytes) }
    }

    /// The gathered bytes, the gathering begun again.
    private func takeInput() -> ByteBuffer {
        let bytes = input
        input = ByteBuffer()
        input.reserveCapacity(Self.batchSize + (64 << 10))
        return bytes
    }

    /// Waits for the batch being cut, if any; its failure fails the writer.
    private func waitForCutting() async throws {
        guard let task = cutting else { return }
        cutting = nil
        do {
            try await task.value
        } catch {
            phase = .failed
            throw error
        }
    }

    /// Cuts everything appended and places the chunks (before finishing or suspending).
    private func cutInput() async throws {
        try await waitForCutting()
        guard input.readableBytes > 0 else { return }
        do {
            try await cut(takeInput())
        } catch {
            phase = .failed
            throw error
        }
    }

    /// Cuts `bytes` and places their chunks, in order.
    private func cut(_ bytes: ByteBuffer) async throws {
        for chunk in try await cutter.cut(bytes) { try await place(chunk) }
    }

    /// Refers to a chunk the store holds, or appends it to the pack.
    private func place(_ chunk: ChunkCutter.Chunk) async throws {
        if let location = own[chunk.hash] {
            chunks.append(location)
            return
        }
        if let location = store.index.location(chunk.hash) {
            var fresh = reusedPacks.contains(location.pack)
            if !fresh { fresh = try await store.retain(packs: [location.pack]).isEmpty }
            if fresh, store.index.location(chunk.hash) == location {
                reusedPacks.insert(location.pack)
                chunks.append(location)
                return
            }
        }
        // the pack is taken out while it is awaited (an actor's property cannot be mutated
        // across a suspension); on failure it is given up
        var current = pack ?? PackUpload(objects: store.objects)
        pack = nil
        let location: PackChunkLocation
        do {
            location = try await current.add(hash: chunk.hash, bytes: chunk.bytes)
        } catch {
            await current.abort()
            throw error
        }
        pack = current
        own[chunk.hash] = location
        chunks.append(location)
        if current.length >= Int64(store.configuration.packSize) { try await closePack() }
    }

    /// Completes the pack being written and lets the store's index know its chunks.
    private func closePack() async throws {
        guard var current = pack else { return }
        pack = nil
        do {
            store.index.add(try await current.close())
        } catch {
            await current.abort()
            throw error
        }
    }

    func finish() async throws -> BlobInfo {
        guard phase == .open else { throw UbiquityError(.invalidArgument, "the blob writer is already finished") }
        try await cutInput()
        do {
            let (last, digest) = try await cutter.finish()
            if let last { try await place(last) }
            try await closePack()
            let size = chunks.reduce(Int64(0)) { $0 + Int64($1.size) }
            if let totalSize, size != totalSize {
                throw UbiquityError(.invalidArgument, "the upload has \(size) bytes but announced \(totalSize)")
            }
            let manifest = PackManifest(fileChecksum: FileBlobStore.checksum(of: digest), size: size, chunks: chunks)
            try await store.commit(manifest)
            phase = .finished
            if let session { try? await store.deleteSessionObjects(session) }
            return manifest.info
        } catch {
            phase = .failed
            throw error
        }
    }

    func abort() async {
        guard phase != .finished else { return }
        phase = .aborted
        _ = try? await cutting?.value
        cutting = nil
        if var current = pack {
            pack = nil
            await current.abort()
        }
        if let session { try? await store.deleteSessionObjects(session) }
    }

    /// Saves the session's state so that it can continue later, on this server or another:
    /// closes the pack, then writes the open chunk's bytes (`tail-N`) and the chunk list.
    func suspend() async throws {
        guard phase == .open else { throw UbiquityError(.invalidArgument, "the blob writer is finished") }
        guard let session else { return }
        try await cutInput()
        do {
            try await closePack()
            let tail = cutter.tail
            try await store.objects.put(PackBlobStore.sessionKey(session, "tail-\(chunks.count)"), body: ByteBuffer(bytes: tail))
            try await store.objects.put(PackBlobStore.sessionKey(session, "chunks"), body: ByteBuffer(string: chunks.map(\.line).joined()))
            for object in try await store.objects.list(prefix: PackBlobStore.sessionKey(session, "tail-"))
            where object.key != PackBlobStore.sessionKey(session, "tail-\(chunks.count)") {
                try await store.objects.delete(object.key)
            }
        } catch {
            phase = .failed
            throw error
        }
    }
}
