// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Synchronization
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// The blocking file primitives of ``FileBlobStore``. Every function here blocks: call them from
/// `BlockingWork.run` or a writer's own queue, never from the cooperative pool.
enum BlobFiles {
    /// `mkdir -p`.
    static func makeDirectories(_ path: String) throws {
        if mkdir(path, 0o755) == 0 || errno == EEXIST { return }
        guard errno == ENOENT else { throw UbiquityError.posix("mkdir", path: path) }
        try makeDirectories((path as NSString).deletingLastPathComponent)
        if mkdir(path, 0o755) != 0 && errno != EEXIST { throw UbiquityError.posix("mkdir", path: path) }
    }

    /// Writes `bytes` to a fresh file in `temporaryDirectory`, then renames it to `path`
    /// (creating `path`'s folder when missing), so `path` is either absent or complete.
    /// - Parameters:
    ///   - sync: fsync the file before the rename and its folder after it.
    ///   - startWriteback: ask the kernel to start writing the data to disk now (so a later
    ///     `syncfs` has little left to do).
    static func writeAtomically(_ path: String, bytes: UnsafeRawBufferPointer, temporaryDirectory: String,
                                sync: Bool = false, startWriteback: Bool = false) throws {
        let temporary = temporaryPath(in: temporaryDirectory)
        let fd = open(temporary, O_WRONLY | O_CREAT | O_EXCL | O_CLOEXEC, 0o644)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: temporary) }
        do {
            try writeAll(fd, bytes, path: temporary)
            if startWriteback { LinuxCalls.startWriteback(fd) }
            if sync, fsync(fd) != 0 { throw UbiquityError.posix("fsync", path: temporary) }
            close(fd)
        } catch {
            close(fd)
            unlink(temporary)
            throw error
        }
        if rename(temporary, path) != 0 {
            guard errno == ENOENT else {
                let error = UbiquityError.posix("rename", path: path)
                unlink(temporary)
                throw error
            }
            do {
                try makeDirectories((path as NSString).deletingLastPathComponent)
            } catch {
                unlink(temporary)
                throw error
            }
            guard rename(temporary, path) == 0 else {
                let error = UbiquityError.posix("rename", path: path)
                unlink(temporary)
                throw error
            }
        }
        if sync { syncDirectory((path as NSString).deletingLastPathComponent) }
    }

    /// Writes all of `bytes` to `fd`.
    static func writeAll(_ fd: Int32, _ bytes: UnsafeRawBufferPointer, path: String) throws {
        var offset = 0
        while offset < bytes.count {
            let written = write(fd, bytes.baseAddress! + offset, bytes.count - offset)
            if written < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("write", path: path)
            }
            offset += written
        }
    }

    private static let counter = Atomic<UInt64>(0)

    /// A unique name in `directory`.
    static func temporaryPath(in directory: String) -> String {
        "\(directory)/\(getpid())-\(counter.wrappingAdd(1, ordering: .relaxed).newValue)-\(UInt32.random(in: 0...UInt32.max)).tmp"
    }

    /// fsyncs a folder, so renames in it are durable. Errors are ignored (some file systems
    /// refuse fsync on folders).
    static func syncDirectory(_ path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        if fd >= 0 {
            fsync(fd)
            close(fd)
        }
    }

    /// The whole file in a new buffer, or nil when it does not exist.
    static func read(_ path: String, limit: Int = Int.max) throws -> ByteBuffer? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw UbiquityError.posix("open", path: path)
        }
        defer { close(fd) }
        var info = stat()
        guard fstat(fd, &info) == 0 else { throw UbiquityError.posix("fstat", path: path) }
        let size = Int(info.st_size)
        guard size <= limit else { throw UbiquityError(.io, "\(path) is \(size) bytes, more than the \(limit) expected") }
        var buffer = ByteBufferAllocator().buffer(capacity: size)
        try buffer.writeWithUnsafeMutableBytes(minimumWritableBytes: size) { target in
            try readFully(fd, into: UnsafeMutableRawBufferPointer(rebasing: target[..<size]), path: path)
        }
        return buffer
    }

    /// Reads up to `target.count` bytes from the start of `fd`; returns how many were read.
    @discardableResult
    static func readFully(_ fd: Int32, into target: UnsafeMutableRawBufferPointer, path: String) throws -> Int {
        var offset = 0
        while offset < target.count {
            let got = pread(fd, target.baseAddress! + offset, target.count - offset, off_t(offset))
            if got < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("read", path: path)
            }
            if got == 0 { break }
            offset += got
        }
        return offset
    }

    /// Sets the file's modification time to now; false when it does not exist.
    static func touch(_ path: String) throws -> Bool {
        if utimensat(AT_FDCWD, path, nil, 0) == 0 { return true }
        if errno == ENOENT || errno == ENOTDIR { return false }
        throw UbiquityError.posix("utimensat", path: path)
    }

    /// Size and modification time, or nil when the file does not exist.
    static func status(_ path: String) throws -> (size: Int64, modified: Date)? {
        var info = stat()
        guard stat(path, &info) == 0 else {
            if errno == ENOENT || errno == ENOTDIR { return nil }
            throw UbiquityError.posix("stat", path: path)
        }
        let modified = Date(timeIntervalSince1970: TimeInterval(info.st_mtim.tv_sec) + TimeInterval(info.st_mtim.tv_nsec) / 1e9)
        return (Int64(info.st_size), modified)
    }

    /// Names in a folder (without `.` and `..`); empty when it does not exist.
    static func list(_ path: String) throws -> [String] {
        guard let dir = opendir(path) else {
            if errno == ENOENT || errno == ENOTDIR { return [] }
            throw UbiquityError.posix("opendir", path: path)
        }
        defer { closedir(dir) }
        var names: [String] = []
        while let entry = readdir(dir) {
            let name = withUnsafePointer(to: entry.pointee.d_name) { pointer in
                pointer.withMemoryRebound(to: CChar.self, capacity: Int(NAME_MAX) + 1) { String(cString: $0) }
            }
            if name != "." && name != ".." { names.append(name) }
        }
        return names
    }

    /// Files two folder levels below `root` (`root/ab/cd/name`), as (path, name).
    static func listSharded(_ root: String) throws -> [(path: String, name: String)] {
        var files: [(String, String)] = []
        for first in try list(root) {
            for second in try list("\(root)/\(first)") {
                let folder = "\(root)/\(first)/\(second)"
                for name in try list(folder) { files.append(("\(folder)/\(name)", name)) }
            }
        }
        return files
    }

    /// `rm -rf`, ignoring what is already gone.
    static func removeTree(_ path: String) throws {
        if unlink(path) == 0 || errno == ENOENT { return }
        guard errno == EISDIR || errno == EPERM else { throw UbiquityError.posix("unlink", path: path) }
        for name in try list(path) { try removeTree("\(path)/\(name)") }
        if rmdir(path) != 0 && errno != ENOENT { throw UbiquityError.posix("rmdir", path: path) }
    }
}

/// Linux calls Swift's Glibc module does not declare (`_GNU_SOURCE` ones), looked up at run
/// time; each degrades to a portable fallback when missing.
enum LinuxCalls {
    private typealias SyncFS = @convention(c) (Int32) -> Int32
    private typealias SyncFileRange = @convention(c) (Int32, Int64, Int64, UInt32) -> Int32

    private static let syncfsCall: SyncFS? = symbol("syncfs").map { unsafeBitCast($0, to: SyncFS.self) }
    private static let syncFileRangeCall: SyncFileRange? = symbol("sync_file_range").map { unsafeBitCast($0, to: SyncFileRange.self) }

    private static func symbol(_ name: String) -> UnsafeMutableRawPointer? {
        guard let handle = dlopen(nil, RTLD_NOW) else { return nil }
        return dlsym(handle, name)
    }

    /// Flushes the file system holding `path` (`syncfs`, or `sync` when unavailable).
    static func syncFileSystem(containing path: String) {
        let fd = open(path, O_RDONLY | O_DIRECTORY | O_CLOEXEC)
        guard fd >= 0 else {
            sync()
            return
        }
        defer { close(fd) }
        if let call = syncfsCall, call(fd) == 0 { return }
        sync()
    }

    /// Starts write-back of the file's dirty pages without waiting (`sync_file_range` with
    /// `SYNC_FILE_RANGE_WRITE`); nothing when unavailable.
    static func startWriteback(_ fd: Int32) {
        _ = syncFileRangeCall?(fd, 0, 0, 2)
    }
}
