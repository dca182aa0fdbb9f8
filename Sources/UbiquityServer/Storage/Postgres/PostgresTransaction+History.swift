// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// The documents' history in PostgreSQL (`item_versions` and `trashed_items` of the
/// `v13-document-history` migration): a batch's versions and deleted items each go in one
/// statement (`unnest` of arrays).
extension PostgresTransaction: HistoryStoreTransaction {
    private static let versionColumns = "id, database, record_name, path, saved_at, saved_by, size, content_hash, asset_checksum, current"
    private static let trashColumns = "id, database, record_name, path, kind, deleted_at, deleted_by, size, asset_checksum"

    private static func version(_ row: PostgresRandomAccessRow, withFields: Bool) throws -> StoredItemVersion {
        StoredItemVersion(id: try row.value("id"), database: try row.value("database"), recordName: try row.value("record_name"),
                          path: try row.value("path"), savedAt: try row.value("saved_at"), savedBy: try row.value("saved_by"),
                          size: try row.value("size"), contentHash: try row.value("content_hash"), assetChecksum: try row.value("asset_checksum"),
                          fieldsJSON: withFields ? try row.value("fields") : "", current: try row.value("current"))
    }

    private static func trashed(_ row: PostgresRandomAccessRow, withFields: Bool) throws -> StoredTrashedItem {
        StoredTrashedItem(id: try row.value("id"), database: try row.value("database"), recordName: try row.value("record_name"),
                          path: try row.value("path"), kind: try row.value("kind"), deletedAt: try row.value("deleted_at"),
                          deletedBy: try row.value("deleted_by"), size: try row.value("size"), assetChecksum: try row.value("asset_checksum"),
                          fieldsJSON: withFields ? try row.value("fields") : "")
    }

    func addItemVersions(_ versions: [StoredItemVersion]) async throws {
        for (database, mine) in Dictionary(grouping: versions, by: \.database) {
            try await session.execute("UPDATE item_versions SET current = FALSE WHERE database = $1 AND record_name = ANY($2) AND current",
                                      [.int(database), .texts(mine.map(\.recordName))])
            // asset checksums ride as text with '' for none
            try await session.execute("""
                INSERT INTO item_versions (database, record_name, path, saved_at, saved_by, size, content_hash, asset_checksum, fields, current)
                SELECT $1, v.record_name, v.path, v.saved_at, v.saved_by, v.size, v.content_hash, NULLIF(v.asset_checksum, ''), v.fields, TRUE
                FROM unnest($2::text[], $3::text[], $4::bigint[], $5::text[], $6::bigint[], $7::text[], $8::text[], $9::text[])
                    AS v(record_name, path, saved_at, saved_by, size, content_hash, asset_checksum, fields)
                """, [.int(database), .texts(mine.map(\.recordName)), .texts(mine.map(\.path)), .ints(mine.map(\.savedAt)),
                      .texts(mine.map(\.savedBy)), .ints(mine.map(\.size)), .texts(mine.map(\.contentHash)),
                      .texts(mine.map { $0.assetChecksum ?? "" }), .texts(mine.map(\.fieldsJSON))])
        }
    }

    func itemVersions(database: Int64, recordName: String) async throws -> [StoredItemVersion] {
        try await session.rows("""
            SELECT \(Self.versionColumns), fields FROM item_versions WHERE database = $1 AND record_name = $2 ORDER BY saved_at DESC, id DESC
            """, [.int(database), .text(recordName)]).map { try Self.version($0, withFields: true) }
    }

    func itemVersionStamps(database: Int64, recordNames: [String]) async throws -> [StoredItemVersion] {
        guard !recordNames.isEmpty else { return [] }
        return try await session.rows("""
            SELECT \(Self.versionColumns) FROM item_versions WHERE database = $1 AND record_name = ANY($2)
            ORDER BY record_name, saved_at DESC, id DESC
            """, [.int(database), .texts(recordNames)]).map { try Self.version($0, withFields: false) }
    }

    func itemVersion(database: Int64, id: Int64) async throws -> StoredItemVersion? {
        try await session.row("SELECT \(Self.versionColumns), fields FROM item_versions WHERE database = $1 AND id = $2",
                              [.int(database), .int(id)]).map { try Self.version($0, withFields: true) }
    }

    func deleteItemVersions(ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await session.execute("DELETE FROM item_versions WHERE id = ANY($1)", [.ints(ids)])
    }

    func deleteItemVersions(database: Int64, recordNames: [String]) async throws {
        guard !recordNames.isEmpty else { return }
        try await session.execute("DELETE FROM item_versions WHERE database = $1 AND record_name = ANY($2)", [.int(database), .texts(recordNames)])
    }

    func oldestFormerVersions(database: Int64, limit: Int) async throws -> [StoredItemVersion] {
        try await session.rows("""
            SELECT \(Self.versionColumns) FROM item_versions WHERE database = $1 AND NOT current ORDER BY saved_at, id LIMIT $2
            """, [.int(database), .int(Int64(limit))]).map { try Self.version($0, withFields: false) }
    }

    func addTrashedItems(_ items: [StoredTrashedItem]) async throws {
        guard !items.isEmpty else { return }
        try await session.execute("""
            INSERT INTO trashed_items (database, record_name, path, kind, deleted_at, deleted_by, size, asset_checksum, fields)
            SELECT t.database, t.record_name, t.path, t.kind, t.deleted_at, t.deleted_by, t.size, NULLIF(t.asset_checksum, ''), t.fields
            FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::bigint[], $6::text[], $7::bigint[], $8::text[], $9::text[])
                AS t(database, record_name, path, kind, deleted_at, deleted_by, size, asset_checksum, fields)
            """, [.ints(items.map(\.database)), .texts(items.map(\.recordName)), .texts(items.map(\.path)), .texts(items.map(\.kind)),
                  .ints(items.map(\.deletedAt)), .texts(items.map(\.deletedBy)), .ints(items.map(\.size)),
                  .texts(items.map { $0.assetChecksum ?? "" }), .texts(items.map(\.fieldsJSON))])
    }

    func trashedItems(database: Int64) async throws -> [StoredTrashedItem] {
        try await session.rows("SELECT \(Self.trashColumns) FROM trashed_items WHERE database = $1 ORDER BY deleted_at DESC, id DESC",
                               [.int(database)]).map { try Self.trashed($0, withFields: false) }
    }

    func trashedItems(database: Int64, ids: [Int64]) async throws -> [StoredTrashedItem] {
        guard !ids.isEmpty else { return [] }
        return try await session.rows("""
            SELECT \(Self.trashColumns), fields FROM trashed_items WHERE database = $1 AND id = ANY($2) ORDER BY deleted_at DESC, id DESC
            """, [.int(database), .ints(ids)]).map { try Self.trashed($0, withFields: true) }
    }

    func deleteTrashedItems(ids: [Int64]) async throws {
        guard !ids.isEmpty else { return }
        try await session.execute("DELETE FROM trashed_items WHERE id = ANY($1)", [.ints(ids)])
    }

    func pruneTrash(deletedBefore cutoff: Int64) async throws -> Int {
        try await session.execute("""
            DELETE FROM item_versions v USING trashed_items t
            WHERE v.database = t.database AND v.record_name = t.record_name AND t.deleted_at < $1 AND NOT EXISTS (
                SELECT 1 FROM records r JOIN zones z ON z.id = r.zone WHERE z.database = t.database AND r.name = t.record_name AND NOT r.deleted)
            """, [.int(cutoff)])
        return try await session.rows("DELETE FROM trashed_items WHERE deleted_at < $1 RETURNING id", [.int(cutoff)]).count
    }

    func historyBytes(database: Int64) async throws -> Int64 {
        guard let row = try await session.row("""
            SELECT (SELECT COALESCE(SUM(size), 0) FROM item_versions WHERE database = $1 AND NOT current)::bigint
                 + (SELECT COALESCE(SUM(size), 0) FROM trashed_items WHERE database = $1)::bigint AS bytes
            """, [.int(database)]) else { return 0 }
        return try row.value("bytes")
    }
}
