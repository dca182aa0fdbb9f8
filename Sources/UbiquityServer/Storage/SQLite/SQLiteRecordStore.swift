// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import UbiquityCore

/// The embedded record store: one SQLite file (WAL) through GRDB. GRDB's writer queue is the one
/// writer, so database locks are implicit; readers see snapshots and never wait for it.
public final class SQLiteRecordStore: RecordStore {
    let pool: DatabasePool
    let logger: Logger
    /// The database file.
    public let path: String

    /// Opens (creating or migrating) the store in `directory` (`records.sqlite`).
    public init(directory: URL, logger: Logger) throws {
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        path = directory.appendingPathComponent("records.sqlite").path
        self.logger = logger
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try SQLiteRecordStore.migrator.migrate(pool)
        } catch {
            throw UbiquityError(.io, "cannot open the record store at \(path)", underlying: error)
        }
    }

    /// `"sqlite PATH"`.
    public var description: String { "sqlite \(path)" }

    /// Runs `body` on a read snapshot.
    public func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) throws -> T) async throws -> T {
        try await pool.read { db in try body(SQLiteTransaction(db: db)) }
    }

    /// Runs `body` in an immediate write transaction.
    public func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) throws -> T) async throws -> T {
        try await pool.write { db in try body(SQLiteTransaction(db: db)) }
    }

    /// Closes the pool.
    public func close() async throws {
        try pool.close()
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE containers (identifier TEXT PRIMARY KEY, created_at INTEGER NOT NULL);
                CREATE TABLE api_tokens (digest TEXT PRIMARY KEY, container TEXT NOT NULL REFERENCES containers(identifier), created_at INTEGER NOT NULL);
                CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, email TEXT UNIQUE, password_hash TEXT, created_at INTEGER NOT NULL);
                CREATE TABLE web_auth_tokens (digest TEXT PRIMARY KEY, account INTEGER NOT NULL REFERENCES accounts(id), created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
                CREATE TABLE server_keys (container TEXT NOT NULL REFERENCES containers(identifier), key_id TEXT NOT NULL, public_key TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (container, key_id));
                CREATE TABLE databases (id INTEGER PRIMARY KEY, container TEXT NOT NULL, environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, sequence INTEGER NOT NULL DEFAULT 0, UNIQUE (container, environment, scope, owner));
                CREATE TABLE zones (id INTEGER PRIMARY KEY, database INTEGER NOT NULL REFERENCES databases(id), name TEXT NOT NULL, sequence INTEGER NOT NULL DEFAULT 0, purged_through INTEGER NOT NULL DEFAULT 0, deleted INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, database_sequence INTEGER NOT NULL DEFAULT 0);
                CREATE UNIQUE INDEX zones_live ON zones(database, name) WHERE deleted = 0;
                CREATE INDEX zones_changes ON zones(database, database_sequence);
                CREATE TABLE records (id INTEGER PRIMARY KEY, zone INTEGER NOT NULL, name TEXT NOT NULL, type TEXT NOT NULL, change_tag TEXT NOT NULL, sequence INTEGER NOT NULL, deleted INTEGER NOT NULL, fields TEXT NOT NULL, created_at INTEGER NOT NULL, created_by TEXT NOT NULL, created_device TEXT, modified_at INTEGER NOT NULL, modified_by TEXT NOT NULL, modified_device TEXT, parent TEXT, short_guid TEXT, UNIQUE (zone, name));
                CREATE INDEX records_changes ON records(zone, sequence);
                CREATE INDEX records_type ON records(zone, type) WHERE deleted = 0;
                CREATE TABLE record_index (record INTEGER NOT NULL, field TEXT NOT NULL, number REAL, text TEXT, latitude REAL, longitude REAL);
                CREATE INDEX record_index_text ON record_index(field, text) WHERE text IS NOT NULL;
                CREATE INDEX record_index_number ON record_index(field, number) WHERE number IS NOT NULL;
                CREATE INDEX record_index_geo ON record_index(field, latitude) WHERE latitude IS NOT NULL;
                CREATE INDEX record_index_record ON record_index(record);
                CREATE TABLE schema_fields (container TEXT NOT NULL, environment TEXT NOT NULL, record_type TEXT NOT NULL, field TEXT NOT NULL, type TEXT NOT NULL, PRIMARY KEY (container, environment, record_type, field));
                """)
        }
        return migrator
    }
}
