// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Glibc
import UbiquityCore

/// Moving bytes in and out of the version store, fingerprinting them on the way.
enum VersionContent {
    /// Size and SHA-256 of some content.
    struct Summary: Sendable, Equatable {
        var size: Int64
        var sha256: String
    }

    /// Copies the file at `source` to the new path `destination` atomically (temporary file,
    /// fsync, rename); the result is readable by the owner only.
    static func store(copying source: String, to destination: String) throws -> Summary {
        let input = try openRegularFile(source)
        defer { close(input) }
        var summary = Summary(size: 0, sha256: "")
        try SafeSave.write(to: destination, mode: .overwrite, permissions: 0o600) { fd in
            summary = try pump(from: input, path: source, to: fd, destinationPath: destination)
        }
        return summary
    }

    /// Writes the file at `source` over (or as) `destination` with `SafeSave`, so the
    /// destination keeps its permissions and `user.` attributes. When `expected` is given, the
    /// bytes must match it or nothing is written (`io`).
    static func write(from source: String, over destination: String, expected: Summary?) throws {
        let input = try openRegularFile(source)
        defer { close(input) }
        try SafeSave.write(to: destination, mode: .overwrite) { fd in
            let summary = try pump(from: input, path: source, to: fd, destinationPath: destination)
            if let expected, summary != expected {
                throw UbiquityError(.io, "the stored content '\(source)' does not match its manifest (expected \(expected.size) bytes with SHA-256 \(expected.sha256), found \(summary.size) bytes with \(summary.sha256)); '\(destination)' was left unchanged")
            }
        }
    }

    /// Size and SHA-256 of the file at `path`.
    static func summary(of path: String) throws -> Summary {
        let input = try openRegularFile(path)
        defer { close(input) }
        return try pump(from: input, path: path, to: nil, destinationPath: nil)
    }

    /// Opens a regular file for reading: `notFound` if missing, `unsupported` for folders.
    static func openRegularFile(_ path: String) throws -> Int32 {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { throw UbiquityError.posix("open", path: path) }
        guard let stamp = FileStamp.of(descriptor: fd), !stamp.isDirectory else {
            close(fd)
            throw UbiquityError(.unsupported, "'\(path)' is a folder; versions of folders (file packages) are not supported yet")
        }
        return fd
    }

    /// Reads `input` to its end, hashing, and writes the bytes to `output` when given.
    private static func pump(from input: Int32, path: String, to output: Int32?, destinationPath: String?) throws -> Summary {
        var digest = SHA256()
        var size: Int64 = 0
        var buffer = [UInt8](repeating: 0, count: 1 << 16)
        while true {
            let count = buffer.withUnsafeMutableBytes { read(input, $0.baseAddress, $0.count) }
            if count < 0 {
                if errno == EINTR { continue }
                throw UbiquityError.posix("read", path: path)
            }
            if count == 0 { break }
            try buffer.withUnsafeBytes { raw in
                let chunk = UnsafeRawBufferPointer(rebasing: raw[0..<count])
                digest.update(bufferPointer: chunk)
                if let output { try SafeSave.writeAll(output, chunk, path: destinationPath ?? path) }
            }
            size += Int64(count)
        }
        return Summary(size: size, sha256: digest.finalize().hex)
    }
}
