// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import NIOCore
import UbiquityCore
import UbiquityWire

/// Upload sessions in use, and interrupted ones kept in memory.
struct SessionTable: Sendable {
    var busy: Set<String> = []
    var cached: [String: FileBlobWriter] = [:]
    /// Least recently suspended first.
    var order: [String] = []

    mutating func take(_ id: String) -> FileBlobWriter? {
        order.removeAll { $0 == id }
        return cached.removeValue(forKey: id)
    }

    mutating func keep(_ writer: FileBlobWriter, id: String, limit: Int) {
        cached[id] = writer
        order.append(id)
        while order.count > max(limit, 0) {
            cached[order.removeFirst()] = nil
        }
    }
}

extension FileBlobStore {
    /// A writer for a one-shot upload; see ``BlobStore/makeWriter()``.
    package func makeWriter() async throws -> any BlobWriter { FileBlobWriter.ephemeral(store: self) }

    /// The files of session `id`, after checking the id is 1–64 characters of `a-z 0-9 - _`.
    func sessionFiles(_ id: String) throws -> BlobSessionFiles {
        let allowed = id.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x5F }
        guard !id.isEmpty, id.utf8.count <= 64, allowed else {
            throw UbiquityError(.invalidArgument, "an upload session id is 1 to 64 characters of a-z, 0-9, - and _")
        }
        return BlobSessionFiles(id: id, folder: "\(uploadsRoot)/\(id)")
    }

    /// Runs `body` with the session's writer, exclusively; see
    /// ``BlobStore/withUploadSession(id:totalSize:_:)``.
    @discardableResult
    package func withUploadSession<T: Sendable>(id: String, totalSize: Int64, _ body: (any BlobWriter) async throws -> T) async throws -> T {
        let files = try sessionFiles(id)
        guard totalSize >= 0 else { throw UbiquityError(.invalidArgument, "an upload's size cannot be negative") }
        let cached = try sessions.withLock { table -> FileBlobWriter? in
            guard !table.busy.contains(id) else {
                throw UbiquityError(.conflict, "another request is uploading to this session; retry when it ends")
            }
            table.busy.insert(id)
            return table.take(id)
        }
        let writer: FileBlobWriter
        do {
            if let cached, cached.isUsable {
                writer = cached
            } else {
                writer = try await BlockingWork.run {
                    try FileBlobWriter.recover(store: self, files: files) ?? FileBlobWriter.create(store: self, files: files, totalSize: totalSize)
                }
            }
            guard writer.totalSize == totalSize else {
                throw UbiquityError(.conflict, "this upload session is for \(writer.totalSize ?? 0) bytes, not \(totalSize)")
            }
        } catch {
            _ = sessions.withLock { $0.busy.remove(id) }
            throw error
        }
        do {
            let result = try await body(writer)
            await release(id, writer: writer)
            return result
        } catch {
            await release(id, writer: writer)
            throw error
        }
    }

    /// Ends a request's use of a session: an unfinished, healthy writer saves its state and stays
    /// in memory for the next request.
    private func release(_ id: String, writer: FileBlobWriter) async {
        var keep = false
        if writer.isUsable {
            do {
                try await writer.suspend()
                keep = true
            } catch {
                logger.warning("upload session could not be saved", metadata: ["blob.session": "\(id)", "error": "\(error)"])
            }
        }
        let limit = configuration.cachedSessions
        sessions.withLock { table in
            table.busy.remove(id)
            if keep { table.keep(writer, id: id, limit: limit) }
        }
    }

    /// The session's bytes held, size and creation; see ``BlobStore/uploadSession(id:)``.
    package func uploadSession(id: String) async throws -> BlobUploadSessionInfo? {
        let files = try sessionFiles(id)
        if let writer = sessions.withLock({ $0.cached[id] }), let totalSize = writer.totalSize {
            return BlobUploadSessionInfo(received: writer.bytesWritten, totalSize: totalSize, created: writer.created)
        }
        return try await BlockingWork.run {
            guard let info = try FileBlobWriter.readInfo(files) else { return nil }
            let chunks = try FileBlobWriter.readLog(files, repair: false)
            let tail = try BlobFiles.status(files.tail(after: chunks.count))?.size ?? 0
            let received = chunks.reduce(Int64(0)) { $0 + Int64($1.size) } + tail
            return BlobUploadSessionInfo(received: received, totalSize: info.totalSize, created: info.created)
        }
    }

    /// Deletes the session; see ``BlobStore/discardUploadSession(id:)``.
    package func discardUploadSession(id: String) async throws {
        let files = try sessionFiles(id)
        let writer = sessions.withLock { $0.take(id) }
        await writer?.abort()
        try await BlockingWork.run { try BlobFiles.removeTree(files.folder) }
    }

    /// Remembers a chunk list for the session (creating it); see ``BlobStore/setPendingChunks(_:session:totalSize:)``.
    package func setPendingChunks(_ chunks: [AssetChunkRef], session id: String, totalSize: Int64) async throws {
        let files = try sessionFiles(id)
        try await BlockingWork.run {
            if try FileBlobWriter.readInfo(files) == nil {
                try BlobFiles.makeDirectories(files.folder)
                let info = Array("total \(totalSize)\ncreated \(Int64(Date().timeIntervalSince1970))\n".utf8)
                try info.withUnsafeBytes { try BlobFiles.writeAtomically(files.info, bytes: $0, temporaryDirectory: self.temporaryRoot) }
            } else {
                _ = try BlobFiles.touch(files.info)
            }
            let text = Array(AssetChunkRef.packed(chunks).utf8)
            try text.withUnsafeBytes { try BlobFiles.writeAtomically(files.pendingChunks, bytes: $0, temporaryDirectory: self.temporaryRoot) }
        }
    }

    /// Remembers the base of the session's pending list (a file beside it); see
    /// ``BlobStore/setPendingBase(_:session:)``.
    package func setPendingBase(_ base: String?, session id: String) async throws {
        let files = try sessionFiles(id)
        let path = files.folder + "/pending-base"
        try await BlockingWork.run {
            guard let base else {
                unlink(path)
                return
            }
            let text = Array(base.utf8)
            try text.withUnsafeBytes { try BlobFiles.writeAtomically(path, bytes: $0, temporaryDirectory: self.temporaryRoot) }
        }
    }

    /// The base remembered for the session; see ``BlobStore/pendingBase(session:)``.
    package func pendingBase(session id: String) async throws -> String? {
        let files = try sessionFiles(id)
        return try await BlockingWork.run {
            guard let buffer = try BlobFiles.read(files.folder + "/pending-base") else { return nil }
            return String(buffer: buffer)
        }
    }

    /// Appends `hashes` to the session's list of chunks it sent (`sent-chunks`, a line each; the
    /// session's folder is made when new); see ``BlobStore/noteSentChunks(_:session:)``.
    package func noteSentChunks(_ hashes: [String], session id: String) async throws {
        let files = try sessionFiles(id)
        guard !hashes.isEmpty else { return }
        for hash in hashes where !AssetChunkRef.isValidHash(hash) { throw UbiquityError(.invalidArgument, "\(hash) is not a chunk hash") }
        try await BlockingWork.run {
            try BlobFiles.makeDirectories(files.folder)
            let path = files.folder + "/sent-chunks"
            let fd = open(path, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0o600)
            guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
            defer { close(fd) }
            let line = Array(hashes.map { $0 + "\n" }.joined().utf8)  // one write: appends never interleave
            guard line.withUnsafeBytes({ Glibc.write(fd, $0.baseAddress, $0.count) }) == line.count else { throw UbiquityError.posix("write", path: path) }
        }
    }

    /// The chunks the session sent; see ``BlobStore/sentChunks(session:)``.
    package func sentChunks(session id: String) async throws -> Set<String> {
        let files = try sessionFiles(id)
        return try await BlockingWork.run {
            guard let buffer = try BlobFiles.read(files.folder + "/sent-chunks") else { return [] }
            return Set(String(buffer: buffer).split(separator: "\n").map(String.init).filter(AssetChunkRef.isValidHash))
        }
    }

    /// The chunk list remembered for the session; see ``BlobStore/pendingChunks(session:)``.
    package func pendingChunks(session id: String) async throws -> [AssetChunkRef]? {
        let files = try sessionFiles(id)
        return try await BlockingWork.run {
            guard let buffer = try BlobFiles.read(files.pendingChunks) else { return nil }
            return try AssetChunkRef.unpack(String(buffer: buffer), path: "pending-chunks")
        }
    }
}
