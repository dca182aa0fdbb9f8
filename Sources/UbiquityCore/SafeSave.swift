// SPDX-License-Identifier: Apache-2.0
import CUbiquityShims
import Foundation
import Glibc

/// Writes a file so that a crash at any moment leaves either the old or the new content, never a
/// mix: the bytes go to a temporary file in the same folder, which is fsynced, given the old
/// file's permissions and `user.` extended attributes (skip-backup, identity), renamed over the
/// destination, and the folder is fsynced.
public enum SafeSave {
    /// The prefix of Ubiquity's temporary files; watchers and sync ignore names starting with it.
    public static let temporaryPrefix = ".ubiq-tmp-"

    /// How the destination is treated.
    public enum Mode: Sendable {
        /// The destination must not exist yet (`renameat2(RENAME_NOREPLACE)`); fails with `alreadyExists`.
        case create
        /// Replace whatever is there (or create it).
        case overwrite
    }

    /// Writes `data` to `path` safely. Returns the new file's stamp.
    @discardableResult
    public static func write(_ data: Data, to path: String, mode: Mode = .overwrite, permissions: mode_t = 0o644) throws -> FileStamp {
        try write(to: path, mode: mode, permissions: permissions) { fd in
            try data.withUnsafeBytes { try writeAll(fd, $0, path: path) }
        }
    }

    /// Writes through `body`, which receives the temporary file's descriptor; see `write(_:to:mode:)`.
    @discardableResult
    public static func write(to path: String, mode: Mode = .overwrite, permissions: mode_t = 0o644,
                             _ body: (Int32) throws -> Void) throws -> FileStamp {
        let directory = CanonicalPath.parentPath(of: path)
        let name = CanonicalPath.lastComponent(of: path)
        let temporary = directory + "/" + temporaryPrefix + name.prefix(40) + "-" + randomSuffix()
        let old = FileStamp.of(path)
        if let old, old.isDirectory {
            throw UbiquityError(.invalidArgument, "'\(path)' is a directory; a file was expected")
        }
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, old.map { mode_t($0.mode) } ?? permissions)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: temporary) }
        var renamed = false
        defer {
            if !renamed { unlink(temporary) }
        }
        do {
            defer { close(fd) }
            try body(fd)
            if let old { fchmod(fd, mode_t(old.mode)) }
            try Durability.syncFile(fd, path: temporary)
        }
        if old != nil { try ExtendedAttributes.copyUserAttributes(from: path, to: temporary) }
        switch mode {
        case .create:
            guard ub_rename(temporary, path, 1, 0) == 0 else {
                if errno == EEXIST { throw UbiquityError(.alreadyExists, "'\(path)' already exists; it was not replaced") }
                throw UbiquityError.posix("rename", path: path)
            }
        case .overwrite:
            guard rename(temporary, path) == 0 else { throw UbiquityError.posix("rename", path: path) }
        }
        renamed = true
        try syncDirectory(directory)
        guard let stamp = FileStamp.of(path) else { throw UbiquityError(.io, "'\(path)' vanished right after it was saved") }
        return stamp
    }

    /// Writes every byte of `buffer`, retrying on short writes and `EINTR`.
    public static func writeAll(_ fd: Int32, _ buffer: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < buffer.count {
            let n = Glibc.write(fd, buffer.baseAddress! + offset, buffer.count - offset)
            if n < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("write", path: path)
            }
            offset += n
        }
    }

    /// fsyncs a directory so that a rename in it is durable.
    /// - Throws: the `open` or `fsync` error (the rename may not survive a power loss).
    public static func syncDirectory(_ path: String) throws {
        try Durability.syncFolder(path)
    }

    static func randomSuffix() -> String {
        String(UInt64.random(in: 0...UInt64.max), radix: 36)
    }
}
