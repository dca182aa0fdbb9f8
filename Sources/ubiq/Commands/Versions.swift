// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq versions PATH [--json]`: the current version, the stored versions and the conflicts of a file.
struct Versions: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions",
        abstract: "List a file's versions: the current one, stored ones and conflict versions.",
        discussion: """
            Stored versions live outside your folders (under $UBIQUITY_HOME/versions or \
            $XDG_DATA_HOME/ubiquity/versions). Use `ubiq resolve` to settle conflicts.
            JSON output: {"path", "current", "versions": [...], "conflicts": <unresolved count>}, \
            each version with id, name, conflict, resolved, modified, device, size and url.

            Examples:
              ubiq versions notes.txt
              ubiq versions ~/Ubiquity/notes.txt --json
            """
    )

    @Argument(help: "The file (relative paths are taken from the current folder).")
    var path: String

    @Flag(help: "Print JSON (sorted keys) instead of a table.")
    var json = false

    func run() throws {
        try DocumentCommandIO.run("versions") {
            let url = try DocumentCommandIO.fileURL(path)
            guard let current = FileVersion.currentVersionOfItem(at: url) else {
                throw UbiquityError(.notFound, "no item at '\(url.path)'")
            }
            let others = FileVersion.otherVersionsOfItem(at: url) ?? []
            let unresolved = others.filter { $0.isConflict && !$0.isResolved }.count
            if json {
                try DocumentCommandIO.printJSON([
                    "path": url.path,
                    "current": DocumentCommandIO.row(current),
                    "versions": others.map(DocumentCommandIO.row),
                    "conflicts": unresolved,
                ])
                return
            }
            let rows = ([current] + others).map { version -> [String] in
                let kind = version.persistentIdentifier == "current" ? "current" : version.isConflict ? "conflict" : "version"
                let resolved = version.isConflict ? (version.isResolved ? "yes" : "no") : "-"
                return [version.persistentIdentifier, kind, resolved,
                        DocumentCommandIO.timestamp(version.modificationDate) ?? "-",
                        version.localizedNameOfSavingComputer ?? "-", String(version.size)]
            }
            print(DocumentCommandIO.table(header: ["ID", "KIND", "RESOLVED", "MODIFIED", "DEVICE", "SIZE"], rows: rows))
            if unresolved > 0 {
                print("\(unresolved) unresolved conflict\(unresolved == 1 ? "" : "s"); settle with `ubiq resolve \(path) --keep current|ID`")
            }
        }
    }
}
