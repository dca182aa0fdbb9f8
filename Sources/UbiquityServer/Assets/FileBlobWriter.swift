// SPDX-License-Identifier: Apache-2.0
import Crypto
import Dispatch
import Foundation
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

/// The files of a resumable upload session in `uploads/<id>/`: `info` (total size and creation
/// time; its modification time is the session's last activity), `chunks.log` (one
/// `hash size` line per stored chunk, appended after the chunk is in place), `tail-N` (the bytes
/// after the N logged chunks, written when a request ends) and `pending-chunks` (a chunk list
/// remembered for the deduplicating extension).
struct BlobSessionFiles: Sendable {
    let id: String
    let folder: String
    var info: String { folder + "/info" }
    var log: String { folder + "/chunks.log" }
    var pendingChunks: String { folder + "/pending-chunks" }
    func tail(after count: Int) -> String { folder + "/tail-\(count)" }
}

/// A streaming write into a ``FileBlobStore``.
///
/// `append` hands each buffer to two serial queues that run in parallel: one hashes the whole
/// content, the other cuts it with FastCDC, hashes each chunk and stores the chunks that are
/// new. `append` waits when more than the configured backlog is queued, so memory stays flat
/// however large the asset. Calls must not overlap (one request drives one writer).
final class FileBlobWriter: SessionBlobWriter, @unchecked Sendable {
    // @unchecked because: `whole` is only touched on `hashQueue`; `chunker`, `pending`,
    // `pendingLength`, `chunks`, `loggedCount` and `logFD` only on `chunkQueue` (or before the writer is shared,
    // or after both queues drained); chunk files are written on `storeQueue` from copies, tracked
    // by `writes`; what callers and queues share is in `shared`, a Mutex.

    private enum Phase { case open, finishing, finished, aborted, failed }

    private struct Shared {
        var total: Int64 = 0
        var hashBacklog = 0
        var chunkBacklog = 0
        var waiter: CheckedContinuation<Void, Never>?
        var waitLimit = 0
        var failure: (any Error)?
        var phase = Phase.open
    }

    let store: FileBlobStore
    let session: BlobSessionFiles?
    /// The announced size of a session upload.
    let totalSize: Int64?
    /// When the session was created.
    let created: Date
    private let hashQueue = DispatchQueue(label: "ubiquity.blob.hash")
    private let chunkQueue = DispatchQueue(label: "ubiquity.blob.chunks")
    private var whole: SHA256
    private var chunker: FastCDC
    private let pending: UnsafeMutableRawBufferPointer
    private var pendingLength = 0
    private var chunks: [AssetChunkRef]
    private var logFD: Int32
    /// How many of `chunks` are in the session's log.
    private var loggedCount: Int
    /// Chunk files being written on `storeQueue`.
    private let writes = DispatchGroup()
    /// At most this many chunk files are written at once.
    private let writeSlots = DispatchSemaphore(value: FileBlobWriter.parallelWrites)
    private let shared: Mutex<Shared>

    /// Chunk files written in parallel per writer: creating files is mostly kernel time, which
    /// this spreads over the cores while the chunk queue goes on cutting and hashing.
    static let parallelWrites = 4
    /// The session log is brought up to date (after waiting for the chunk files) every this many chunks.
    static let logInterval = 64
    private static let storeQueue = DispatchQueue(label: "ubiquity.blob.store", qos: .userInitiated, attributes: .concurrent)

    private init(store: FileBlobStore, session: BlobSessionFiles?, totalSize: Int64?, created: Date,
                 whole: SHA256, chunks: [AssetChunkRef], tail: [UInt8], logFD: Int32) {
        self.store = store
        self.session = session
        self.totalSize = totalSize
        self.created = created
        self.whole = whole
        self.chunks = chunks
        self.logFD = logFD
        loggedCount = chunks.count
        chunker = FastCDC(parameters: store.chunking)
        pending = .allocate(byteCount: store.chunking.maximumSize, alignment: 16)
        var shared = Shared()
        shared.total = chunks.reduce(Int64(0)) { $0 + Int64($1.size) } + Int64(tail.count)
        self.shared = Mutex(shared)
        if !tail.isEmpty {
            tail.withUnsafeBytes { bytes in
                _ = chunker.boundary(in: bytes)
                pending.copyMemory(from: bytes)
            }
            pendingLength = tail.count
        }
    }

    deinit {
        pending.deallocate()
        if logFD >= 0 { close(logFD) }
    }

    /// A writer for a one-shot upload.
    static func ephemeral(store: FileBlobStore) -> FileBlobWriter {
        FileBlobWriter(store: store, session: nil, totalSize: nil, created: Date(), whole: SHA256(), chunks: [], tail: [], logFD: -1)
    }

    /// Creates session `files` (blocking).
    static func create(store: FileBlobStore, files: BlobSessionFiles, totalSize: Int64) throws -> FileBlobWriter {
        try BlobFiles.makeDirectories(files.folder)
        let now = Date()
        let info = Array(BlobSessionID.infoText(totalSize: totalSize, created: now).utf8)
        try info.withUnsafeBytes { try BlobFiles.writeAtomically(files.info, bytes: $0, temporaryDirectory: store.temporaryRoot) }
        let fd = open(files.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: files.log) }
        return FileBlobWriter(store: store, session: files, totalSize: totalSize, created: now, whole: SHA256(), chunks: [], tail: [], logFD: fd)
    }

    /// Reads a session's `info`: total size and creation time; nil when there is no session.
    static func readInfo(_ files: BlobSessionFiles) throws -> (totalSize: Int64, created: Date)? {
        guard let buffer = try BlobFiles.read(files.info, limit: 4096) else { return nil }
        return try BlobSessionID.parseInfo(String(buffer: buffer), id: files.id)
    }

    /// The chunks a session logged, truncating a torn last line (blocking).
    static func readLog(_ files: BlobSessionFiles, repair: Bool) throws -> [AssetChunkRef] {
        guard let buffer = try BlobFiles.read(files.log) else { return [] }
        var chunks: [AssetChunkRef] = []
        var validLength = 0
        let bytes = Array(buffer.readableBytesView)
        var lineStart = 0
        for index in bytes.indices where bytes[index] == 0x0A {
            let line = String(decoding: bytes[lineStart..<index], as: UTF8.self).split(separator: " ")
            guard line.count == 2, AssetChunkRef.isValidHash(String(line[0])), let size = Int(line[1]), size > 0 else { break }
            chunks.append(AssetChunkRef(hash: String(line[0]), size: size))
            lineStart = index + 1
            validLength = lineStart
        }
        if repair, validLength < bytes.count { truncate(files.log, off_t(validLength)) }
        return chunks
    }

    /// The tail written after exactly `count` chunks, if any (blocking).
    static func readTail(_ files: BlobSessionFiles, after count: Int) throws -> [UInt8]? {
        try BlobFiles.read(files.tail(after: count), limit: 1 << 30).map { Array($0.readableBytesView) }
    }

    /// Rebuilds a session's writer from its files, re-reading its chunks to restore the whole
    /// hash (blocking); nil when there is no session.
    static func recover(store: FileBlobStore, files: BlobSessionFiles) throws -> FileBlobWriter? {
        guard let info = try readInfo(files) else { return nil }
        let chunks = try readLog(files, repair: true)
        var whole = SHA256()
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(chunks.map(\.size).max() ?? 1, 1), alignment: 16)
        defer { scratch.deallocate() }
        for chunk in chunks { whole.update(bufferPointer: try store.readChunk(chunk, into: scratch)) }
        var tail = try readTail(files, after: chunks.count) ?? []
        var probe = FastCDC(parameters: store.chunking)
        if tail.count >= store.chunking.maximumSize || tail.withUnsafeBytes({ probe.boundary(in: $0) }) != nil {
            tail = []  // not a tail these parameters would leave: drop it, the client resends those bytes
        }
        tail.withUnsafeBytes { whole.update(bufferPointer: $0) }
        let fd = open(files.log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: files.log) }
        return FileBlobWriter(store: store, session: files, totalSize: info.totalSize, created: info.created, whole: whole,
                              chunks: chunks, tail: tail, logFD: fd)
    }

    // MARK: BlobWriter

    var bytesWritten: Int64 { shared.withLock { $0.total } }

    /// Whether the writer can take more bytes (not finished, aborted or failed).
    var isUsable: Bool { shared.withLock { $0.phase == .open && $0.failure == nil } }

    func append(_ buffer: ByteBuffer) async throws {
        let count = buffer.readableBytes
        guard count > 0 else { return }
        let limit = store.configuration.writeBacklog
        let mustWait = try shared.withLock { state -> Bool in
            if let failure = state.failure { throw failure }
            guard state.phase == .open else { throw UbiquityError(.invalidArgument, "the blob writer is already finished") }
            if let totalSize, state.total + Int64(count) > totalSize {
                throw UbiquityError(.invalidArgument, "the upload is longer than the \(totalSize) bytes it announced")
            }
            state.total += Int64(count)
            state.hashBacklog += count
            state.chunkBacklog += count
            return max(state.hashBacklog, state.chunkBacklog) > limit
        }
        hashQueue.async {
            buffer.withUnsafeReadableBytes { self.whole.update(bufferPointer: $0) }
            self.release(hash: count, chunk: 0)
        }
        chunkQueue.async {
            if self.shared.withLock({ $0.failure == nil }) {
                do {
                    try self.cut(buffer)
                } catch {
                    self.fail(error)
                }
            }
            self.release(hash: 0, chunk: count)
        }
        if mustWait { await waitForBacklog(atMost: limit / 2) }
        if let failure = shared.withLock({ $0.failure }) { throw failure }
    }

    func finish() async throws -> BlobInfo {
        try shared.withLock { state in
            if let failure = state.failure { throw failure }
            guard state.phase == .open else { throw UbiquityError(.invalidArgument, "the blob writer is already finished") }
            state.phase = .finishing
        }
        await waitForBacklog(atMost: 0)
        do {
            if let failure = shared.withLock({ $0.failure }) { throw failure }
            let chunks = try await onChunkQueue { () -> [AssetChunkRef] in
                if let last = self.chunker.finish() { try self.emitChunk(length: last) }
                try self.waitForWrites()
                return self.chunks
            }
            let digest = await onHashQueue { Array(self.whole.finalize()) }
            let size = chunks.reduce(Int64(0)) { $0 + Int64($1.size) }
            if let totalSize, size != totalSize {
                throw UbiquityError(.invalidArgument, "the upload has \(size) bytes but announced \(totalSize)")
            }
            let manifest = BlobManifest(fileChecksum: FileBlobStore.checksum(of: digest), size: size, chunks: chunks)
            let session = self.session
            try await onChunkQueue {
                try self.store.commit(manifest)
                if self.logFD >= 0 {
                    close(self.logFD)
                    self.logFD = -1
                }
                if let session { try? BlobFiles.removeTree(session.folder) }
            }
            shared.withLock { $0.phase = .finished }
            return manifest.info
        } catch {
            shared.withLock { $0.phase = .failed }
            throw error
        }
    }

    func abort() async {
        let wasOpen = shared.withLock { state -> Bool in
            let open = state.phase == .open || state.phase == .failed
            if state.phase != .finished { state.phase = .aborted }
            return open
        }
        guard wasOpen else { return }
        await waitForBacklog(atMost: 0)
        let session = self.session
        _ = try? await onChunkQueue {
            self.writes.wait()
            if self.logFD >= 0 {
                close(self.logFD)
                self.logFD = -1
            }
            if let session { try BlobFiles.removeTree(session.folder) }
        }
    }

    /// Saves a session's state so it can continue later: waits for queued bytes, then writes the
    /// open chunk's bytes as `tail-N` and restarts the session's age.
    func suspend() async throws {
        await waitForBacklog(atMost: 0)
        try shared.withLock { state in
            if let failure = state.failure { throw failure }
            guard state.phase == .open else { throw UbiquityError(.invalidArgument, "the blob writer is finished") }
        }
        guard let session else { return }
        try await onChunkQueue {
            try self.flushLog()
            let count = self.chunks.count
            try BlobFiles.writeAtomically(session.tail(after: count), bytes: UnsafeRawBufferPointer(rebasing: self.pending[..<self.pendingLength]),
                                          temporaryDirectory: self.store.temporaryRoot)
            for name in try BlobFiles.list(session.folder) where name.hasPrefix("tail-") && name != "tail-\(count)" {
                unlink("\(session.folder)/\(name)")
            }
            _ = try BlobFiles.touch(session.info)
        }
    }

    // MARK: Chunking (on chunkQueue)

    private func cut(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { bytes in
            var offset = 0
            while offset < bytes.count {
                let rest = UnsafeRawBufferPointer(rebasing: bytes[offset...])
                if let boundary = chunker.boundary(in: rest) {
                    take(UnsafeRawBufferPointer(rebasing: rest[..<boundary]))
                    try emitChunk(length: pendingLength)
                    offset += boundary
                } else {
                    take(rest)
                    offset = bytes.count
                }
            }
        }
    }

    private func take(_ bytes: UnsafeRawBufferPointer) {
        guard !bytes.isEmpty else { return }
        UnsafeMutableRawBufferPointer(rebasing: pending[pendingLength..<pendingLength + bytes.count]).copyMemory(from: bytes)
        pendingLength += bytes.count
    }

    private func emitChunk(length: Int) throws {
        precondition(length == pendingLength, "chunker and buffer disagree")
        let bytes = UnsafeRawBufferPointer(rebasing: pending[..<length])
        let hash = Hex.encode(SHA256.hash(data: bytes))
        chunks.append(AssetChunkRef(hash: hash, size: length))
        let copy = Array(bytes)
        pendingLength = 0
        writeSlots.wait()
        writes.enter()
        let store = self.store
        FileBlobWriter.storeQueue.async {
            defer {
                self.writeSlots.signal()
                self.writes.leave()
            }
            do {
                _ = try copy.withUnsafeBytes { try store.storeChunk(hash: hash, bytes: $0) }
            } catch {
                self.fail(error)
            }
        }
        if logFD >= 0, chunks.count - loggedCount >= FileBlobWriter.logInterval { try flushLog() }
    }

    /// Waits for the chunk files in flight; throws the first failure.
    private func waitForWrites() throws {
        writes.wait()
        if let failure = shared.withLock({ $0.failure }) { throw failure }
    }

    /// Appends the chunks stored since the last flush to the session log, once their files are
    /// in place.
    private func flushLog() throws {
        try waitForWrites()
        guard logFD >= 0, loggedCount < chunks.count else { return }
        var text = ""
        for chunk in chunks[loggedCount...] { text += "\(chunk.hash) \(chunk.size)\n" }
        let line = Array(text.utf8)
        try line.withUnsafeBytes { try BlobFiles.writeAll(logFD, $0, path: session?.log ?? "chunks.log") }
        loggedCount = chunks.count
    }

    // MARK: Back-pressure

    private func release(hash: Int, chunk: Int) {
        let waiter = shared.withLock { state -> CheckedContinuation<Void, Never>? in
            state.hashBacklog -= hash
            state.chunkBacklog -= chunk
            guard let waiter = state.waiter, max(state.hashBacklog, state.chunkBacklog) <= state.waitLimit || state.failure != nil else { return nil }
            state.waiter = nil
            return waiter
        }
        waiter?.resume()
    }

    private func fail(_ error: any Error) {
        let waiter = shared.withLock { state -> CheckedContinuation<Void, Never>? in
            if state.failure == nil { state.failure = error }
            defer { state.waiter = nil }
            return state.waiter
        }
        waiter?.resume()
    }

    private func waitForBacklog(atMost limit: Int) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let ready = shared.withLock { state -> Bool in
                if max(state.hashBacklog, state.chunkBacklog) <= limit { return true }
                state.waiter = continuation
                state.waitLimit = limit
                return false
            }
            if ready { continuation.resume() }
        }
    }

    private func onChunkQueue<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            chunkQueue.async { continuation.resume(with: Result { try work() }) }
        }
    }

    private func onHashQueue<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            hashQueue.async { continuation.resume(returning: work()) }
        }
    }
}
