// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// Asset references, database usage and server secrets (the `v4-assets` tables).
extension SQLiteTransaction {
    func databaseUsage(database: Int64) throws -> StoredUsage {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT record_bytes, asset_bytes FROM database_usage WHERE database = ?"),
                                         arguments: [database]) else { return StoredUsage() }
        return StoredUsage(recordBytes: row[0], assetBytes: row[1])
    }

    func referencedAssets(database: Int64, checksums: [String]) throws -> Set<String> {
        let statement = try db.cachedStatement(sql: "SELECT 1 FROM database_assets WHERE database = ? AND checksum = ? AND refs > 0")
        var found = Set<String>()
        for checksum in Set(checksums) {
            if try Bool.fetchOne(statement, arguments: [database, checksum]) ?? false { found.insert(checksum) }
        }
        return found
    }

    func referencedAssetChecksums() throws -> Set<String> {
        // the documents' history keeps its versions' and deleted items' content (v13-document-history)
        Set(try String.fetchAll(db, sql: """
            SELECT checksum FROM database_assets WHERE refs > 0
            UNION SELECT asset_checksum FROM item_versions WHERE asset_checksum IS NOT NULL
            UNION SELECT asset_checksum FROM trashed_items WHERE asset_checksum IS NOT NULL
            """))
    }

    func serverSecret(name: String, candidate: String, createdAt: Int64) throws -> String {
        try db.execute(sql: "INSERT INTO server_secrets (name, value, created_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       arguments: [name, candidate, createdAt])
        guard let value = try String.fetchOne(db, sql: "SELECT value FROM server_secrets WHERE name = ?", arguments: [name]) else {
            throw UbiquityError(.io, "the server secret \(name) vanished after its insert")
        }
        return value
    }

    /// The stored state of a record row before it is overwritten: its id, JSON bytes (0 for a
    /// tombstone) and asset references.
    func previousAssetState(zone: Int64, name: String) throws -> (id: Int64, bytes: Int64, assets: [String: Int64])? {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: "SELECT id, deleted, length(CAST(fields AS BLOB)) FROM records WHERE zone = ? AND name = ?"),
                                         arguments: [zone, name]) else { return nil }
        let id: Int64 = row[0]
        let deleted: Bool = row[1]
        var assets: [String: Int64] = [:]
        for reference in try Row.fetchAll(db.cachedStatement(sql: "SELECT checksum, size FROM record_assets WHERE record = ?"), arguments: [id]) {
            assets[reference[0]] = reference[1]
        }
        let bytes: Int64 = deleted ? 0 : row[2]
        return (id, bytes, assets)
    }

    /// Replaces the asset rows of record `id`.
    func replaceRecordAssets(id: Int64, old: [String: Int64], new: [String: Int64]) throws {
        guard old != new else { return }
        if !old.isEmpty { try db.cachedStatement(sql: "DELETE FROM record_assets WHERE record = ?").execute(arguments: [id]) }
        let insert = try db.cachedStatement(sql: "INSERT INTO record_assets (record, checksum, size) VALUES (?, ?, ?)")
        for (checksum, size) in new { try insert.execute(arguments: [id, checksum, size]) }
    }

    /// Applies a batch's usage change to the database's rows.
    func applyUsage(_ delta: AssetUsageDelta, database: Int64) throws {
        var assetBytes: Int64 = 0
        let upsert = try db.cachedStatement(sql: """
            INSERT INTO database_assets (database, checksum, size, refs) VALUES (?, ?, ?, ?)
            ON CONFLICT (database, checksum) DO UPDATE SET refs = refs + excluded.refs RETURNING refs, size
            """)
        let remove = try db.cachedStatement(sql: "DELETE FROM database_assets WHERE database = ? AND checksum = ?")
        for reference in delta.changedReferences {
            guard let row = try Row.fetchOne(upsert, arguments: [database, reference.checksum, reference.size, reference.change]) else { continue }
            let refs: Int64 = row[0]
            let size: Int64 = row[1]
            assetBytes += AssetUsageDelta.assetBytesChange(size: size, old: refs - reference.change, new: refs)
            if refs <= 0 { try remove.execute(arguments: [database, reference.checksum]) }
        }
        guard delta.recordBytes != 0 || assetBytes != 0 else { return }
        try db.cachedStatement(sql: """
            INSERT INTO database_usage (database, record_bytes, asset_bytes) VALUES (?, ?, ?)
            ON CONFLICT (database) DO UPDATE SET record_bytes = record_bytes + excluded.record_bytes, asset_bytes = asset_bytes + excluded.asset_bytes
            """).execute(arguments: [database, delta.recordBytes, assetBytes])
    }

    /// The usage change of deleting every record of a zone, after removing its asset rows.
    func releaseZoneAssets(zone: Int64) throws {
        guard let database = try Int64.fetchOne(db, sql: "SELECT database FROM zones WHERE id = ?", arguments: [zone]) else { return }
        var delta = AssetUsageDelta()
        delta.recordBytes = -(try Int64.fetchOne(db, sql: "SELECT COALESCE(SUM(length(CAST(fields AS BLOB))), 0) FROM records WHERE zone = ? AND deleted = 0",
                                                 arguments: [zone]) ?? 0)
        for row in try Row.fetchAll(db, sql: """
            SELECT record_assets.checksum, MAX(record_assets.size), COUNT(*) FROM record_assets JOIN records ON records.id = record_assets.record
            WHERE records.zone = ? GROUP BY record_assets.checksum
            """, arguments: [zone]) {
            let count: Int64 = row[2]
            delta.references[row[0]] = (row[1], -count)
        }
        try db.execute(sql: "DELETE FROM record_assets WHERE record IN (SELECT id FROM records WHERE zone = ?)", arguments: [zone])
        try applyUsage(delta, database: database)
    }
}
