// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// A directory's entries as the kernel stores them (`readdir`), told apart by whether their
/// names are valid UTF-8.
///
/// Foundation's `contentsOfDirectory` repairs names that are not UTF-8 (each bad byte becomes
/// U+FFFD), so a file named with Latin-1 bytes comes back under a name that does not exist, and
/// sync would skip it without a word. Record names are strings; such a file cannot be synced,
/// so it is listed here; the scan returns it (``LocalScan/unsyncable``) and the engine reports it once.
struct DirectoryEntries {
    /// The names that are valid UTF-8, in directory order.
    var names: [String] = []
    /// The names that are not, with each bad byte written `\xNN` (for messages only).
    var invalid: [String] = []
    /// The valid names that are folders, as `readdir` says (`d_type`; `lstat` only when the file
    /// system does not say). Symbolic links to folders are not folders here.
    var folders: [String] = []

    /// The entries of the directory at `path` (`.` and `..` left out), or nil when it cannot be read.
    static func read(_ path: String) -> DirectoryEntries? {
        guard let directory = opendir(path) else { return nil }
        defer { closedir(directory) }
        var entries = DirectoryEntries()
        while let entry = readdir(directory) {
            withUnsafeBytes(of: &entry.pointee.d_name) { raw in
                let length = raw.firstIndex(of: 0) ?? raw.count
                let bytes = UnsafeRawBufferPointer(rebasing: raw[..<length])
                if length == 1 && bytes[0] == 0x2E || length == 2 && bytes[0] == 0x2E && bytes[1] == 0x2E { return }
                if let name = String(validating: bytes, as: UTF8.self) {
                    entries.names.append(name)
                    switch Int32(entry.pointee.d_type) {
                    case Int32(DT_DIR):
                        entries.folders.append(name)
                    case Int32(DT_UNKNOWN):
                        var status = stat()
                        if fstatat(dirfd(directory), name, &status, AT_SYMLINK_NOFOLLOW) == 0, status.st_mode & S_IFMT == S_IFDIR {
                            entries.folders.append(name)
                        }
                    default:
                        break
                    }
                } else {
                    entries.invalid.append(escaped(bytes))
                }
            }
        }
        return entries
    }

    /// `bytes` as text, with every byte that is not part of valid UTF-8 written `\xNN`.
    static func escaped(_ bytes: some Collection<UInt8>) -> String {
        var text = ""
        var rest = Array(bytes)[...]
        while !rest.isEmpty {
            // the longest valid prefix, then one bad byte
            var valid = rest.endIndex
            while valid > rest.startIndex, String(validating: rest[rest.startIndex..<valid], as: UTF8.self) == nil {
                valid -= 1
            }
            text += String(decoding: rest[rest.startIndex..<valid], as: UTF8.self)
            rest = rest[valid...]
            if let bad = rest.first {
                text += "\\x" + String(bad, radix: 16, uppercase: true).leftPadded(to: 2)
                rest = rest.dropFirst()
            }
        }
        return text
    }
}

private extension String {
    func leftPadded(to width: Int) -> String {
        count >= width ? self : String(repeating: "0", count: width - count) + self
    }
}
