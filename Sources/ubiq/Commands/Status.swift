// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquitySync

/// `ubiq status PATH [--json]`: what Ubiquity knows about an item.
struct Status: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Show an item's kind, size, modification time, skip-backup state and conflicts.",
        discussion: """
            JSON keys: path, exists, kind (file, folder, symlink or null), size, modified, \
            excluded (true or false), conflicts (unresolved conflict versions) and sync (uploaded, \
            uploading, in conflict or excluded for an item of a folder `ubiq daemon` syncs; null \
            otherwise). A missing item is reported with "exists": false, not as an error.

            Examples:
              ubiq status notes.txt
              ubiq status notes.txt --json
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    @Flag(help: "Print JSON (sorted keys).")
    var json = false

    func run() throws {
        try DocumentCommandIO.run("status") {
            let url = try DocumentCommandIO.absoluteURL(path)
            let own = FileStamp.of(url.path)
            // A symbolic link is reported as one, with its target; size, date and the skip-backup
            // state are the target's (exclude and include act on the target too).
            let target = own?.isSymbolicLink == true ? try? CanonicalPath.canonicalize(url.path, resolveLast: true) : nil
            let stamp = target.flatMap(FileStamp.of) ?? own
            let kind = own.map { $0.isSymbolicLink ? "symlink" : $0.isDirectory ? "folder" : "file" }
            var excluded = false
            if stamp != nil {
                do {
                    excluded = try url.ubiquityIsExcludedFromBackup
                } catch let error as UbiquityError where error.code == .unsupported || error.code == .notFound {
                    excluded = false  // no user attributes there (or a dangling symlink): nothing can be excluded
                }
            }
            let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0
            let modified = DocumentCommandIO.timestamp(stamp?.modificationDate)
            let sync = SyncJournal.status(ofItemAt: url.path, conflicts: conflicts)
            if json {
                try DocumentCommandIO.printJSON([
                    "path": url.path,
                    "exists": stamp != nil,
                    "kind": kind ?? NSNull(),
                    "target": target ?? NSNull(),
                    "size": stamp.map { $0.size as Any } ?? NSNull(),
                    "modified": modified ?? NSNull(),
                    "excluded": excluded,
                    "conflicts": conflicts,
                    "sync": sync?.rawValue ?? NSNull(),
                ])
                return
            }
            print("path:      \(url.path)")
            print("exists:    \(stamp != nil ? "yes" : "no")")
            guard let stamp else { return }
            print("kind:      \(kind ?? "-")\(target.map { " → " + $0 } ?? "")")
            print("size:      \(stamp.size) bytes")
            print("modified:  \(modified ?? "-")")
            print("excluded:  \(excluded ? "yes" : "no")")
            print("conflicts: \(conflicts)")
            if let sync { print("sync:      \(sync.rawValue)") }
        }
    }
}
