// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

extension Doctor {
    /// What a walk of the sync folder found: its folders (each needs an inotify watch) and the
    /// names sync cannot carry.
    package struct FolderWalk: Sendable, Hashable {
        /// The folders, the root included (symbolic links not followed).
        package var directories: Int
        /// Paths relative to the root whose last component is not valid UTF-8, each bad byte
        /// written `\xNN`.
        package var invalidNames: [String]
    }

    /// Walks `root` with `readdir` (names as the kernel stores them), stopping after `limit` folders.
    package static func walk(_ root: String, limit: Int = 2_000_000) -> FolderWalk? {
        guard DirectoryEntries.read(root) != nil else { return nil }
        var result = FolderWalk(directories: 0, invalidNames: [])
        var folders = [""]
        while let relative = folders.popLast(), result.directories < limit {
            result.directories += 1
            guard let entries = DirectoryEntries.read(relative.isEmpty ? root : root + "/" + relative) else { continue }
            result.invalidNames += entries.invalid.map { relative.isEmpty ? $0 : relative + "/" + $0 }
            for name in entries.folders { folders.append(relative.isEmpty ? name : relative + "/" + name) }
        }
        result.invalidNames.sort()
        return result
    }

    /// The names sync cannot carry (not valid UTF-8), listed with the fix.
    package static func names(invalid: [String]) -> DoctorFinding {
        guard !invalid.isEmpty else { return DoctorFinding("names", .ok, "every name in the folder is valid UTF-8") }
        let shown = invalid.prefix(5).map { "'\($0)'" }.joined(separator: ", ") + (invalid.count > 5 ? ", …" : "")
        return DoctorFinding("names", .warning,
                             "\(invalid.count) item\(invalid.count == 1 ? "" : "s") not synced: the name is not valid UTF-8 (\(shown))",
                             fix: "rename them with UTF-8 names, e.g. `convmv -f latin1 -t utf8 --notest -r FOLDER` (apt-get install convmv)")
    }
}
