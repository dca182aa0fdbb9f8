// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// The storage primitives of query indexes (``QueryIndexDefinition``), inside one store
/// transaction. Both record stores' transactions conform (`SQLiteTransaction+QueryIndexes.swift`,
/// `PostgresTransaction+QueryIndexes.swift`); the tables come from the `v11-query-indexes`
/// migration: `query_indexes` (the definitions) and `record_keys` (one row per index and live
/// record: index, zone, key, record; primary key (index, zone, key)).
///
/// Keys are written by the stores themselves: `putRecords` and `putRecord` replace a record's
/// keys with those of every index of its type in its container's environment (built or being
/// built), so no write path can leave one out. Concurrency: an index added while records are
/// being written must not miss them. SQLite has one writer; on PostgreSQL a record write holds
/// the environment's index lock shared (`pg_advisory_xact_lock_shared`) from before it reads the
/// definitions, and `addQueryIndex` takes it exclusively, so every write either sees the new
/// index or committed before it was added (and the build, which starts after, reads it).
package protocol QueryIndexStoreTransaction {
    /// The query indexes of a container's environment (every record type), ready or not, by id.
    func queryIndexes(container: String, environment: CloudKitEnvironment) async throws -> [StoredQueryIndex]
    /// Adds an index (not ready) unless one with the same definition exists; the index, and
    /// whether it is new.
    func addQueryIndex(container: String, environment: CloudKitEnvironment, definition: QueryIndexDefinition) async throws -> (index: StoredQueryIndex, added: Bool)
    /// Writes the keys of up to `limit` live records of the index's type in its environment, in
    /// row-id order after `afterRecord` (a key written since stays as it is); the last row id
    /// read and how many were, or nil when none was left. On PostgreSQL the records read are
    /// locked until the transaction ends, so a concurrent write replaces the key after it.
    func buildQueryIndex(_ index: StoredQueryIndex, afterRecord: Int64, limit: Int) async throws -> (last: Int64, count: Int)?
    /// Marks an index ready (every record has its key).
    func setQueryIndexReady(id: Int64) async throws
    /// Removes an index and its keys.
    func dropQueryIndex(id: Int64) async throws
    /// The keys of an index in a zone from `lower` (inclusive) to `upper` (exclusive), in key
    /// order, at most `limit`, each with its record as stored: one statement (a join), so a
    /// query's page costs one round trip. None unless the index is ready as the statement runs,
    /// so hits read outside a transaction prove that it was (while finding none proves nothing:
    /// the index may have been dropped).
    func scanQueryIndex(id: Int64, zone: Int64, from lower: [UInt8], to upper: [UInt8], limit: Int) async throws -> [QueryIndexHit]
    /// The number of keys of an index (every zone).
    func queryIndexKeyCount(id: Int64) async throws -> Int
}

extension RecordStoreTransaction {
    /// The transaction's query-index primitives (both stores have them).
    package func queryIndexStore() throws -> any QueryIndexStoreTransaction {
        guard let indexes = self as? any QueryIndexStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store does not keep query indexes")
        }
        return indexes
    }
}

/// SQL text both stores' query-index code shares.
enum QueryIndexSQL {
    /// `a, b` as `t.a, t.b`: a column list qualified by a table's alias (for joins).
    /// With `prefix`, each is renamed too (`t.a AS p_a`: for a join of two tables whose columns
    /// have the same names).
    static func qualified(_ columns: String, by alias: String, prefix: String? = nil) -> String {
        columns.split(separator: ",").map { column in
            let name = column.trimmingCharacters(in: .whitespaces)
            return prefix.map { "\(alias).\(name) AS \($0)\(name)" } ?? "\(alias).\(name)"
        }.joined(separator: ", ")
    }
}

extension QueryIndexDefinition {
    /// The keys of the records of `writes` (live ones, of the type) for each index of `indexes`
    /// (of a zone named `zoneName`), as (index id, key, position in `writes`).
    package static func keys(for writes: [RecordWrite], zoneName: String, indexes: [StoredQueryIndex]) -> [(index: Int64, key: [UInt8], write: Int)] {
        guard !indexes.isEmpty else { return [] }
        var keys: [(index: Int64, key: [UInt8], write: Int)] = []
        for (position, write) in writes.enumerated() where !write.record.deleted {
            for index in indexes where index.definition.recordType == write.record.recordType {
                keys.append((index.id, index.definition.key(for: write.record, zoneName: zoneName), position))
            }
        }
        return keys
    }
}
