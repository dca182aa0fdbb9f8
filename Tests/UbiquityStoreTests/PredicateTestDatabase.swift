import Foundation
import GRDB
import UbiquityCore
import UbiquityStore

typealias PredicateStoreRNG = SeededRandom

/// One row of the test `items` table, which is also the evaluator's attribute provider.
struct PredicateTestRow: MetadataAttributeProvider, Sendable {
    var id: Int64
    var path: String?
    var name: String?
    var size: Int64?
    var creationDate: Double?
    var contentChangeDate: Double?
    var contentType: String?
    var isDirectory: Bool?
    var isUploaded: Bool?
    var isUploading: Bool?
    var percentUploaded: Double?
    var downloadingStatus: String?
    var isDownloading: Bool?
    var percentDownloaded: Double?
    var hasUnresolvedConflicts: Bool?
    var isExcludedFromBackup: Bool?

    func metadataValue(for attribute: MetadataAttribute) -> MetadataValue? {
        func bool(_ b: Bool?) -> MetadataValue? { b.map(MetadataValue.bool) }
        switch attribute {
        case .fsName, .displayName: return name.map(MetadataValue.string)
        case .path: return path.map(MetadataValue.string)
        case .url:
            return path.map { .string(QueryPredicate.fileURLString(forPath: $0, isDirectory: isDirectory == true)) }
        case .fsSize: return size.map(MetadataValue.integer)
        case .fsCreationDate: return creationDate.map { .date(Date(timeIntervalSince1970: $0)) }
        case .fsContentChangeDate: return contentChangeDate.map { .date(Date(timeIntervalSince1970: $0)) }
        case .contentType: return contentType.map(MetadataValue.string)
        case .contentTypeTree: return contentType.map { .array(ContentType.tree(of: $0).map(MetadataValue.string)) }
        case .isDirectory: return bool(isDirectory)
        case .isUbiquitous: return .bool(true)
        case .isUploaded: return bool(isUploaded)
        case .isUploading: return bool(isUploading)
        case .percentUploaded: return percentUploaded.map(MetadataValue.double)
        case .downloadingStatus: return downloadingStatus.map(MetadataValue.string)
        case .isDownloading: return bool(isDownloading)
        case .percentDownloaded: return percentDownloaded.map(MetadataValue.double)
        case .isDownloaded:
            return downloadingStatus.map { .bool($0 != UbiquitousDownloadingStatus.notDownloaded.rawValue) }
        case .hasUnresolvedConflicts: return bool(hasUnresolvedConflicts)
        case .isExcludedFromBackup: return bool(isExcludedFromBackup)
        case .uploadingError, .downloadingError: return nil
        }
    }
}

/// The schema of the test `items` table (the layout the index uses).
struct PredicateTestSchema: PredicateSQLSchema {
    var prefilter = true

    /// The index's own mapping, except that the test table's downloading status may be NULL.
    func column(for attribute: MetadataAttribute) -> String? {
        if attribute == .isDownloaded {
            return "(CASE WHEN items.downloading_status IS NULL THEN NULL ELSE items.downloading_status <> '\(UbiquitousDownloadingStatus.notDownloaded.rawValue)' END)"
        }
        return MetadataIndexSchema().column(for: attribute)
    }

    func substringPrefilter(for attribute: MetadataAttribute, foldedNeedle: String) -> SQLFragment? {
        prefilter ? MetadataIndexSchema().substringPrefilter(for: attribute, foldedNeedle: foldedNeedle) : nil
    }
}

/// An in-memory database with the `items` table, `names_fts`, and the predicate functions.
struct PredicateTestDatabase {
    let queue: DatabaseQueue
    let rows: [PredicateTestRow]

    static let schemaSQL = """
        CREATE TABLE items (
            id INTEGER PRIMARY KEY, path TEXT, name TEXT, name_folded TEXT, size INTEGER,
            creation_date REAL, content_change_date REAL, content_type TEXT, is_directory INTEGER,
            is_uploaded INTEGER, is_uploading INTEGER, percent_uploaded REAL, downloading_status TEXT,
            is_downloading INTEGER, percent_downloaded REAL, has_unresolved_conflicts INTEGER,
            is_excluded_from_backup INTEGER, uploading_error TEXT, downloading_error TEXT);
        CREATE INDEX items_name ON items(name);
        CREATE INDEX items_content_type ON items(content_type);
        CREATE VIRTUAL TABLE names_fts USING fts5(name_folded, content='items', content_rowid='id', tokenize='trigram');
        """

    init(rows: [PredicateTestRow]) throws {
        var configuration = Configuration()
        configuration.prepareDatabase { db in PredicateSQLFunctions.register(in: db) }
        queue = try DatabaseQueue(configuration: configuration)
        self.rows = rows
        try queue.write { db in
            try db.execute(sql: Self.schemaSQL)
            for row in rows {
                func int(_ b: Bool?) -> Int64? { b.map { $0 ? 1 : 0 } }
                try db.execute(sql: """
                    INSERT INTO items VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, NULL, NULL)
                    """, arguments: [
                        row.id, row.path, row.name, row.name.map(PredicateStringMatch.fold), row.size,
                        row.creationDate, row.contentChangeDate, row.contentType, int(row.isDirectory),
                        int(row.isUploaded), int(row.isUploading), row.percentUploaded, row.downloadingStatus,
                        int(row.isDownloading), row.percentDownloaded, int(row.hasUnresolvedConflicts),
                        int(row.isExcludedFromBackup),
                    ])
            }
            try db.execute(sql: "INSERT INTO names_fts(names_fts) VALUES('rebuild')")
        }
    }

    /// The ids `predicate`'s SQL selects.
    func sqlIDs(_ predicate: QueryPredicate, schema: PredicateTestSchema = PredicateTestSchema(), now: Date) throws -> Set<Int64> {
        let fragment = try predicate.sql(using: schema, now: now)
        return try queue.read { db in
            try Int64.fetchSet(db, sql: "SELECT id FROM items WHERE \(fragment.sql)", arguments: fragment.statementArguments)
        }
    }

    /// The ids the evaluator accepts.
    func evaluatorIDs(_ predicate: QueryPredicate, now: Date) -> Set<Int64> {
        Set(rows.filter { predicate.evaluate(with: $0, now: now) }.map(\.id))
    }
}
