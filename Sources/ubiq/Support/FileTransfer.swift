// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity

/// Byte copies of the folder commands (`cat`, `get`, `put`): streamed in 256 KiB pieces, never
/// loaded whole, with short writes and `EINTR` handled.
enum FileTransfer {
    static let chunkSize = 256 * 1024

    /// Copies everything readable from `source` to `destination`; returns the number of bytes.
    /// `progress` hears the bytes copied so far after each piece.
    @discardableResult
    static func copy(from source: Int32, sourcePath: String, to destination: Int32, destinationPath: String,
                     progress: ((Int64) -> Void)? = nil) throws -> Int64 {
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: chunkSize, alignment: 16)
        defer { buffer.deallocate() }
        var total: Int64 = 0
        while true {
            let n = Glibc.read(source, buffer.baseAddress, chunkSize)
            if n < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("read", path: sourcePath)
            }
            if n == 0 { return total }
            try SafeSave.writeAll(destination, UnsafeRawBufferPointer(rebasing: buffer[0..<n]), path: destinationPath)
            total += Int64(n)
            progress?(total)
        }
    }

    /// Opens a regular file (or anything readable that is not a folder) for reading; a folder or a
    /// missing item is an error that names `path`.
    static func openForReading(_ path: String) throws -> Int32 {
        guard let stamp = FileStamp.of(path) else { throw UbiquityError(.notFound, "'\(path)' does not exist") }
        if stamp.isDirectory { throw UbiquityError(.invalidArgument, "'\(path)' is a folder; a file was expected") }
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        return fd
    }

    /// Copies the file at `path` to stdout.
    static func copyToStandardOutput(_ path: String) throws -> Int64 {
        let fd = try openForReading(path)
        defer { close(fd) }
        return try copy(from: fd, sourcePath: path, to: STDOUT_FILENO, destinationPath: "stdout")
    }

    /// Safe-saves (``SafeSave``: a temporary in the same folder, fsync, rename) what `fill`
    /// writes to `destination`; returns the new file's stamp.
    static func save(to destination: String, _ fill: (Int32) throws -> Void) throws -> FileStamp {
        try SafeSave.write(to: destination, mode: .overwrite, fill)
    }

    /// Safe-saves the file at `source` (or stdin when nil) as `destination`; `display` shows
    /// the copy of a file (its name, bytes, rate, time left) on a terminal.
    static func save(from source: String?, to destination: String, display: ProgressDisplay? = nil) throws -> (stamp: FileStamp, bytes: Int64) {
        var bytes: Int64 = 0
        if let source {
            let fd = try openForReading(source)
            defer { close(fd) }
            let total = FileStamp.of(descriptor: fd)?.size ?? 0
            let name = CanonicalPath.lastComponent(of: source)
            let progress: ((Int64) -> Void)? = display.map { display in { display.update(name, done: $0, total: total) } }
            defer { display?.finish() }
            let stamp = try save(to: destination) { bytes = try copy(from: fd, sourcePath: source, to: $0, destinationPath: destination, progress: progress) }
            return (stamp, bytes)
        }
        let stamp = try save(to: destination) { bytes = try copy(from: STDIN_FILENO, sourcePath: "stdin", to: $0, destinationPath: destination) }
        return (stamp, bytes)
    }

    /// Fails unless the folder that will hold `path` exists, naming `argument` (e.g. DEST).
    static func requireParent(of path: String, argument: String) throws {
        let parent = CanonicalPath.parentPath(of: path)
        guard FileStamp.of(parent)?.isDirectory == true else {
            throw UbiquityError(.notFound, "\(argument)'s folder '\(parent)' does not exist; create it first (ubiq mkdir -p, or mkdir -p)")
        }
    }

    /// `destination`, or `destination/NAME` when it is an existing folder (as `cp` and `mv` do).
    static func target(_ destination: String, name: String?, argument: String) throws -> String {
        guard let stamp = FileStamp.of(destination), stamp.isDirectory || (stamp.isSymbolicLink && FileStamp.of(destination + "/.") != nil) else {
            return destination
        }
        guard let name, !name.isEmpty, name != "/" else {
            throw UbiquityError(.invalidArgument, "\(argument) '\(destination)' is a folder; give a file name to write stdin to")
        }
        return destination + "/" + name
    }
}
