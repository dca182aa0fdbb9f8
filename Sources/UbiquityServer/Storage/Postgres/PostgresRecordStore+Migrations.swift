// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension PostgresRecordStore {
    /// One schema version: statements run in one transaction, in order.
    struct Migration {
        var identifier: String
        var statements: [String]
    }

    /// The advisory lock every migration takes, so processes starting together migrate one by one.
    static let migrationLockKey: Int64 = 0x7562_6971_6d69_6772 // "ubiqmigr"

    /// The same tables, columns and indexes as `SQLiteRecordStore`'s migrator: `INTEGER` is
    /// `BIGINT` (`BIGSERIAL` for ids), `REAL` is `DOUBLE PRECISION`, flags are `BOOLEAN`, and every
    /// text column is `COLLATE "C"` so comparisons (and the prefix ranges of `IndexConditionSQL`)
    /// are byte-wise, as in SQLite.
    static let migrations: [Migration] = [
        Migration(identifier: "v1", statements: [
            #"CREATE TABLE containers (identifier TEXT COLLATE "C" PRIMARY KEY, created_at BIGINT NOT NULL)"#,
            #"CREATE TABLE api_tokens (digest TEXT COLLATE "C" PRIMARY KEY, container TEXT COLLATE "C" NOT NULL REFERENCES containers(identifier), created_at BIGINT NOT NULL)"#,
            #"CREATE TABLE accounts (id BIGSERIAL PRIMARY KEY, name TEXT COLLATE "C" NOT NULL UNIQUE, email TEXT COLLATE "C" UNIQUE, password_hash TEXT COLLATE "C", created_at BIGINT NOT NULL)"#,
            #"CREATE TABLE web_auth_tokens (digest TEXT COLLATE "C" PRIMARY KEY, account BIGINT NOT NULL REFERENCES accounts(id), created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)"#,
            #"CREATE TABLE server_keys (container TEXT COLLATE "C" NOT NULL REFERENCES containers(identifier), key_id TEXT COLLATE "C" NOT NULL, public_key TEXT COLLATE "C" NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (container, key_id))"#,
            #"CREATE TABLE databases (id BIGSERIAL PRIMARY KEY, container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, scope TEXT COLLATE "C" NOT NULL, owner TEXT COLLATE "C" NOT NULL, sequence BIGINT NOT NULL DEFAULT 0, UNIQUE (container, environment, scope, owner))"#,
            #"CREATE TABLE zones (id BIGSERIAL PRIMARY KEY, database BIGINT NOT NULL REFERENCES databases(id), name TEXT COLLATE "C" NOT NULL, sequence BIGINT NOT NULL DEFAULT 0, purged_through BIGINT NOT NULL DEFAULT 0, deleted BOOLEAN NOT NULL DEFAULT FALSE, created_at BIGINT NOT NULL, database_sequence BIGINT NOT NULL DEFAULT 0)"#,
            #"CREATE UNIQUE INDEX zones_live ON zones(database, name) WHERE NOT deleted"#,
            #"CREATE INDEX zones_changes ON zones(database, database_sequence)"#,
            #"CREATE TABLE records (id BIGSERIAL PRIMARY KEY, zone BIGINT NOT NULL, name TEXT COLLATE "C" NOT NULL, type TEXT COLLATE "C" NOT NULL, change_tag TEXT COLLATE "C" NOT NULL, sequence BIGINT NOT NULL, deleted BOOLEAN NOT NULL, fields TEXT COLLATE "C" NOT NULL, created_at BIGINT NOT NULL, created_by TEXT COLLATE "C" NOT NULL, created_device TEXT COLLATE "C", modified_at BIGINT NOT NULL, modified_by TEXT COLLATE "C" NOT NULL, modified_device TEXT COLLATE "C", parent TEXT COLLATE "C", short_guid TEXT COLLATE "C", UNIQUE (zone, name))"#,
            #"CREATE INDEX records_changes ON records(zone, sequence)"#,
            #"CREATE INDEX records_type ON records(zone, type) WHERE NOT deleted"#,
            #"CREATE TABLE record_index (record BIGINT NOT NULL, field TEXT COLLATE "C" NOT NULL, number DOUBLE PRECISION, text TEXT COLLATE "C", latitude DOUBLE PRECISION, longitude DOUBLE PRECISION)"#,
            #"CREATE INDEX record_index_text ON record_index(field, text) WHERE text IS NOT NULL"#,
            #"CREATE INDEX record_index_number ON record_index(field, number) WHERE number IS NOT NULL"#,
            #"CREATE INDEX record_index_geo ON record_index(field, latitude) WHERE latitude IS NOT NULL"#,
            #"CREATE INDEX record_index_record ON record_index(record)"#,
            #"CREATE TABLE schema_fields (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, record_type TEXT COLLATE "C" NOT NULL, field TEXT COLLATE "C" NOT NULL, type TEXT COLLATE "C" NOT NULL, PRIMARY KEY (container, environment, record_type, field))"#,
        ]),
    ]

    /// `"name"` with inner quotes doubled: an identifier in SQL text (DDL takes no parameters).
    static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Creates the schema (when one is set) and applies the migrations not applied yet, in one
    /// transaction under `pg_advisory_xact_lock`, so that processes starting at once neither race
    /// nor apply a migration twice. Applied migrations are listed in `ubiquity_migrations`.
    static func migrate(session: PostgresSession, schema: String?, now: Int64) throws -> [String] {
        try session.execute("SELECT pg_advisory_xact_lock($1)", [.int(migrationLockKey)])
        if let schema {
            try session.execute("CREATE SCHEMA IF NOT EXISTS \(quotedIdentifier(schema))")
        }
        try session.execute(#"CREATE TABLE IF NOT EXISTS ubiquity_migrations (identifier TEXT COLLATE "C" PRIMARY KEY, applied_at BIGINT NOT NULL)"#)
        let applied = Set(try session.rows("SELECT identifier FROM ubiquity_migrations").map { try $0.value("identifier", as: String.self) })
        var newlyApplied: [String] = []
        for migration in migrations where !applied.contains(migration.identifier) {
            for statement in migration.statements { try session.execute(statement) }
            try session.execute("INSERT INTO ubiquity_migrations (identifier, applied_at) VALUES ($1, $2)", [.text(migration.identifier), .int(now)])
            newlyApplied.append(migration.identifier)
        }
        return newlyApplied
    }
}
