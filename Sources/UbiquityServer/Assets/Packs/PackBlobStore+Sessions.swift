// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import UbiquityCore
import UbiquityWire

/// Upload sessions as objects, `sessions/<id>/`: `info` (total size and creation time),
/// `chunks` (the chunks stored so far, where they are), `tail-N` (the open chunk's bytes after
/// N chunks), `pending-chunks` and `pending-base` (the deduplicating extension's list) and
/// `sent-<random>` (chunks the session sent). A session's last activity is its newest object.
extension PackBlobStore {
    /// The key of a session's object.
    static func sessionKey(_ id: String, _ name: String) -> String { "sessions/\(id)/\(name)" }

    /// A writer for a one-shot upload; see ``BlobStore/makeWriter()``.
    package func makeWriter() async throws -> any BlobWriter {
        PackBlobWriter(store: self, session: nil, totalSize: nil, created: Date())
    }

    /// Runs `body` with the session's writer, exclusively in this process; see
    /// ``BlobStore/withUploadSession(id:totalSize:_:)``.
    @discardableResult
    package func withUploadSession<T: Sendable>(id: String, totalSize: Int64, _ body: (any BlobWriter) async throws -> T) async throws -> T {
        try await sessions.run(id: id, totalSize: totalSize, open: {
            if let recovered = try await recoverSession(id) { return recovered }
            try await writeSessionInfo(id, totalSize: totalSize)
            return PackBlobWriter(store: self, session: id, totalSize: totalSize, created: Date())
        }, body)
    }

    private func writeSessionInfo(_ id: String, totalSize: Int64) async throws {
        try await objects.put(Self.sessionKey(id, "info"), body: ByteBuffer(string: BlobSessionID.infoText(totalSize: totalSize, created: Date())))
    }

    /// The session's total size and creation time, or nil when there is none.
    private func sessionInfo(_ id: String) async throws -> (totalSize: Int64, created: Date)? {
        guard let body = try await objects.get(Self.sessionKey(id, "info")) else { return nil }
        return try BlobSessionID.parseInfo(String(buffer: body), id: id)
    }

    /// The chunks the session saved, where they are.
    private func sessionChunks(_ id: String) async throws -> [PackChunkLocation] {
        guard let body = try await objects.get(Self.sessionKey(id, "chunks")) else { return [] }
        return try PackChunkLocation.lines(Substring(String(buffer: body)), lenient: false, what: "upload session \(id)'s chunk list")
    }

    /// Rebuilds a session's writer from its objects, reading its chunks back to restore the
    /// whole hash; nil when there is no session.
    private func recoverSession(_ id: String) async throws -> PackBlobWriter? {
        guard let info = try await sessionInfo(id) else { return nil }
        let chunks = try await sessionChunks(id)
        let hasher = BlockingSHA256()
        for run in readRuns(chunks[...]) { try await hasher.update(try await fetch(run)) }
        var tail = Array(try await objects.get(Self.sessionKey(id, "tail-\(chunks.count)"))?.readableBytesView ?? ByteBuffer().readableBytesView)
        var probe = FastCDC(parameters: chunking)
        if tail.count >= chunking.maximumSize || tail.withUnsafeBytes({ probe.boundary(in: $0) }) != nil {
            tail = []  // not a tail these parameters would leave: drop it, the client resends those bytes
        }
        var whole = hasher.state
        tail.withUnsafeBytes { whole.update(bufferPointer: $0) }
        return PackBlobWriter(store: self, session: id, totalSize: info.totalSize, created: info.created, chunks: chunks, tail: tail, whole: whole)
    }

    /// The session's bytes held, size and creation; see ``BlobStore/uploadSession(id:)``.
    package func uploadSession(id: String) async throws -> BlobUploadSessionInfo? {
        try BlobSessionID.check(id)
        if let cached = await sessions.cachedInfo(id) { return cached }
        guard let info = try await sessionInfo(id) else { return nil }
        let chunks = try await sessionChunks(id)
        let tail = try await objects.head(Self.sessionKey(id, "tail-\(chunks.count)"))?.size ?? 0
        return BlobUploadSessionInfo(received: chunks.reduce(Int64(0)) { $0 + Int64($1.size) } + tail, totalSize: info.totalSize, created: info.created)
    }

    /// Deletes every object of a session.
    func deleteSessionObjects(_ id: String) async throws {
        for object in try await objects.list(prefix: "sessions/\(id)/") { try await objects.delete(object.key) }
    }

    /// Deletes the session; see ``BlobStore/discardUploadSession(id:)``.
    package func discardUploadSession(id: String) async throws {
        try BlobSessionID.check(id)
        let writer = sessions.withLock { $0.take(id) }
        await writer?.abort()
        try await deleteSessionObjects(id)
    }

    /// Remembers a chunk list for the session (creating it); see ``BlobStore/setPendingChunks(_:session:totalSize:)``.
    package func setPendingChunks(_ chunks: [AssetChunkRef], session id: String, totalSize: Int64) async throws {
        try BlobSessionID.check(id)
        if try await sessionInfo(id) == nil { try await writeSessionInfo(id, totalSize: totalSize) }
        try await objects.put(Self.sessionKey(id, "pending-chunks"), body: ByteBuffer(string: AssetChunkRef.packed(chunks)))
    }

    /// The chunk list remembered for the session; see ``BlobStore/pendingChunks(session:)``.
    package func pendingChunks(session id: String) async throws -> [AssetChunkRef]? {
        try BlobSessionID.check(id)
        guard let body = try await objects.get(Self.sessionKey(id, "pending-chunks")) else { return nil }
        return try AssetChunkRef.unpack(String(buffer: body), path: "pending-chunks")
    }

    /// Remembers the base of the session's pending list; see ``BlobStore/setPendingBase(_:session:)``.
    package func setPendingBase(_ base: String?, session id: String) async throws {
        try BlobSessionID.check(id)
        if let base {
            try await objects.put(Self.sessionKey(id, "pending-base"), body: ByteBuffer(string: base))
        } else {
            try await objects.delete(Self.sessionKey(id, "pending-base"))
        }
    }

    /// The base remembered for the session; see ``BlobStore/pendingBase(session:)``.
    package func pendingBase(session id: String) async throws -> String? {
        try BlobSessionID.check(id)
        return try await objects.get(Self.sessionKey(id, "pending-base")).map { String(buffer: $0) }
    }

    /// Adds `hashes` to the chunks the session sent (an object of their own: objects cannot be
    /// appended to); see ``BlobStore/noteSentChunks(_:session:)``.
    package func noteSentChunks(_ hashes: [String], session id: String) async throws {
        try BlobSessionID.check(id)
        guard !hashes.isEmpty else { return }
        for hash in hashes where !AssetChunkRef.isValidHash(hash) { throw UbiquityError(.invalidArgument, "\(hash) is not a chunk hash") }
        let name = "sent-" + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
        try await objects.put(Self.sessionKey(id, name), body: ByteBuffer(string: hashes.map { $0 + "\n" }.joined()))
    }

    /// The chunks the session sent; see ``BlobStore/sentChunks(session:)``.
    package func sentChunks(session id: String) async throws -> Set<String> {
        try BlobSessionID.check(id)
        var hashes: Set<String> = []
        for object in try await objects.list(prefix: Self.sessionKey(id, "sent-")) {
            guard let body = try await objects.get(object.key) else { continue }
            hashes.formUnion(String(buffer: body).split(separator: "\n").map(String.init).filter(AssetChunkRef.isValidHash))
        }
        return hashes
    }
}
