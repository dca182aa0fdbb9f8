// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import NIOCore
import UbiquityCore

/// The ``BlobObjects`` of a ``PackBlobStore`` in a folder: an object is a file at its key's path
/// (`packs/<id>`, `manifests/<hex>`, `sessions/<id>/info`…), written in `tmp/` and renamed into
/// place complete. With ``durable`` (the default) every file is flushed to the disk before it is
/// renamed and its folder after, so an object that appeared survives a power cut, and objects
/// written one after the other become durable in that order (a pack before its index, an index
/// before a manifest naming it).
package final class FolderObjects: BlobObjects {
    /// The folder.
    package let root: String
    /// Flush each file and its folder when it appears (off only for tests and benchmarks).
    package let durable: Bool
    let temporaryRoot: String

    /// Objects in `folder` (created when needed, mode 0700: the content of every asset).
    /// - Throws: `UbiquityError` when the folder cannot be made.
    package init(folder: URL, durable: Bool = true) throws {
        root = folder.standardizedFileURL.path
        self.durable = durable
        temporaryRoot = root + "/tmp"
        try BlobFiles.makeDirectories(temporaryRoot)
        try PrivateFolder.ensure(root)
        try PrivateFolder.ensure(temporaryRoot)
    }

    /// The folder's path.
    package var description: String { root }

    /// The path of an object, after checking that the key stays inside the folder.
    func path(_ key: String) throws -> String {
        guard !key.isEmpty, !key.hasPrefix("/"), !key.hasPrefix("tmp/"),
              key.split(separator: "/", omittingEmptySubsequences: false).allSatisfy({ !$0.isEmpty && $0 != "." && $0 != ".." }) else {
            throw UbiquityError(.invalidArgument, "\(key) is not an object key")
        }
        return root + "/" + key
    }

    package func put(_ key: String, body: ByteBuffer) async throws {
        let path = try path(key)
        try await BlockingWork.run {
            try body.withUnsafeReadableBytes { try BlobFiles.writeAtomically(path, bytes: $0, temporaryDirectory: self.temporaryRoot, sync: self.durable) }
            if self.durable { BlobFiles.syncDirectory((path as NSString).deletingLastPathComponent) }
        }
    }

    package func get(_ key: String, range: Range<Int64>?) async throws -> ByteBuffer? {
        let path = try path(key)
        return try await BlockingWork.run {
            guard let range else { return try BlobFiles.read(path) }
            let fd = open(path, O_RDONLY | O_CLOEXEC)
            guard fd >= 0 else {
                if errno == ENOENT { return nil }
                throw UbiquityError.posix("open", path: path)
            }
            defer { close(fd) }
            var buffer = ByteBuffer()
            buffer.reserveCapacity(range.count)
            let got = try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: range.count) { target in
                var done = 0
                while done < range.count {
                    let count = pread(fd, target.baseAddress! + done, range.count - done, off_t(range.lowerBound) + off_t(done))
                    if count < 0, errno == EINTR { continue }
                    guard count >= 0 else { throw UbiquityError.posix("read", path: path) }
                    if count == 0 { break }
                    done += count
                }
                return done
            }
            guard got == range.count else {
                throw UbiquityError(.io, "\(path) ends before byte \(range.upperBound) (it has \(range.lowerBound + Int64(got)))")
            }
            return buffer
        }
    }

    package func head(_ key: String) async throws -> StoredObject? {
        let path = try path(key)
        return try await BlockingWork.run {
            try BlobFiles.status(path).map { StoredObject(key: key, size: $0.size, lastModified: $0.modified) }
        }
    }

    package func delete(_ key: String) async throws {
        let path = try path(key)
        try await BlockingWork.run {
            guard unlink(path) == 0 || errno == ENOENT else { throw UbiquityError.posix("unlink", path: path) }
            // a session's folder goes with its last object (a category folder stays: it is not empty, or rmdir fails harmlessly)
            if key.hasPrefix("sessions/") { rmdir((path as NSString).deletingLastPathComponent) }
        }
    }

    package func touch(_ key: String) async throws -> Bool {
        let path = try path(key)
        return try await BlockingWork.run { try BlobFiles.touch(path) }
    }

    package func list(prefix: String) async throws -> [StoredObject] {
        // walk from the deepest folder the prefix names
        let folder = prefix.contains("/") ? String(prefix[..<prefix.lastIndex(of: "/")!]) : ""
        return try await BlockingWork.run {
            var out: [StoredObject] = []
            func walk(_ relative: String) throws {
                let path = relative.isEmpty ? self.root : self.root + "/" + relative
                for name in try BlobFiles.list(path) {
                    let key = relative.isEmpty ? name : relative + "/" + name
                    guard key != "tmp" else { continue }
                    guard key.hasPrefix(prefix) || prefix.hasPrefix(key + "/") else { continue }
                    var status = stat()
                    guard lstat(path + "/" + name, &status) == 0 else { continue }  // deleted meanwhile
                    if (status.st_mode & S_IFMT) == S_IFDIR {
                        try walk(key)
                    } else if (status.st_mode & S_IFMT) == S_IFREG, key.hasPrefix(prefix) {
                        let modified = Date(timeIntervalSince1970: TimeInterval(status.st_mtim.tv_sec) + TimeInterval(status.st_mtim.tv_nsec) / 1e9)
                        out.append(StoredObject(key: key, size: Int64(status.st_size), lastModified: modified))
                    }
                }
            }
            try walk(folder)
            return out.sorted { $0.key < $1.key }
        }
    }

    package func makeAppender(_ key: String) async throws -> any ObjectAppender {
        try FolderAppender(objects: self, path: try path(key))
    }

    /// Deletes files left in `tmp/` by writes begun before `olderThan`.
    package func discardAbandonedWrites(olderThan: Date) async throws {
        try await BlockingWork.run {
            for name in try BlobFiles.list(self.temporaryRoot) {
                let path = self.temporaryRoot + "/" + name
                if let status = try BlobFiles.status(path), status.modified < olderThan { unlink(path) }
            }
        }
    }

    /// Checks that the folder is there and writable.
    package func checkReachable() async throws {
        guard access(temporaryRoot, W_OK) == 0 else { throw UbiquityError.posix("access", path: temporaryRoot) }
    }
}

/// A pack written to a file in `tmp/`, in writes of about 1 MiB, and renamed into place when
/// closed (flushed first when the folder is ``FolderObjects/durable``).
final class FolderAppender: ObjectAppender, @unchecked Sendable {
    // @unchecked because: one caller drives it and never overlaps its calls (ObjectAppender's
    // contract); the state is touched only from those calls, one after the other.
    private let objects: FolderObjects
    private let path: String
    private let temporary: String
    private var fd: Int32
    private var buffer = ByteBuffer()
    private static let writeSize = 1 << 20

    init(objects: FolderObjects, path: String) throws {
        self.objects = objects
        self.path = path
        temporary = BlobFiles.temporaryPath(in: objects.temporaryRoot)
        fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o600)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: temporary) }
        buffer.reserveCapacity(Self.writeSize)
    }

    deinit {
        if fd >= 0 {
            Glibc.close(fd)
            unlink(temporary)
        }
    }

    func append(_ bytes: ByteBuffer) async throws {
        var bytes = bytes
        buffer.writeBuffer(&bytes)
        if buffer.readableBytes >= Self.writeSize { try await flush() }
    }

    private func flush() async throws {
        guard buffer.readableBytes > 0 else { return }
        let (pending, fd, temporary) = (buffer, self.fd, self.temporary)
        buffer.clear()
        try await BlockingWork.run {
            try pending.withUnsafeReadableBytes { try BlobFiles.writeAll(fd, $0, path: temporary) }
        }
    }

    func close() async throws {
        try await flush()
        let (fd, temporary, path, durable) = (self.fd, self.temporary, self.path, objects.durable)
        self.fd = -1
        try await BlockingWork.run {
            defer { Glibc.close(fd) }
            if durable, fsync(fd) != 0 {
                unlink(temporary)
                throw UbiquityError.posix("fsync", path: temporary)
            }
            let folder = (path as NSString).deletingLastPathComponent
            try BlobFiles.makeDirectories(folder)
            guard rename(temporary, path) == 0 else {
                let error = UbiquityError.posix("rename", path: path)
                unlink(temporary)
                throw error
            }
            if durable { BlobFiles.syncDirectory(folder) }
        }
    }

    func abort() async {
        guard fd >= 0 else { return }
        Glibc.close(fd)
        unlink(temporary)
        fd = -1
    }
}
