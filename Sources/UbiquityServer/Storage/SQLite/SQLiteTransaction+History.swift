// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// The documents' history in SQLite (`item_versions` and `trashed_items` of the
/// `v13-document-history` migration).
extension SQLiteTransaction: HistoryStoreTransaction {
    private static let versionColumns = "id, database, record_name, path, saved_at, saved_by, size, content_hash, asset_checksum, current"
    private static let trashColumns = "id, database, record_name, path, kind, deleted_at, deleted_by, size, asset_checksum"

    private static func version(_ row: Row) -> StoredItemVersion {
        StoredItemVersion(id: row["id"], database: row["database"], recordName: row["record_name"], path: row["path"], savedAt: row["saved_at"],
                          savedBy: row["saved_by"], size: row["size"], contentHash: row["content_hash"], assetChecksum: row["asset_checksum"],
                          fieldsJSON: row["fields"] ?? "", current: row["current"])
    }

    private static func trashed(_ row: Row) -> StoredTrashedItem {
        StoredTrashedItem(id: row["id"], database: row["database"], recordName: row["record_name"], path: row["path"], kind: row["kind"],
                          deletedAt: row["deleted_at"], deletedBy: row["deleted_by"], size: row["size"], assetChecksum: row["asset_checksum"],
                          fieldsJSON: row["fields"] ?? "")
    }

    /// `?, ?, …` for `count` values.
    private static func placeholders(_ count: Int) -> String {
        Array(repeating: "?", count: count).joined(separator: ", ")
    }

    func addItemVersions(_ versions: [StoredItemVersion]) throws {
        let clear = try db.cachedStatement(sql: "UPDATE item_versions SET current = 0 WHERE database = ? AND record_name = ? AND current = 1")
        let insert = try db.cachedStatement(sql: """
            INSERT INTO item_versions (database, record_name, path, saved_at, saved_by, size, content_hash, asset_checksum, fields, current)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, 1)
            """)
        for version in versions {
            try clear.execute(arguments: [version.database, version.recordName])
            try insert.execute(arguments: [version.database, version.recordName, version.path, version.savedAt, version.savedBy, version.size,
                                           version.contentHash, version.assetChecksum, version.fieldsJSON])
        }
    }

    func itemVersions(database: Int64, recordName: String) throws -> [StoredItemVersion] {
        try Row.fetchAll(db, sql: """
            SELECT \(Self.versionColumns), fields FROM item_versions WHERE database = ? AND record_name = ? ORDER BY saved_at DESC, id DESC
            """, arguments: [database, recordName]).map(Self.version)
    }

    func itemVersionStamps(database: Int64, recordNames: [String]) throws -> [StoredItemVersion] {
        guard !recordNames.isEmpty else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT \(Self.versionColumns) FROM item_versions WHERE database = ? AND record_name IN (\(Self.placeholders(recordNames.count)))
            ORDER BY record_name, saved_at DESC, id DESC
            """, arguments: StatementArguments([database] + recordNames)).map(Self.version)
    }

    func itemVersion(database: Int64, id: Int64) throws -> StoredItemVersion? {
        try Row.fetchOne(db, sql: "SELECT \(Self.versionColumns), fields FROM item_versions WHERE database = ? AND id = ?",
                         arguments: [database, id]).map(Self.version)
    }

    func deleteItemVersions(ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try db.execute(sql: "DELETE FROM item_versions WHERE id IN (\(Self.placeholders(ids.count)))", arguments: StatementArguments(ids))
    }

    func deleteItemVersions(database: Int64, recordNames: [String]) throws {
        guard !recordNames.isEmpty else { return }
        try db.execute(sql: "DELETE FROM item_versions WHERE database = ? AND record_name IN (\(Self.placeholders(recordNames.count)))",
                       arguments: StatementArguments([database] + recordNames))
    }

    func oldestFormerVersions(database: Int64, limit: Int) throws -> [StoredItemVersion] {
        try Row.fetchAll(db, sql: """
            SELECT \(Self.versionColumns) FROM item_versions WHERE database = ? AND current = 0 ORDER BY saved_at, id LIMIT ?
            """, arguments: [database, limit]).map(Self.version)
    }

    func addTrashedItems(_ items: [StoredTrashedItem]) throws {
        let insert = try db.cachedStatement(sql: """
            INSERT INTO trashed_items (database, record_name, path, kind, deleted_at, deleted_by, size, asset_checksum, fields)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for item in items {
            try insert.execute(arguments: [item.database, item.recordName, item.path, item.kind, item.deletedAt, item.deletedBy, item.size,
                                           item.assetChecksum, item.fieldsJSON])
        }
    }

    func trashedItems(database: Int64) throws -> [StoredTrashedItem] {
        try Row.fetchAll(db, sql: "SELECT \(Self.trashColumns) FROM trashed_items WHERE database = ? ORDER BY deleted_at DESC, id DESC",
                         arguments: [database]).map(Self.trashed)
    }

    func trashedItems(database: Int64, ids: [Int64]) throws -> [StoredTrashedItem] {
        guard !ids.isEmpty else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT \(Self.trashColumns), fields FROM trashed_items WHERE database = ? AND id IN (\(Self.placeholders(ids.count))) ORDER BY deleted_at DESC, id DESC
            """, arguments: StatementArguments([database] + ids)).map(Self.trashed)
    }

    func deleteTrashedItems(ids: [Int64]) throws {
        guard !ids.isEmpty else { return }
        try db.execute(sql: "DELETE FROM trashed_items WHERE id IN (\(Self.placeholders(ids.count)))", arguments: StatementArguments(ids))
    }

    func pruneTrash(deletedBefore cutoff: Int64) throws -> Int {
        try db.execute(sql: """
            DELETE FROM item_versions WHERE id IN (
                SELECT v.id FROM trashed_items t JOIN item_versions v ON v.database = t.database AND v.record_name = t.record_name
                WHERE t.deleted_at < ? AND NOT EXISTS (
                    SELECT 1 FROM records r JOIN zones z ON z.id = r.zone WHERE z.database = t.database AND r.name = t.record_name AND r.deleted = 0))
            """, arguments: [cutoff])
        try db.execute(sql: "DELETE FROM trashed_items WHERE deleted_at < ?", arguments: [cutoff])
        return db.changesCount
    }

    func historyBytes(database: Int64) throws -> Int64 {
        try Int64.fetchOne(db, sql: """
            SELECT (SELECT COALESCE(SUM(size), 0) FROM item_versions WHERE database = ? AND current = 0)
                 + (SELECT COALESCE(SUM(size), 0) FROM trashed_items WHERE database = ?)
            """, arguments: [database, database]) ?? 0
    }
}
