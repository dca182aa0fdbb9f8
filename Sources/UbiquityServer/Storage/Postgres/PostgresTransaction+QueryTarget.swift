// SPDX-License-Identifier: Apache-2.0
import PostgresNIO
import UbiquityCore
import UbiquityWire

extension PostgresTransaction {
    /// The record type, the user's roles, the zones and the type's query indexes in one
    /// statement (``QueryTargetRows``): a query's reads before its page cost one round trip.
    func queryTarget(key: DatabaseKey, zoneName: String?, recordType: String, rolesOf userRecordName: String?) async throws -> QueryTarget {
        let rows = try await session.rows(QueryTargetRows.self, [.text(key.container), .text(key.environment.rawValue), .text(recordType), .text(userRecordName),
                                                                 .text(key.scope.rawValue), .text(key.owner), .text(zoneName)])
        let (type, roles) = try Self.recordType(recordType, rows: rows, rolesWanted: userRecordName != nil)
        var zones: [StoredZone] = []
        var indexes: [StoredQueryIndex] = []
        for row in rows {
            switch try row.value("kind", as: String.self) {
            case "z":
                zones.append(StoredZone(id: try row.value("id"), database: try row.value("database"), name: try row.value("field"),
                                        sequence: try row.value("sequence"), purgedThrough: try row.value("purged_through"), deleted: false,
                                        createdAt: try row.value("created_at")))
            case "i":
                guard let definition = QueryIndexDefinition(recordType: recordType, text: try row.value("field")) else { continue }
                indexes.append(StoredQueryIndex(id: try row.value("id"), container: key.container, environment: key.environment, definition: definition,
                                                ready: try row.value("ready")))
            default:
                break
            }
        }
        return QueryTarget(type: type, roles: roles, zones: zones.sorted { $0.name < $1.name }, indexes: indexes)
    }

    /// The statement of ``queryTarget(key:zoneName:recordType:rolesOf:)``: ``RecordType``'s rows
    /// ($1–$4), then a `z` row per live zone of the database ($5 scope, $6 owner) named $7 (every
    /// zone when $7 is NULL) and an `i` row per query index of the type, their columns beside.
    enum QueryTargetRows: PostgresStatement {
        static let name = "query_target"
        static let sql = """
            SELECT t.*, NULL::BIGINT AS id, NULL::BIGINT AS database, NULL::BIGINT AS sequence, NULL::BIGINT AS purged_through,
                NULL::BIGINT AS created_at, NULL::BOOLEAN AS ready FROM (\(RecordType.sql)) t
            UNION ALL SELECT 'z', z.name, NULL, NULL, NULL, NULL, NULL, NULL, z.id, z.database, z.sequence, z.purged_through, z.created_at, NULL
                FROM databases d JOIN zones z ON z.database = d.id
                WHERE d.container = $1 AND d.environment = $2 AND d.scope = $5 AND d.owner = $6 AND NOT z.deleted AND ($7::TEXT IS NULL OR z.name = $7)
            UNION ALL SELECT 'i', q.definition, NULL, NULL, NULL, NULL, NULL, NULL, q.id, NULL, NULL, NULL, NULL, q.ready
                FROM query_indexes q WHERE q.container = $1 AND q.environment = $2 AND q.record_type = $3
            """
    }
}
