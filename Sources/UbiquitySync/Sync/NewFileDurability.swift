// SPDX-License-Identifier: Apache-2.0
import Glibc

/// How the new-file writer makes a batch's temporaries durable before it renames them into
/// place (``SyncEngine/applyNewFiles(_:)``). Either way nothing is under a real name before its
/// bytes are on disk, and the journal is written after the renames.
///
/// Each fsync of a small file on ext4 waits for (or forces) a journal commit of its own; one
/// `syncfs(2)` after all the batch's temporaries are written commits them together, at half the
/// kernel time. But `syncfs` also writes whatever else is dirty on that file system, so it is
/// chosen only when little is dirty in the whole system (a big copy running beside sync would
/// make every batch wait for it).
enum NewFileDurability: Equatable, Sendable {
    /// Each temporary fsynced as it is written.
    case eachFile
    /// The temporaries written without fsync, then their file system flushed once (`syncfs`);
    /// each fsynced after all are written if that fails.
    case fileSystem

    /// Fewer files than this are fsynced one by one (one flush is not cheaper then).
    static let minimumFiles = 16

    /// More dirty bytes than this in the system (written by anyone, not yet on disk) and the
    /// batch is fsynced file by file rather than waiting for all of them.
    static let dirtyLimit: Int64 = 64 << 20

    /// The way for a batch of `files` new files when `dirtyBytes` are dirty or under
    /// write-back in the whole system (nil: unknown).
    static func plan(files: Int, dirtyBytes: Int64?) -> NewFileDurability {
        guard files >= minimumFiles, let dirtyBytes, dirtyBytes <= dirtyLimit else { return .eachFile }
        return .fileSystem
    }

    /// The system's dirty and write-back bytes (`Dirty:` + `Writeback:` of `/proc/meminfo`), nil
    /// when it cannot be read.
    static func dirtyBytes(meminfo path: String = "/proc/meminfo") -> Int64? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        var buffer = [UInt8](repeating: 0, count: 8192)
        var count = 0
        while count < buffer.count {
            let n = buffer.withUnsafeMutableBytes { read(fd, $0.baseAddress! + count, $0.count - count) }
            if n < 0 && errno == EINTR { continue }
            if n <= 0 { break }
            count += n
        }
        return dirtyBytes(meminfo: buffer[..<count])
    }

    /// ``dirtyBytes(meminfo:)`` of the text of a `/proc/meminfo`.
    static func dirtyBytes(meminfo text: some Collection<UInt8>) -> Int64? {
        var total: Int64 = 0
        var found = 0
        for line in text.split(separator: UInt8(ascii: "\n")) {
            let key: Substring
            let string = String(decoding: line, as: UTF8.self)
            guard let colon = string.firstIndex(of: ":") else { continue }
            key = string[..<colon]
            guard key == "Dirty" || key == "Writeback" else { continue }
            let fields = string[string.index(after: colon)...].split(separator: " ")
            guard let value = fields.first.flatMap({ Int64($0) }) else { return nil }
            let unit = fields.dropFirst().first ?? ""
            guard unit == "kB" || unit.isEmpty else { return nil }
            total += unit == "kB" ? value * 1024 : value
            found += 1
        }
        return found == 2 ? total : nil
    }
}
