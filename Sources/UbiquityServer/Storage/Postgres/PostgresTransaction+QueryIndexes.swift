// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore
import UbiquityWire

/// Query indexes in PostgreSQL (`query_indexes` and `record_keys` of the `v11-query-indexes`
/// migration). A record write holds its environment's index lock shared from before it reads the
/// definitions; adding an index takes it exclusively (``QueryIndexStoreTransaction``).
extension PostgresTransaction: QueryIndexStoreTransaction {
    private static let indexColumns = "q.id, q.container, q.environment, q.record_type, q.definition, q.ready"

    /// The advisory lock key text of a container's environment's query indexes.
    private static func lockText(container: String, environment: String) -> String {
        "ubiquity-query-indexes/\(container)/\(environment)"
    }

    private static func queryIndex(_ row: PostgresRandomAccessRow) throws -> StoredQueryIndex? {
        guard let environment = CloudKitEnvironment(rawValue: try row.value("environment")),
              let definition = QueryIndexDefinition(recordType: try row.value("record_type"), text: try row.value("definition")) else { return nil }
        return StoredQueryIndex(id: try row.value("id"), container: try row.value("container"), environment: environment, definition: definition,
                                ready: try row.value("ready"))
    }

    func queryIndexes(container: String, environment: CloudKitEnvironment) async throws -> [StoredQueryIndex] {
        try await session.rows(QueryIndexes.self, [.text(container), .text(environment.rawValue)]).compactMap(Self.queryIndex)
    }

    /// The statement of ``queryIndexes(container:environment:)``.
    enum QueryIndexes: PostgresStatement {
        static let name = "query_indexes"
        static let sql = "SELECT \(PostgresTransaction.indexColumns) FROM query_indexes q WHERE q.container = $1 AND q.environment = $2 ORDER BY q.id"
    }

    /// The statement of ``scanQueryIndex(id:zone:from:to:limit:)`` (the index's readiness is an
    /// uncorrelated subquery: one evaluation).
    enum ScanQueryIndex: PostgresStatement {
        static let name = "scan_query_index"
        static let sql = """
            SELECT \(QueryIndexSQL.qualified(PostgresTransaction.recordColumns, by: "r")), k.key FROM record_keys k JOIN records r ON r.id = k.record
            WHERE k.query_index = $1 AND k.zone = $2 AND k.key >= $3 AND k.key < $4 AND EXISTS (SELECT 1 FROM query_indexes WHERE id = $1 AND ready)
            ORDER BY k.key LIMIT $5
            """
    }

    /// Writes the keys of `writes` (rows `ids` by name; `replaced`: those that had keys before)
    /// for every index of their environment, under the environment's index lock (shared).
    func putKeys(_ writes: [RecordWrite], ids: [String: Int64], replaced: [Int64], zoneName: String) async throws {
        guard let zone = writes.first?.record.zone else { return }
        try await session.execute("""
            SELECT pg_advisory_xact_lock_shared(hashtextextended('ubiquity-query-indexes/' || d.container || '/' || d.environment, 0))
            FROM zones z JOIN databases d ON d.id = z.database WHERE z.id = $1
            """, [.int(zone)])
        let indexes = try await session.rows("""
            SELECT \(Self.indexColumns) FROM zones z JOIN databases d ON d.id = z.database
            JOIN query_indexes q ON q.container = d.container AND q.environment = d.environment WHERE z.id = $1 ORDER BY q.id
            """, [.int(zone)]).compactMap(Self.queryIndex)
        guard !indexes.isEmpty else { return }
        if !replaced.isEmpty {
            try await session.execute("DELETE FROM record_keys WHERE record = ANY($1)", [.ints(replaced)])
        }
        let keys = QueryIndexDefinition.keys(for: writes, zoneName: zoneName, indexes: indexes)
        var start = keys.startIndex
        while start < keys.endIndex {
            let end = min(start + 1000, keys.endIndex)
            var parameters: [PostgresParameter] = []
            var rows: [String] = []
            for item in keys[start..<end] {
                guard let id = ids[writes[item.write].record.recordName] else { continue }
                let first = parameters.count + 1
                rows.append("($\(first), $\(first + 1), $\(first + 2), $\(first + 3))")
                parameters += [.int(item.index), .int(writes[item.write].record.zone), .bytes(item.key), .int(id)]
            }
            if !rows.isEmpty {
                try await session.execute("INSERT INTO record_keys (query_index, zone, key, record) VALUES \(rows.joined(separator: ", "))", parameters)
            }
            start = end
        }
    }

    func addQueryIndex(container: String, environment: CloudKitEnvironment, definition: QueryIndexDefinition) async throws -> (index: StoredQueryIndex, added: Bool) {
        try await session.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text(Self.lockText(container: container, environment: environment.rawValue))])
        let parameters: [PostgresParameter] = [.text(container), .text(environment.rawValue), .text(definition.recordType), .text(definition.text)]
        if let row = try await session.row("""
            SELECT \(Self.indexColumns) FROM query_indexes q WHERE q.container = $1 AND q.environment = $2 AND q.record_type = $3 AND q.definition = $4
            """, parameters), let index = try Self.queryIndex(row) {
            return (index, false)
        }
        guard let row = try await session.row("""
            INSERT INTO query_indexes (container, environment, record_type, definition, ready, created_at) VALUES ($1, $2, $3, $4, FALSE, $5) RETURNING id
            """, parameters + [.int(Int64(Date().timeIntervalSince1970 * 1000))]) else {
            throw UbiquityError(.io, "the record store did not return the new query index")
        }
        return (StoredQueryIndex(id: try row.value("id"), container: container, environment: environment, definition: definition, ready: false), true)
    }

    func buildQueryIndex(_ index: StoredQueryIndex, afterRecord: Int64, limit: Int) async throws -> (last: Int64, count: Int)? {
        let rows = try await session.rows("""
            SELECT \(QueryIndexSQL.qualified(Self.recordColumns, by: "r")), z.name AS zone_name FROM records r JOIN zones z ON z.id = r.zone JOIN databases d ON d.id = z.database
            WHERE d.container = $1 AND d.environment = $2 AND r.type = $3 AND NOT r.deleted AND r.id > $4 ORDER BY r.id LIMIT $5 FOR UPDATE OF r
            """, [.text(index.container), .text(index.environment.rawValue), .text(index.definition.recordType), .int(afterRecord), .int(Int64(limit))])
        guard !rows.isEmpty else { return nil }
        var parameters: [PostgresParameter] = []
        var values: [String] = []
        var last: Int64 = afterRecord
        for row in rows {
            let stored = try record(row)
            last = try row.value("id")
            let first = parameters.count + 1
            values.append("($\(first), $\(first + 1), $\(first + 2), $\(first + 3))")
            parameters += [.int(index.id), .int(stored.zone), .bytes(index.definition.key(for: stored, zoneName: try row.value("zone_name"))), .int(last)]
        }
        try await session.execute("INSERT INTO record_keys (query_index, zone, key, record) VALUES \(values.joined(separator: ", ")) ON CONFLICT DO NOTHING", parameters)
        return (last, rows.count)
    }

    func setQueryIndexReady(id: Int64) async throws {
        try await session.execute("UPDATE query_indexes SET ready = TRUE WHERE id = $1", [.int(id)])
    }

    func dropQueryIndex(id: Int64) async throws {
        try await session.execute("DELETE FROM record_keys WHERE query_index = $1", [.int(id)])
        try await session.execute("DELETE FROM query_indexes WHERE id = $1", [.int(id)])
    }

    func scanQueryIndex(id: Int64, zone: Int64, from lower: [UInt8], to upper: [UInt8], limit: Int) async throws -> [QueryIndexHit] {
        try await session.rows(ScanQueryIndex.self, [.int(id), .int(zone), .bytes(lower), .bytes(upper), .int(Int64(limit))]).map {
            QueryIndexHit(key: Array(try $0.value("key", as: Data.self)),
                          stored: StoredRecordText(record: try record($0, decodingFields: false), fieldsText: try $0.value("fields")))
        }
    }

    func queryIndexKeyCount(id: Int64) async throws -> Int {
        Int(try await session.row("SELECT COUNT(*) AS n FROM record_keys WHERE query_index = $1", [.int(id)])?.value("n", as: Int64.self) ?? 0)
    }
}
