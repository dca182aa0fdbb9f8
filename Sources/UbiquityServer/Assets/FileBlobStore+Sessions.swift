// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import NIOCore
import UbiquityCore
import UbiquityWire

extension FileBlobStore {
    /// A writer for a one-shot upload; see ``BlobStore/makeWriter()``.
    package func makeWriter() async throws -> any BlobWriter { FileBlobWriter.ephemeral(store: self) }

    /// The files of session `id`, after checking the id is 1–64 characters of `a-z 0-9 - _`.
    func sessionFiles(_ id: String) throws -> BlobSessionFiles {
        try BlobSessionID.check(id)
        return BlobSessionFiles(id: id, folder: "\(uploadsRoot)/\(id)")
    }

    /// Runs `body` with the session's writer, exclusively; see
    /// ``BlobStore/withUploadSession(id:totalSize:_:)``.
    @discardableResult
    package func withUploadSession<T: Sendable>(id: String, totalSize: Int64, _ body: (any BlobWriter) async throws -> T) async throws -> T {
        let files = try sessionFiles(id)
        return try await sessions.run(id: id, totalSize: totalSize, open: {
            try await BlockingWork.run {
                try FileBlobWriter.recover(store: self, files: files) ?? FileBlobWriter.create(store: self, files: files, totalSize: totalSize)
            }
        }, body)
    }

    /// The session's bytes held, size and creation; see ``BlobStore/uploadSession(id:)``.
    package func uploadSession(id: String) async throws -> BlobUploadSessionInfo? {
        let files = try sessionFiles(id)
        if let cached = await sessions.cachedInfo(id) { return cached }
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
                let info = Array(BlobSessionID.infoText(totalSize: totalSize, created: Date()).utf8)
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
