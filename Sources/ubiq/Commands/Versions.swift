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

/// Input and output shared by the document commands (`versions`, `resolve`, `exclude`,
/// `include`, `status`).
enum DocumentCommandIO {
    /// Runs a command body: Ubiquity's and other errors go to stderr as `ubiq <name>: <error>` and
    /// exit with status 1; usage errors and explicit exit codes pass through.
    static func run(_ name: String, _ body: () throws -> Void) throws {
        do {
            try body()
        } catch let error as ValidationError {
            throw error
        } catch let error as ExitCode {
            throw error
        } catch {
            FileHandle.standardError.write(Data("ubiq \(name): \(error)\n".utf8))
            throw ExitCode.failure
        }
    }

    /// The absolute file URL of a command-line path; relative paths are taken from the current
    /// folder (the libraries refuse them).
    static func absoluteURL(_ argument: String) throws -> URL {
        guard !argument.isEmpty else { throw ValidationError("PATH must not be empty") }
        return URL(fileURLWithPath: try CLI.absolutePath(argument))
    }

    /// `absoluteURL`, refusing folders (file versions are kept for files only).
    static func fileURL(_ argument: String) throws -> URL {
        let url = try absoluteURL(argument)
        if FileStamp.of(url.path)?.isDirectory == true {
            throw UbiquityError(.unsupported, "'\(url.path)' is a folder; versions are kept for files only")
        }
        return url
    }

    /// Prints `object` as pretty JSON with sorted keys.
    static func printJSON(_ object: [String: Any]) throws {
        let data = try JSONSerialization.data(withJSONObject: object, options: [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes])
        print(String(decoding: data, as: UTF8.self))
    }

    /// A version as a JSON object.
    static func row(_ version: FileVersion) -> [String: Any] {
        [
            "id": version.persistentIdentifier,
            "name": version.localizedName ?? NSNull(),
            "conflict": version.isConflict,
            "resolved": version.isResolved,
            "modified": timestamp(version.modificationDate) ?? NSNull(),
            "device": version.localizedNameOfSavingComputer ?? NSNull(),
            "size": version.size,
            "url": version.url.path,
        ]
    }

    /// ISO 8601 with milliseconds, in UTC.
    static func timestamp(_ date: Date?) -> String? {
        guard let date else { return nil }
        let formatter = ISO8601DateFormatter()
        formatter.formatOptions = [.withInternetDateTime, .withFractionalSeconds]
        return formatter.string(from: date)
    }

    /// Left-aligned columns separated by two spaces.
    static func table(header: [String], rows: [[String]]) -> String {
        let all = [header] + rows
        let widths = header.indices.map { column in all.map { $0[column].count }.max() ?? 0 }
        return all.map { row in
            row.enumerated().map { column, cell in
                column == row.count - 1 ? cell : cell.padding(toLength: widths[column], withPad: " ", startingAt: 0)
            }.joined(separator: "  ")
        }.joined(separator: "\n")
    }
}
