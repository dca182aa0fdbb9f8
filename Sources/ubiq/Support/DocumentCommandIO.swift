// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// Input and output shared by the document commands (`versions`, `resolve`, `exclude`,
/// `include`, `status`).
enum DocumentCommandIO {
    /// Runs a command body; see ``CLI/run(_:_:)``.
    static func run(_ name: String, _ body: () throws -> Void) throws {
        try CLI.run(name, body)
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
