// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import Synchronization
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Where the time of `records/modify` goes, measured in one process without HTTP:
/// `records-phases` (request decoding, the engine with its store, the time the store's writer is
/// busy, response encoding) and `records-sql-variants` (the SQLite store's statements for one
/// record, as the store issues them and with cheaper variants).
enum RecordsBenchPhases {
    /// Forwards to a store and adds up the time spent inside write transactions' bodies (for a
    /// single-writer store: how long the writer is busy).
    final class TimingStore: RecordStore {
        let base: any RecordStore
        let busy = Atomic<UInt64>(0)
        let writes = Atomic<Int>(0)
        init(_ base: any RecordStore) { self.base = base }
        var description: String { base.description }
        func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
            try await base.read(body)
        }
        func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
            try await base.write { tx in
                let start = monotonicNanoseconds()
                defer {
                    self.busy.add(monotonicNanoseconds() - start, ordering: .relaxed)
                    self.writes.add(1, ordering: .relaxed)
                }
                return try await body(tx)
            }
        }
        func close() async throws { try await base.close() }
    }

    /// `records-phases [--database URL] [--records N] [--batch 200] [--clients 4]`: decodes the
    /// same `records/modify` bodies the HTTP load sends (timed alone, one thread), then runs them
    /// through `RecordsEngine.modifyRecords` from `clients` concurrent tasks on a fresh store
    /// (SQLite in a temporary folder, or PostgreSQL at URL in a fresh schema), serializing each
    /// response as the server does. Prints µs per record for each phase.
    static func run(_ options: Options) throws {
        let count = options.int("records", 20_000), batch = options.int("batch", 200), clients = options.int("clients", 4)
        let databaseURL: String? = { let url = options.string("database", ""); return url.isEmpty ? nil : url }()
        let bodies = stride(from: 0, to: count, by: batch).map { BenchRecord.modifyBody($0..<min(count, $0 + batch)) }
        // Decoding alone.
        let start = monotonicNanoseconds()
        var requests: [WireModifyRecordsRequest] = []
        for body in bodies {
            requests.append(try WireModifyRecordsRequest(json: JSONValue.parse(Data(body.utf8))))
        }
        let decode = Double(monotonicNanoseconds() - start) / Double(count) / 1000
        let sendable = requests
        let outcome = PhaseOutcome()
        try QueryBench.block {
            var logger = Logger(label: "bench.phases")
            logger.logLevel = .warning
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-phases-\(getpid())")
            let base: any RecordStore
            if let databaseURL {
                base = try await PostgresRecordStore(url: databaseURL, schema: "phases_\(getpid())", logger: logger)
            } else {
                base = try SQLiteRecordStore(directory: directory, logger: logger)
            }
            let store = TimingStore(base)
            let engine = RecordsEngine(store: store, logger: logger)
            let context = RecordsEngine.Context(container: "iCloud.bench", environment: .development, scope: .private,
                                                caller: RecordsCaller(identity: .user(accountID: 1, userRecordName: "_bench")))
            let began = monotonicNanoseconds()
            let counters = Counters()
            try await withThrowingTaskGroup(of: Void.self) { group in
                for client in 0..<clients {
                    group.addTask {
                        var index = client
                        while index < sendable.count {
                            let response = try await engine.modifyRecords(sendable[index], context: context)
                            let encodeStart = monotonicNanoseconds()
                            let bytes = response.serialized()
                            counters.encode.add(monotonicNanoseconds() - encodeStart, ordering: .relaxed)
                            counters.failed.add(countOccurrences(bytes), ordering: .relaxed)
                            index += clients
                        }
                    }
                }
                try await group.waitForAll()
            }
            outcome.wall = monotonicNanoseconds() - began
            outcome.busy = store.busy.load(ordering: .relaxed)
            outcome.encode = counters.encode.load(ordering: .relaxed)
            outcome.failed = counters.failed.load(ordering: .relaxed)
            try await store.close()
            try? FileManager.default.removeItem(at: directory)
        }
        let perRecord = { (nanoseconds: UInt64) in Double(nanoseconds) / Double(count) / 1000 }
        print(String(format: "records-phases store=%@ records=%d clients=%d failed=%d decode_us=%.1f engine_wall_us=%.1f engine_rate=%.0f writer_busy_us=%.1f encode_us=%.1f",
                     databaseURL == nil ? "sqlite" : "postgres", count, clients, outcome.failed, decode, perRecord(outcome.wall),
                     Double(count) / (Double(outcome.wall) / 1e9), perRecord(outcome.busy), perRecord(outcome.encode)))
    }

    /// Counters shared by the engine tasks.
    final class Counters: Sendable {
        let encode = Atomic<UInt64>(0)
        let failed = Atomic<Int>(0)
    }

    /// Phase times. `@unchecked Sendable`: written by the one task, read after `block`.
    final class PhaseOutcome: @unchecked Sendable {
        var wall: UInt64 = 0
        var busy: UInt64 = 0
        var encode: UInt64 = 0
        var failed = 0
    }

    static func countOccurrences(_ bytes: Data) -> Int {
        let needle = Array("serverErrorCode".utf8)
        return bytes.withUnsafeBytes { raw in
            guard raw.count >= needle.count else { return 0 }
            var found = 0
            for index in 0...(raw.count - needle.count) where raw[index] == needle[0] {
                if (1..<needle.count).allSatisfy({ raw[index + $0] == needle[$0] }) { found += 1 }
            }
            return found
        }
    }

    /// `records-sql-variants [--records N] [--batch 200]`: the SQLite store's own schema (made by
    /// `SQLiteRecordStore`), N records written with plain GRDB in one transaction per batch, with
    /// all values computed beforehand (SQL cost only, no engine):
    /// - `store`: the statements the store runs per created record today: look the record up,
    ///   `UPDATE zones SET sequence` + `SELECT sequence` (not cached), `INSERT … RETURNING id`,
    ///   `DELETE FROM record_index`, `SELECT name FROM zones`, then one INSERT per index row (5
    ///   system fields + 4 fields = 9);
    /// - `lean-statements`: the same rows, but the sequence bumped once per batch, the zone name
    ///   and the index DELETE skipped for new records;
    /// - `no-system-index`: lean statements, and no index rows for the 5 system fields (they
    ///   are columns of `records` already): 4 index rows per record;
    /// - `one-index-row`: as `no-system-index`, with an index row for `cat` only (as when only
    ///   the fields a query filters on are indexed);
    /// - `plain`: the baseline's plain table with one index, for scale.
    /// `--cache-mib M` sets SQLite's page cache (the store uses SQLite's default, 2 MiB).
    static func sqlVariants(_ options: Options) throws {
        let count = options.int("records", 20_000), batch = options.int("batch", 200)
        let cacheMiB = options.int("cache-mib", 0)
        let variants = options.string("variants", "store,lean-statements,no-system-index,one-index-row,plain").split(separator: ",").map(String.init)
        var logger = Logger(label: "bench.variants")
        logger.logLevel = .warning
        struct Prepared {
            var name: String
            var fields: String
            var entries: [RecordIndexEntry]
            var record: BenchRecord
        }
        let prepared: [Prepared] = (0..<count).map { index in
            let record = BenchRecord(index)
            let fields: [String: WireFieldValue] = [
                "cat": .string(record.category), "rank": .int64(record.rank), "title": .string(record.title),
                "where": .location(WireLocation(latitude: record.latitude, longitude: record.longitude)),
            ]
            let stored = StoredRecord(zone: 1, recordName: record.name, recordType: "Item", changeTag: "", sequence: 0, deleted: false,
                                      fields: fields, created: WireRecordStamp(timestamp: 1_790_000_000_000, userRecordName: "_bench", deviceID: nil),
                                      modified: WireRecordStamp(timestamp: 1_790_000_000_000, userRecordName: "_bench", deviceID: nil),
                                      parent: nil, shortGUID: nil)
            return Prepared(name: record.name, fields: stored.fieldsJSON, entries: RecordIndexEntry.entries(for: stored, zoneName: "_defaultZone"),
                            record: record)
        }
        for variant in variants {
            let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-variants-\(getpid())-\(variant)")
            try? FileManager.default.removeItem(at: directory)
            // The store's schema and settings.
            let made = try SQLiteRecordStore(directory: directory, logger: logger)
            let path = made.path
            try QueryBench.block { try await made.close() }
            var configuration = Configuration()
            configuration.prepareDatabase { db in
                try db.execute(sql: "PRAGMA synchronous = NORMAL")
                try db.execute(sql: "PRAGMA foreign_keys = ON")
                if cacheMiB > 0 { try db.execute(sql: "PRAGMA cache_size = -\(cacheMiB * 1024)") }
            }
            let pool = try DatabasePool(path: path, configuration: configuration)
            try pool.write { db in
                try db.execute(sql: "INSERT INTO databases (container, environment, scope, owner) VALUES ('iCloud.bench', 'development', 'private', '_bench')")
                try db.execute(sql: "INSERT INTO zones (database, name, created_at) VALUES (1, '_defaultZone', 0)")
                try db.execute(sql: """
                    CREATE TABLE items (id INTEGER PRIMARY KEY, name TEXT NOT NULL, cat TEXT NOT NULL, rank INTEGER NOT NULL,
                                        title TEXT NOT NULL, latitude REAL NOT NULL, longitude REAL NOT NULL);
                    CREATE INDEX items_cat_rank ON items(cat, rank);
                    """)
            }
            let start = monotonicNanoseconds()
            var lower = 0
            while lower < count {
                let upper = min(count, lower + batch)
                try pool.write { db in
                    if variant == "plain" {
                        let insert = try db.cachedStatement(sql: "INSERT INTO items (name, cat, rank, title, latitude, longitude) VALUES (?, ?, ?, ?, ?, ?)")
                        for item in prepared[lower..<upper] {
                            let r = item.record
                            try insert.execute(arguments: [r.name, r.category, r.rank, r.title, r.latitude, r.longitude])
                        }
                        return
                    }
                    let lean = variant != "store"
                    let lookup = try db.cachedStatement(sql: "SELECT id, zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, parent, short_guid FROM records WHERE zone = ? AND name = ?")
                    let insert = try db.cachedStatement(sql: """
                        INSERT INTO records (zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device,
                                             modified_at, modified_by, modified_device, parent, short_guid)
                        VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                        ON CONFLICT (zone, name) DO UPDATE SET type = excluded.type, change_tag = excluded.change_tag, sequence = excluded.sequence,
                            deleted = excluded.deleted, fields = excluded.fields, created_at = excluded.created_at, created_by = excluded.created_by,
                            created_device = excluded.created_device, modified_at = excluded.modified_at, modified_by = excluded.modified_by,
                            modified_device = excluded.modified_device, parent = excluded.parent, short_guid = excluded.short_guid
                        RETURNING id
                        """)
                    let entry = try db.cachedStatement(sql: "INSERT INTO record_index (record, field, number, text, latitude, longitude) VALUES (?, ?, ?, ?, ?, ?)")
                    var sequence: Int64 = 0
                    if lean {
                        sequence = try Int64.fetchOne(db.cachedStatement(sql: "UPDATE zones SET sequence = sequence + ? WHERE id = 1 RETURNING sequence"),
                                                      arguments: [upper - lower])! - Int64(upper - lower)
                    }
                    for item in prepared[lower..<upper] {
                        _ = try Row.fetchOne(lookup, arguments: [1, item.name])
                        if lean {
                            sequence += 1
                        } else {
                            try db.execute(sql: "UPDATE zones SET sequence = sequence + 1 WHERE id = ?", arguments: [1])
                            sequence = try Int64.fetchOne(db, sql: "SELECT sequence FROM zones WHERE id = ?", arguments: [1])!
                        }
                        let tag = String(sequence, radix: 36)
                        let values: [(any DatabaseValueConvertible)?] = [
                            1, item.name, "Item", tag, sequence, false, item.fields, 1_790_000_000_000, "_bench", nil,
                            1_790_000_000_000, "_bench", nil, nil, nil,
                        ]
                        let id = try Int64.fetchOne(insert, arguments: StatementArguments(values))!
                        if !lean {
                            try db.cachedStatement(sql: "DELETE FROM record_index WHERE record = ?").execute(arguments: [id])
                            _ = try String.fetchOne(db.cachedStatement(sql: "SELECT name FROM zones WHERE id = ?"), arguments: [1])
                        }
                        for index in item.entries where (variant != "no-system-index" && variant != "one-index-row") || !index.field.hasPrefix("___") {
                            if variant == "one-index-row", index.field != "cat" { continue }
                            try entry.execute(arguments: [id, index.field, index.number, index.text, index.latitude, index.longitude])
                        }
                    }
                    try db.execute(sql: "UPDATE databases SET sequence = sequence + 1 WHERE id = 1")
                }
                lower = upper
            }
            let seconds = Double(monotonicNanoseconds() - start) / 1e9
            try pool.close()
            try? FileManager.default.removeItem(at: directory)
            print(String(format: "records-sql-variants variant=%@ cache_mib=%d records=%d seconds=%.3f rate=%.0f us_per_record=%.1f",
                         variant, cacheMiB, count, seconds, Double(count) / seconds, seconds * 1e6 / Double(count)))
        }
    }
}
