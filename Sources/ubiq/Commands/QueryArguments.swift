// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityStore

/// Turns `ubiq query`'s command-line strings into predicate arguments and sort keys.
enum QueryArguments {
    /// Converts `arguments` by the specifiers of `format` in order (as the predicate lexer reads
    /// them): `%d %i %ld %lld %u` → integer, `%f %lf` → number, `%@` and `%K` → string.
    static func convert(_ arguments: [String], for format: String) throws -> [any Sendable] {
        let kinds = try QueryPredicate.formatSpecifiers(in: format)
        guard kinds.count == arguments.count else {
            throw UbiquityError(.invalidArgument,
                                "the predicate has \(kinds.count) substitution\(kinds.count == 1 ? "" : "s") (%@ %K %d %f) but \(arguments.count) argument\(arguments.count == 1 ? " was" : "s were") given")
        }
        return try zip(kinds, arguments).enumerated().map { position, pair -> any Sendable in
            let (kind, argument) = pair
            switch kind {
            case "@", "K":
                return argument
            case "f", "lf":
                guard let value = Double(argument) else {
                    throw UbiquityError(.invalidArgument, "argument \(position + 1) '\(argument)': expected a number for %\(kind)")
                }
                return value
            default:
                guard let value = Int(argument) else {
                    throw UbiquityError(.invalidArgument, "argument \(position + 1) '\(argument)': expected an integer for %\(kind)")
                }
                return value
            }
        }
    }

    /// Parses `KEY` or `KEY:desc` / `KEY:asc`.
    static func sortDescriptor(_ text: String) throws -> MetadataSortDescriptor {
        var key = text
        var ascending = true
        if let colon = text.lastIndex(of: ":") {
            let direction = text[text.index(after: colon)...].lowercased()
            guard direction == "desc" || direction == "asc" else {
                throw UbiquityError(.invalidArgument, "--sort '\(text)': expected KEY, KEY:asc or KEY:desc")
            }
            ascending = direction == "asc"
            key = String(text[..<colon])
        }
        guard MetadataAttribute(name: key) != nil else {
            throw UbiquityError(.invalidArgument, "--sort '\(text)': unknown attribute '\(key)'")
        }
        return MetadataSortDescriptor(key: key, ascending: ascending)
    }

    /// The index's sort key for a descriptor.
    static func indexSort(_ descriptor: MetadataSortDescriptor) -> IndexSort? {
        MetadataAttribute(name: descriptor.key).map { IndexSort(attribute: $0, ascending: descriptor.ascending) }
    }
}

/// The JSON object `ubiq query --json` prints for an item.
enum ItemJSON {
    /// One line of JSON with the item's attributes.
    static func object(_ record: IndexRecord) -> String {
        let u = record.ubiquitous
        return CLI.jsonObject([
            ("path", record.path), ("name", record.name), ("size", Int(record.size)),
            ("isDirectory", record.isDirectory), ("contentType", record.contentType),
            ("creationDate", record.creationDate.map(timestamp)), ("contentChangeDate", timestamp(record.contentChangeDate)),
            ("isUploaded", u.isUploaded), ("isUploading", u.isUploading), ("percentUploaded", u.percentUploaded),
            ("downloadingStatus", u.downloadingStatus.rawValue), ("isDownloading", u.isDownloading),
            ("percentDownloaded", u.percentDownloaded), ("hasUnresolvedConflicts", u.hasUnresolvedConflicts),
            ("isExcludedFromBackup", u.isExcludedFromBackup),
            ("uploadingError", u.uploadingError), ("downloadingError", u.downloadingError),
        ])
    }

    private static func timestamp(_ date: Date) -> String {
        date.formatted(timestampStyle)
    }

    /// ISO 8601 with fractional seconds (made once).
    private static let timestampStyle = Date.ISO8601FormatStyle().year().month().day().time(includingFractionalSeconds: true)
        .timeZone(separator: .omitted)
}
