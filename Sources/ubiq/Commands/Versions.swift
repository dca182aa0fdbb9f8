// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCloudKit

/// `ubiq versions PATH [--json]`: the current version, the stored versions and the conflicts of
/// a file on this device, and the versions the server keeps of it.
struct Versions: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "versions",
        abstract: "List a file's versions: the current one, stored ones, conflict versions, and the server's history.",
        discussion: """
            Stored versions live outside your folders (under $UBIQUITY_HOME/versions or \
            $XDG_DATA_HOME/ubiquity/versions). Use `ubiq resolve` to settle conflicts.
            For a file in the synced folder, the versions the server keeps of it follow (every \
            upload, thinned as Nextcloud does); `ubiq restore PATH --version ID` puts one back \
            on every device. --local skips the server.
            JSON output: {"path", "current", "versions": [...], "conflicts": <unresolved count>, \
            "server": [...]}, each local version with id, name, conflict, resolved, modified, \
            device, size and url; each server version with id, savedAt, savedBy, size, \
            contentHash and current ("serverError" says why the server's are missing).

            Examples:
              ubiq versions notes.txt
              ubiq versions ~/Ubiquity/notes.txt --json
            """
    )

    @Argument(help: "The file (relative paths are taken from the current folder).")
    var path: String

    @Flag(help: "Print JSON (sorted keys) instead of a table.")
    var json = false

    @Flag(help: "Only this device's versions: do not ask the server.")
    var local = false

    @Option(help: "The synced folder (overrides $UBIQUITY_FOLDER; default ~/Ubiquity).")
    var folder: String?

    @OptionGroup var server: DocumentsServerOptions

    func run() async throws {
        var history: Result<[DocumentVersion], any Error>?
        if !local, let relative = try? syncedPath() {
            do {
                if let database = try server.optionalDatabase() {
                    history = .success(try await database.documentVersions(atPath: relative))
                }
            } catch {
                history = .failure(error)
            }
        }
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
                ].merging(Self.serverJSON(history)) { $1 })
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
            switch history {
            case .success(let versions) where !versions.isEmpty:
                print("\non the server (restore with `ubiq restore \(path) --version ID`):")
                print(DocumentCommandIO.table(header: ["ID", "SAVED", "BY", "SIZE", ""], rows: versions.map { version in
                    [String(version.id), DocumentCommandIO.timestamp(version.savedAt) ?? "-", version.savedBy, String(version.size),
                     version.isCurrent ? "current" : ""]
                }))
            case .failure(let error):
                FileHandle.standardError.write(Data("ubiq versions: the server's versions are not shown: \(error)\n".utf8))
            default:
                break
            }
        }
    }

    /// The file's path relative to the synced folder (nil when it is not inside it).
    func syncedPath() throws -> String? {
        let root = try FolderOptions.root(folder: folder)
        let file = try CLI.absolutePath(path)
        guard CanonicalPath.isSameOrDescendant(file, of: root), file != root else { return nil }
        return String(file.dropFirst(root.count + 1))
    }

    /// The server's part of the JSON answer.
    static func serverJSON(_ history: Result<[DocumentVersion], any Error>?) -> [String: Any] {
        switch history {
        case .success(let versions):
            return ["server": versions.map { version in
                ["id": version.id, "savedAt": DocumentCommandIO.timestamp(version.savedAt) ?? NSNull(), "savedBy": version.savedBy,
                 "size": version.size, "contentHash": version.contentHash, "current": version.isCurrent] as [String: Any]
            }]
        case .failure(let error):
            return ["serverError": "\(error)"]
        case nil:
            return [:]
        }
    }
}
