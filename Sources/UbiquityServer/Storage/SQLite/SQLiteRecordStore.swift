// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import UbiquityCore

/// The embedded record store: one SQLite file (WAL) through GRDB. GRDB's writer queue is the one
/// writer, so database locks are implicit; readers see snapshots and never wait for it.
package final class SQLiteRecordStore: RecordStore {
    let pool: DatabasePool
    let logger: Logger
    /// The database file.
    package let path: String

    /// Opens (creating or migrating) the store in `directory` (`records.sqlite`).
    package init(directory: URL, logger: Logger) throws {
        if FileStamp.of(directory.path) == nil { try PrivateFolder.ensure(directory.path) }
        path = directory.appendingPathComponent("records.sqlite").path
        // private whatever the umask: every record, password hashes, the asset signing key
        try PrivateFolder.prepareFile(path)
        self.logger = logger
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        configuration.prepareDatabase { db in
            try db.execute(sql: "PRAGMA synchronous = NORMAL")
            try db.execute(sql: "PRAGMA foreign_keys = ON")
            // 32 MiB of page cache per connection (SQLite's default is 2 MiB): a zone of tens of
            // thousands of records with their index rows otherwise reads pages back with pread
            // at every `records/modify` and `changes/zone` (docs/benchmarks.md, w2 profiles)
            try db.execute(sql: "PRAGMA cache_size = -32768")
        }
        do {
            pool = try DatabasePool(path: path, configuration: configuration)
            try SQLiteRecordStore.migrator.migrate(pool)
        } catch {
            throw UbiquityError(.io, "cannot open the record store at \(path)", underlying: error)
        }
    }

    /// `"sqlite PATH"`.
    package var description: String { "sqlite \(path)" }

    /// Runs `body` on a read snapshot (GRDB's async `read`; the body runs on the reader's thread,
    /// ``SQLiteTransactionExecutor``).
    package func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try await pool.read { db in try Self.run(body, db: db) }
    }

    /// Runs `body` outside a transaction (GRDB's `unsafeRead`): each statement is its own
    /// snapshot, and the `BEGIN` and `COMMIT` of ``read(_:)`` are spared.
    package func readWithoutSnapshot<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try await pool.unsafeRead { db in try Self.run(body, db: db) }
    }

    /// Runs `body` in an immediate write transaction (GRDB's async `write`; the body runs on the
    /// writer's thread, ``SQLiteTransactionExecutor``).
    package func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try await pool.write { db in try Self.run(body, db: db) }
    }

    private static func run<T>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T, db: Database) throws -> T {
        // used only on this thread, by jobs the executor runs here while GRDB's closure lasts
        nonisolated(unsafe) let transaction = SQLiteTransaction(db: db)
        return try SQLiteTransactionExecutor.run { try await body(transaction) }
    }

    /// Closes the pool.
    package func close() async throws {
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
        // The system fields that are columns of `records` are no longer duplicated in the index;
        // locations are indexed by (latitude, longitude) so a NEAR box is answered from the index.
        migrator.registerMigration("v2-lean-index") { db in
            try db.execute(sql: "DELETE FROM record_index WHERE field IN (\(RecordIndexEntry.columnSystemFields.map { "'\($0)'" }.joined(separator: ", ")))")
            try db.execute(sql: """
                DROP INDEX record_index_geo;
                CREATE INDEX record_index_geo ON record_index(field, latitude, longitude) WHERE latitude IS NOT NULL;
                """)
        }
        // Subscriptions, per-user notification logs and push tokens (Subscriptions/, docs/push.md).
        migrator.registerMigration("v3-subscriptions") { db in
            try db.execute(sql: """
                CREATE TABLE subscriptions (container TEXT NOT NULL, environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, subscriber TEXT NOT NULL, subscription_id TEXT NOT NULL, kind TEXT NOT NULL, query TEXT, zone_name TEXT, zone_wide INTEGER NOT NULL, fires_on INTEGER NOT NULL, fires_once INTEGER NOT NULL, notification_info TEXT, created_at INTEGER NOT NULL, PRIMARY KEY (container, environment, scope, owner, subscriber, subscription_id));
                CREATE TABLE subscription_generations (container TEXT NOT NULL, environment TEXT NOT NULL, scope TEXT NOT NULL, owner TEXT NOT NULL, generation INTEGER NOT NULL, PRIMARY KEY (container, environment, scope, owner));
                CREATE TABLE notification_logs (container TEXT NOT NULL, environment TEXT NOT NULL, user_name TEXT NOT NULL, head INTEGER NOT NULL, floor INTEGER NOT NULL, PRIMARY KEY (container, environment, user_name));
                CREATE TABLE notifications (container TEXT NOT NULL, environment TEXT NOT NULL, user_name TEXT NOT NULL, sequence INTEGER NOT NULL, notification_id TEXT NOT NULL, payload TEXT NOT NULL, created_at INTEGER NOT NULL, PRIMARY KEY (container, environment, user_name, sequence));
                CREATE INDEX notifications_id ON notifications(container, environment, user_name, notification_id);
                CREATE INDEX notifications_age ON notifications(created_at);
                CREATE TABLE push_tokens (digest TEXT PRIMARY KEY, container TEXT NOT NULL, environment TEXT NOT NULL, user_name TEXT NOT NULL, apns_environment TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL);
                """)
        }
        // Assets: which records refer to which content (garbage collection), each database's
        // usage (quotas) and the server's secrets (the asset signing key) (docs/assets.md).
        migrator.registerMigration("v4-assets") { db in
            try db.execute(sql: """
                CREATE TABLE server_secrets (name TEXT PRIMARY KEY, value TEXT NOT NULL, created_at INTEGER NOT NULL);
                CREATE TABLE record_assets (record INTEGER NOT NULL, checksum TEXT NOT NULL, size INTEGER NOT NULL, PRIMARY KEY (record, checksum));
                CREATE TABLE database_assets (database INTEGER NOT NULL, checksum TEXT NOT NULL, size INTEGER NOT NULL, refs INTEGER NOT NULL, PRIMARY KEY (database, checksum));
                CREATE INDEX database_assets_checksum ON database_assets(checksum);
                CREATE TABLE database_usage (database INTEGER PRIMARY KEY, record_bytes INTEGER NOT NULL DEFAULT 0, asset_bytes INTEGER NOT NULL DEFAULT 0);
                INSERT INTO database_usage (database, record_bytes, asset_bytes)
                    SELECT zones.database, SUM(length(CAST(records.fields AS BLOB))), 0 FROM records JOIN zones ON zones.id = records.zone
                    WHERE records.deleted = 0 GROUP BY zones.database;
                """)
        }
        // Users: name components of accounts, and each account's identity per container (its user
        // record name there and whether it is discoverable) (Users/, docs/server.md).
        migrator.registerMigration("v5-users") { db in
            try db.execute(sql: """
                ALTER TABLE accounts ADD COLUMN given_name TEXT;
                ALTER TABLE accounts ADD COLUMN family_name TEXT;
                ALTER TABLE accounts ADD COLUMN middle_name TEXT;
                ALTER TABLE accounts ADD COLUMN nickname TEXT;
                ALTER TABLE accounts ADD COLUMN name_prefix TEXT;
                ALTER TABLE accounts ADD COLUMN name_suffix TEXT;
                CREATE INDEX accounts_email_lower ON accounts(lower(email));
                CREATE TABLE user_identities (account INTEGER NOT NULL REFERENCES accounts(id), container TEXT NOT NULL, user_record_name TEXT NOT NULL, discoverable INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, PRIMARY KEY (account, container), UNIQUE (container, user_record_name));
                """)
        }
        // Schemas: index flags of fields, record types (also those without fields), per-type
        // public-database permissions of roles, named roles and their members (Schema/,
        // docs/server.md "Schema and environments"). Existing types get CloudKit's defaults.
        migrator.registerMigration("v6-schema") { db in
            try db.execute(sql: """
                ALTER TABLE schema_fields ADD COLUMN queryable INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE schema_fields ADD COLUMN sortable INTEGER NOT NULL DEFAULT 1;
                ALTER TABLE schema_fields ADD COLUMN searchable INTEGER NOT NULL DEFAULT 0;
                UPDATE schema_fields SET searchable = 1 WHERE type IN ('STRING', 'STRING_LIST');
                CREATE TABLE schema_types (container TEXT NOT NULL, environment TEXT NOT NULL, record_type TEXT NOT NULL, PRIMARY KEY (container, environment, record_type));
                INSERT INTO schema_types (container, environment, record_type) SELECT DISTINCT container, environment, record_type FROM schema_fields;
                CREATE TABLE schema_permissions (container TEXT NOT NULL, environment TEXT NOT NULL, record_type TEXT NOT NULL, role TEXT NOT NULL, permissions INTEGER NOT NULL, PRIMARY KEY (container, environment, record_type, role));
                INSERT INTO schema_permissions SELECT container, environment, record_type, '_world', 2 FROM schema_types;
                INSERT INTO schema_permissions SELECT container, environment, record_type, '_icloud', 1 FROM schema_types;
                INSERT INTO schema_permissions SELECT container, environment, record_type, '_creator', 6 FROM schema_types;
                CREATE TABLE schema_roles (container TEXT NOT NULL, environment TEXT NOT NULL, role TEXT NOT NULL, PRIMARY KEY (container, environment, role));
                CREATE TABLE role_members (container TEXT NOT NULL, role TEXT NOT NULL, user_record_name TEXT NOT NULL, PRIMARY KEY (container, role, user_record_name));
                CREATE INDEX role_members_user ON role_members(container, user_record_name);
                """)
        }
        // Tokens bound to a container, grouped in sessions that rotation carries on, and
        // accounts an administrator disabled (issue 24, findings 9 and 10). Earlier tokens stay
        // valid in any container, each its own session; those issued for a year are devices'.
        migrator.registerMigration("v7-token-sessions") { db in
            try db.execute(sql: """
                ALTER TABLE web_auth_tokens ADD COLUMN container TEXT;
                ALTER TABLE web_auth_tokens ADD COLUMN session TEXT;
                ALTER TABLE web_auth_tokens ADD COLUMN device INTEGER NOT NULL DEFAULT 0;
                UPDATE web_auth_tokens SET session = digest, device = (expires_at - created_at > 30 * 86400000);
                CREATE INDEX web_auth_tokens_session ON web_auth_tokens(session);
                CREATE INDEX web_auth_tokens_account ON web_auth_tokens(account);
                ALTER TABLE accounts ADD COLUMN disabled_at INTEGER;
                """)
        }
        // The sign-in guard's counts, shared by the server's processes and kept across restarts
        // (issue 24, finding 6). Times are seconds since 1970.
        migrator.registerMigration("v8-sign-in-backoffs") { db in
            try db.execute(sql: """
                CREATE TABLE sign_in_backoffs (key TEXT PRIMARY KEY, failures INTEGER NOT NULL, blocked_until REAL NOT NULL, last_failure REAL NOT NULL);
                """)
        }
        // The tag a field's type was guessed from, when a value without `type` made it
        // (SchemaField.guess, issue 26): NULL for the fields before, whose types stand.
        migrator.registerMigration("v9-schema-guesses") { db in
            try db.execute(sql: "ALTER TABLE schema_fields ADD COLUMN guess TEXT")
        }
        // The web origins a container's sign-in page may hand a token to (CloudKit's "Allowed
        // Origins"; `ubiq admin container origins`).
        migrator.registerMigration("v10-container-origins") { db in
            try db.execute(sql: "CREATE TABLE container_origins (container TEXT NOT NULL REFERENCES containers(identifier), origin TEXT NOT NULL, PRIMARY KEY (container, origin))")
        }
        // Query indexes (QueryIndexDefinition, issue 26): their definitions per container
        // environment and one key per index and live record, in key order per zone.
        migrator.registerMigration("v11-query-indexes") { db in
            try db.execute(sql: """
                CREATE TABLE query_indexes (id INTEGER PRIMARY KEY, container TEXT NOT NULL, environment TEXT NOT NULL, record_type TEXT NOT NULL, definition TEXT NOT NULL, ready INTEGER NOT NULL DEFAULT 0, created_at INTEGER NOT NULL, UNIQUE (container, environment, record_type, definition));
                CREATE TABLE record_keys (query_index INTEGER NOT NULL, zone INTEGER NOT NULL, key BLOB NOT NULL, record INTEGER NOT NULL, PRIMARY KEY (query_index, zone, key)) WITHOUT ROWID;
                CREATE INDEX record_keys_record ON record_keys(record);
                """)
        }
        // NEAR from a spatial index: one R*Tree rectangle (a point) per location row of
        // record_index, keyed by its rowid (IndexConditionSQL, issue 26).
        migrator.registerMigration("v12-record-locations") { db in
            try db.execute(sql: """
                CREATE VIRTUAL TABLE record_locations USING rtree(id, min_latitude, max_latitude, min_longitude, max_longitude);
                INSERT INTO record_locations (id, min_latitude, max_latitude, min_longitude, max_longitude)
                    SELECT rowid, latitude, latitude, longitude, longitude FROM record_index WHERE latitude IS NOT NULL AND longitude IS NOT NULL;
                DROP INDEX record_index_geo;
                """)
        }
        // The documents' server history (History/, docs/history.md): every upload of a synced
        // file as a version (thinned as Nextcloud does) and every deleted item for its days in
        // Recently Deleted; their assets stay referenced while they are kept.
        migrator.registerMigration("v13-document-history") { db in
            try db.execute(sql: """
                CREATE TABLE item_versions (id INTEGER PRIMARY KEY, database INTEGER NOT NULL, record_name TEXT NOT NULL, path TEXT NOT NULL, saved_at INTEGER NOT NULL, saved_by TEXT NOT NULL, size INTEGER NOT NULL, content_hash TEXT NOT NULL, asset_checksum TEXT, fields TEXT NOT NULL, current INTEGER NOT NULL);
                CREATE INDEX item_versions_record ON item_versions(database, record_name, saved_at);
                CREATE INDEX item_versions_former ON item_versions(database, saved_at) WHERE current = 0;
                CREATE INDEX item_versions_asset ON item_versions(asset_checksum) WHERE asset_checksum IS NOT NULL;
                CREATE TABLE trashed_items (id INTEGER PRIMARY KEY, database INTEGER NOT NULL, record_name TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, deleted_at INTEGER NOT NULL, deleted_by TEXT NOT NULL, size INTEGER NOT NULL, asset_checksum TEXT, fields TEXT NOT NULL);
                CREATE INDEX trashed_items_database ON trashed_items(database, deleted_at);
                CREATE INDEX trashed_items_age ON trashed_items(deleted_at);
                CREATE INDEX trashed_items_asset ON trashed_items(asset_checksum) WHERE asset_checksum IS NOT NULL;
                """)
        }
        // Read-only share links of the web's Drive (Web/, docs/web.md): a token's digest, the
        // shared item, its expiry and an optional password.
        migrator.registerMigration("v14-share-links") { db in
            try db.execute(sql: """
                CREATE TABLE share_links (digest TEXT PRIMARY KEY, database INTEGER NOT NULL, record_name TEXT NOT NULL, path TEXT NOT NULL, created_at INTEGER NOT NULL, expires_at INTEGER NOT NULL, password_hash TEXT);
                CREATE INDEX share_links_database ON share_links(database, created_at);
                """)
        }
        // The Drive's index of each synced folder (Web/DriveIndexer.swift, docs/web.md): one row per
        // live item of a private documents zone, by folder and lower-cased name; filled from the
        // records there.
        migrator.registerMigration("v15-drive-index") { db in
            try db.execute(sql: """
                CREATE TABLE drive_items (database INTEGER NOT NULL, record_name TEXT NOT NULL, parent TEXT NOT NULL, name TEXT NOT NULL, folded TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL, modified INTEGER NOT NULL, PRIMARY KEY (database, record_name));
                CREATE INDEX drive_items_folder ON drive_items(database, parent, folded);
                CREATE INDEX drive_items_search ON drive_items(database, folded, kind, name, parent, size, modified, record_name);
                """)
            let items = try Row.fetchAll(db, sql: """
                SELECT z.database AS database, r.name AS name, json_extract(r.fields, '$.path.value') AS path, json_extract(r.fields, '$.kind.value') AS kind,
                       json_extract(r.fields, '$.size.value') AS size, json_extract(r.fields, '$.modified.value') AS modified, r.modified_at AS modified_at
                FROM records r JOIN zones z ON z.id = r.zone JOIN databases d ON d.id = z.database
                WHERE z.name = '_ubiquityDocuments' AND z.deleted = 0 AND d.scope = 'private' AND r.deleted = 0 AND r.type = 'UbiquityItem'
                """)
            let insert = try db.makeStatement(sql: """
                INSERT OR REPLACE INTO drive_items (database, record_name, parent, name, folded, kind, size, modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """)
            for item in items {
                guard let path: String = item["path"], !path.isEmpty, let kind: String = item["kind"] else { continue }
                let name = path.split(separator: "/").last.map(String.init) ?? path
                let parent = DriveItem.parent(of: path)
                let modified: Int64 = item["modified"] ?? item["modified_at"]
                try insert.execute(arguments: [item["database"], item["name"], parent, name, name.lowercased(), kind, item["size"] ?? Int64(0), modified])
            }
        }
        // The developers of each container, who may open it in the web's Console (Console/,
        // docs/web.md); `ubiq admin container developers` adds and removes them.
        migrator.registerMigration("v16-container-developers") { db in
            try db.execute(sql: """
                CREATE TABLE container_developers (container TEXT NOT NULL, account INTEGER NOT NULL REFERENCES accounts(id), added_at INTEGER NOT NULL, PRIMARY KEY (container, account));
                CREATE INDEX container_developers_account ON container_developers(account);
                """)
        }
        return migrator
    }
}
