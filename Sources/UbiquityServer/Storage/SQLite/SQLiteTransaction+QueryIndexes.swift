// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityWire

/// Query indexes in SQLite (`query_indexes` and `record_keys` of the `v11-query-indexes`
/// migration). One writer at a time: no lock is needed for a write to see every index.
extension SQLiteTransaction: QueryIndexStoreTransaction {
    func queryIndexes(container: String, environment: CloudKitEnvironment) throws -> [StoredQueryIndex] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT id, container, environment, record_type, definition, ready FROM query_indexes WHERE container = ? AND environment = ? ORDER BY id
            """), arguments: [container, environment.rawValue]).compactMap(Self.queryIndex)
    }

    /// The indexes of the environment a zone belongs to (what `putRecords` keys).
    func queryIndexes(zone: Int64) throws -> [StoredQueryIndex] {
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT q.id, q.container, q.environment, q.record_type, q.definition, q.ready FROM zones z JOIN databases d ON d.id = z.database
            JOIN query_indexes q ON q.container = d.container AND q.environment = d.environment WHERE z.id = ? ORDER BY q.id
            """), arguments: [zone]).compactMap(Self.queryIndex)
    }

    static func queryIndex(_ row: Row) -> StoredQueryIndex? {
        guard let environment = CloudKitEnvironment(rawValue: row[2]),
              let definition = QueryIndexDefinition(recordType: row[3], text: row[4]) else { return nil }
        return StoredQueryIndex(id: row[0], container: row[1], environment: environment, definition: definition, ready: row[5])
    }

    func addQueryIndex(container: String, environment: CloudKitEnvironment, definition: QueryIndexDefinition) throws -> (index: StoredQueryIndex, added: Bool) {
        let arguments: StatementArguments = [container, environment.rawValue, definition.recordType, definition.text]
        if let row = try Row.fetchOne(db, sql: """
            SELECT id, container, environment, record_type, definition, ready FROM query_indexes
            WHERE container = ? AND environment = ? AND record_type = ? AND definition = ?
            """, arguments: arguments), let index = Self.queryIndex(row) {
            return (index, false)
        }
        try db.execute(sql: "INSERT INTO query_indexes (container, environment, record_type, definition, ready, created_at) VALUES (?, ?, ?, ?, 0, ?)",
                       arguments: arguments + [Int64(Date().timeIntervalSince1970 * 1000)])
        return (StoredQueryIndex(id: db.lastInsertedRowID, container: container, environment: environment, definition: definition, ready: false), true)
    }

    func buildQueryIndex(_ index: StoredQueryIndex, afterRecord: Int64, limit: Int) throws -> (last: Int64, count: Int)? {
        let rows = try Row.fetchAll(db, sql: """
            SELECT \(QueryIndexSQL.qualified(Self.recordColumns, by: "r")), z.name
            FROM records r JOIN zones z ON z.id = r.zone JOIN databases d ON d.id = z.database
            WHERE d.container = ? AND d.environment = ? AND r.type = ? AND r.deleted = 0 AND r.id > ? ORDER BY r.id LIMIT ?
            """, arguments: [index.container, index.environment.rawValue, index.definition.recordType, afterRecord, limit])
        let insert = try db.cachedStatement(sql: "INSERT INTO record_keys (query_index, zone, key, record) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING")
        var last: Int64?
        for row in rows {
            let id: Int64 = row[0]
            let stored = try record(row)
            try insert.execute(arguments: [index.id, stored.zone, Data(index.definition.key(for: stored, zoneName: row[16])), id])
            last = id
        }
        return last.map { ($0, rows.count) }
    }

    func setQueryIndexReady(id: Int64) throws {
        try db.execute(sql: "UPDATE query_indexes SET ready = 1 WHERE id = ?", arguments: [id])
    }

    func dropQueryIndex(id: Int64) throws {
        try db.execute(sql: "DELETE FROM record_keys WHERE query_index = ?", arguments: [id])
        try db.execute(sql: "DELETE FROM query_indexes WHERE id = ?", arguments: [id])
    }

    /// The statement of ``scanQueryIndex(id:zone:from:to:limit:)``: the record's columns first, at
    /// the positions `record(_:decodingFields:)` reads, then the key (made once: it is the text
    /// GRDB's statement cache is looked up by). The index's readiness is a constant subquery,
    /// evaluated once.
    private static let scanQueryIndexSQL = """
        SELECT \(QueryIndexSQL.qualified(recordColumns, by: "r")), k.key FROM record_keys k JOIN records r ON r.id = k.record
        WHERE k.query_index = ?1 AND k.zone = ?2 AND k.key >= ?3 AND k.key < ?4 AND EXISTS (SELECT 1 FROM query_indexes WHERE id = ?1 AND ready)
        ORDER BY k.key LIMIT ?5
        """

    func scanQueryIndex(id: Int64, zone: Int64, from lower: [UInt8], to upper: [UInt8], limit: Int) throws -> [QueryIndexHit] {
        // read from the cursor's rows as they come (no copy of each row first)
        try Array(Row.fetchCursor(db.cachedStatement(sql: Self.scanQueryIndexSQL), arguments: [id, zone, Data(lower), Data(upper), limit]).map { row in
            let key: Data = row[16]
            return QueryIndexHit(key: Array(key), stored: StoredRecordText(record: try record(row, decodingFields: false), fieldsText: row[7]))
        })
    }

    func queryIndexKeyCount(id: Int64) throws -> Int {
        try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM record_keys WHERE query_index = ?", arguments: [id]) ?? 0
    }
}
