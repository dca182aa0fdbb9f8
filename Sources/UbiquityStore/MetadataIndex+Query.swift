import Foundation
import GRDB
import UbiquityCore

/// Where ``QueryPredicate`` attributes live in the metadata index's `items` table.
package struct MetadataIndexSchema: PredicateSQLSchema {
    /// The schema of the `items` table.
    package init() {}

    /// The SQL expression of `attribute` (every attribute has one).
    package func column(for attribute: MetadataAttribute) -> String? {
        switch attribute {
        case .fsName, .displayName: "items.name"
        case .path: "items.path"
        case .url: "ubq_file_url(items.path, items.is_directory)"
        case .fsSize: "items.size"
        case .fsCreationDate: "items.creation_date"
        case .fsContentChangeDate: "items.content_change_date"
        case .contentType, .contentTypeTree: "items.content_type"
        case .isDirectory: "items.is_directory"
        case .isUbiquitous: "1"
        case .isUploaded: "items.is_uploaded"
        case .isUploading: "items.is_uploading"
        case .percentUploaded: "items.percent_uploaded"
        case .downloadingStatus: "items.downloading_status"
        case .isDownloading: "items.is_downloading"
        case .percentDownloaded: "items.percent_downloaded"
        case .isDownloaded:
            "(items.downloading_status <> '\(UbiquitousDownloadingStatus.notDownloaded.rawValue)')"
        case .hasUnresolvedConflicts: "items.has_unresolved_conflicts"
        case .isExcludedFromBackup: "items.is_excluded_from_backup"
        case .uploadingError: "items.uploading_error"
        case .downloadingError: "items.downloading_error"
        }
    }

    /// For names, a trigram search of `names_fts` (needles of 3 characters or more).
    package func substringPrefilter(for attribute: MetadataAttribute, foldedNeedle: String) -> SQLFragment? {
        guard attribute == .fsName || attribute == .displayName, foldedNeedle.unicodeScalars.count >= 3 else { return nil }
        let phrase = "\"" + foldedNeedle.replacingOccurrences(of: "\"", with: "\"\"") + "\""
        return SQLFragment(sql: "items.id IN (SELECT rowid FROM names_fts WHERE names_fts MATCH ?)", arguments: [.text(phrase)])
    }
}

extension MetadataIndex {
    /// The rows matching `predicate` whose path lies strictly under one of `scopes` (absolute
    /// folder paths; empty means everywhere), sorted by `sortedBy` then by path, at most `limit`.
    ///
    /// - Throws: ``UbiquityError`` (`unsupported` when the predicate cannot be translated to SQL).
    package func query(
        _ predicate: QueryPredicate, under scopes: [String], sortedBy: [IndexSort] = [], limit: Int? = nil
    ) throws -> [IndexRecord] {
        let schema = MetadataIndexSchema()
        let fragment = try predicate.sql(using: schema)
        var sql = "SELECT \(Self.recordColumns) FROM items WHERE (\(fragment.sql))"
        var arguments = fragment.arguments.map(\.databaseValue)
        if !scopes.isEmpty {
            var conditions: [String] = []
            for scope in scopes {
                let range = Self.subtreeRange(of: Self.normalize(scope))
                conditions.append("(items.path >= ? AND items.path < ?)")
                arguments += [range.lower.databaseValue, range.upper.databaseValue]
            }
            sql += " AND (" + conditions.joined(separator: " OR ") + ")"
        }
        var order: [String] = []
        for sort in sortedBy {
            let column = sort.attribute == .url ? "items.path" : (schema.column(for: sort.attribute) ?? "items.path")
            order.append(column + (sort.ascending ? " ASC" : " DESC"))
        }
        order.append("items.path ASC")
        sql += " ORDER BY " + order.joined(separator: ", ")
        if let limit {
            sql += " LIMIT ?"
            arguments.append(max(0, limit).databaseValue)
        }
        let statementArguments = StatementArguments(arguments)
        return try read("query") { db in
            try Row.fetchAll(db, sql: sql, arguments: statementArguments).map(Self.decode)
        }
    }
}
