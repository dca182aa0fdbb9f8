// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// Asset references, database usage and server secrets (the `v4-assets` tables), batched: a
/// few statements per `putRecords`, whatever the number of records.
extension PostgresTransaction {
    func databaseUsage(database: Int64) async throws -> StoredUsage {
        guard let row = try await session.row("SELECT record_bytes, asset_bytes FROM database_usage WHERE database = $1", [.int(database)]) else {
            return StoredUsage()
        }
        return StoredUsage(recordBytes: try row.value("record_bytes"), assetBytes: try row.value("asset_bytes"))
    }

    func referencedAssets(database: Int64, checksums: [String]) async throws -> Set<String> {
        guard !checksums.isEmpty else { return [] }
        return Set(try await session.rows("SELECT checksum FROM database_assets WHERE database = $1 AND checksum = ANY($2) AND refs > 0",
                                    [.int(database), .texts(Array(Set(checksums)))]).map { try $0.value("checksum", as: String.self) })
    }

    func referencedAssetChecksums() async throws -> Set<String> {
        // the documents' history keeps its versions' and deleted items' content (v13-document-history)
        Set(try await session.rows("""
            SELECT checksum FROM database_assets WHERE refs > 0
            UNION SELECT asset_checksum FROM item_versions WHERE asset_checksum IS NOT NULL
            UNION SELECT asset_checksum FROM trashed_items WHERE asset_checksum IS NOT NULL
            """).map { try $0.value("checksum", as: String.self) })
    }

    func serverSecret(name: String, candidate: String, createdAt: Int64) async throws -> String {
        try await session.execute("INSERT INTO server_secrets (name, value, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                            [.text(name), .text(candidate), .int(createdAt)])
        guard let row = try await session.row("SELECT value FROM server_secrets WHERE name = $1", [.text(name)]) else {
            throw UbiquityError(.io, "the server secret \(name) vanished after its insert")
        }
        return try row.value("value")
    }

    /// The stored state of the named rows before they are overwritten, by name: id, JSON bytes
    /// (0 for tombstones) and asset references. Two statements.
    func previousAssetStates(zone: Int64, names: [String]) async throws -> [String: (id: Int64, bytes: Int64, assets: [String: Int64])] {
        guard !names.isEmpty else { return [:] }
        var states: [String: (id: Int64, bytes: Int64, assets: [String: Int64])] = [:]
        var namesByID: [Int64: String] = [:]
        for row in try await session.rows("""
            SELECT id, name, CASE WHEN deleted THEN 0 ELSE octet_length(fields) END::BIGINT AS bytes FROM records WHERE zone = $1 AND name = ANY($2)
            """, [.int(zone), .texts(names)]) {
            let id: Int64 = try row.value("id")
            let name: String = try row.value("name")
            states[name] = (id, try row.value("bytes"), [:])
            namesByID[id] = name
        }
        guard !namesByID.isEmpty else { return states }
        for row in try await session.rows("SELECT record, checksum, size FROM record_assets WHERE record = ANY($1)", [.ints(Array(namesByID.keys))]) {
            guard let name = namesByID[try row.value("record")] else { continue }
            states[name]?.assets[try row.value("checksum")] = try row.value("size")
        }
        return states
    }

    /// Rows per multi-row `INSERT` of asset references (3 parameters each).
    private static let assetRowsPerStatement = 1000

    /// Replaces the asset rows of the given records: one `DELETE`, multi-row `INSERT`s.
    func replaceRecordAssets(_ changes: [(id: Int64, old: [String: Int64], new: [String: Int64])]) async throws {
        let changed = changes.filter { $0.old != $0.new }
        let cleared = changed.filter { !$0.old.isEmpty }.map(\.id)
        if !cleared.isEmpty { try await session.execute("DELETE FROM record_assets WHERE record = ANY($1)", [.ints(cleared)]) }
        let rows = changed.flatMap { change in change.new.map { (change.id, $0.key, $0.value) } }
        var start = rows.startIndex
        while start < rows.endIndex {
            let end = min(start + Self.assetRowsPerStatement, rows.endIndex)
            var parameters: [PostgresParameter] = []
            var values: [String] = []
            for (id, checksum, size) in rows[start..<end] {
                let first = parameters.count + 1
                values.append("($\(first), $\(first + 1), $\(first + 2))")
                parameters += [.int(id), .text(checksum), .int(size)]
            }
            try await session.execute("INSERT INTO record_assets (record, checksum, size) VALUES \(values.joined(separator: ", "))", parameters)
            start = end
        }
    }

    /// Applies a batch's usage change to the rows of the database of `zone`: one multi-row upsert
    /// of the reference counts, one `DELETE` of those dropping to zero, one upsert of the usage row.
    func applyUsage(_ delta: AssetUsageDelta, zone: Int64) async throws {
        let references = delta.changedReferences
        var assetBytes: Int64 = 0
        if !references.isEmpty {
            let changes = Dictionary(uniqueKeysWithValues: references.map { ($0.checksum, $0.change) })
            let returned = try await session.rows("""
                INSERT INTO database_assets (database, checksum, size, refs)
                SELECT (SELECT database FROM zones WHERE id = $1), checksum, size, refs
                FROM unnest($2::TEXT[], $3::BIGINT[], $4::BIGINT[]) AS t(checksum, size, refs)
                ON CONFLICT (database, checksum) DO UPDATE SET refs = database_assets.refs + excluded.refs RETURNING checksum, size, refs
                """, [.int(zone), .texts(references.map(\.checksum)), .ints(references.map(\.size)), .ints(references.map(\.change))])
            var emptied: [String] = []
            for row in returned {
                let checksum: String = try row.value("checksum")
                let refs: Int64 = try row.value("refs")
                let change = changes[checksum] ?? 0
                assetBytes += AssetUsageDelta.assetBytesChange(size: try row.value("size"), old: refs - change, new: refs)
                if refs <= 0 { emptied.append(checksum) }
            }
            if !emptied.isEmpty {
                try await session.execute("DELETE FROM database_assets WHERE database = (SELECT database FROM zones WHERE id = $1) AND checksum = ANY($2)",
                                    [.int(zone), .texts(emptied)])
            }
        }
        guard delta.recordBytes != 0 || assetBytes != 0 else { return }
        try await session.execute("""
            INSERT INTO database_usage (database, record_bytes, asset_bytes) SELECT database, $2, $3 FROM zones WHERE id = $1
            ON CONFLICT (database) DO UPDATE SET record_bytes = database_usage.record_bytes + excluded.record_bytes,
                asset_bytes = database_usage.asset_bytes + excluded.asset_bytes
            """, [.int(zone), .int(delta.recordBytes), .int(assetBytes)])
    }

    /// The usage change of deleting every record of a zone, after removing its asset rows.
    func releaseZoneAssets(zone: Int64) async throws {
        var delta = AssetUsageDelta()
        if let bytes = try await session.row("SELECT COALESCE(SUM(octet_length(fields)), 0)::BIGINT AS bytes FROM records WHERE zone = $1 AND NOT deleted", [.int(zone)]) {
            delta.recordBytes = -(try bytes.value("bytes", as: Int64.self))
        }
        for row in try await session.rows("""
            SELECT record_assets.checksum, MAX(record_assets.size) AS size, COUNT(*)::BIGINT AS count FROM record_assets
            JOIN records ON records.id = record_assets.record WHERE records.zone = $1 GROUP BY record_assets.checksum
            """, [.int(zone)]) {
            delta.references[try row.value("checksum")] = (try row.value("size"), -(try row.value("count", as: Int64.self)))
        }
        try await session.execute("DELETE FROM record_assets WHERE record IN (SELECT id FROM records WHERE zone = $1)", [.int(zone)])
        try await applyUsage(delta, zone: zone)
    }
}
