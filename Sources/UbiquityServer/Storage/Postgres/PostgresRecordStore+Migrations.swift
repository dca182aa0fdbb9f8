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
        // The system fields that are columns of `records` are no longer duplicated in the index;
        // locations are indexed by (latitude, longitude) so a NEAR box is answered from the index.
        Migration(identifier: "v2-lean-index", statements: [
            "DELETE FROM record_index WHERE field IN (\(RecordIndexEntry.columnSystemFields.map { "'\($0)'" }.joined(separator: ", ")))",
            "DROP INDEX record_index_geo",
            "CREATE INDEX record_index_geo ON record_index(field, latitude, longitude) WHERE latitude IS NOT NULL",
        ]),
        // Subscriptions, per-user notification logs and push tokens (Subscriptions/, docs/push.md).
        Migration(identifier: "v3-subscriptions", statements: [
            #"CREATE TABLE subscriptions (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, scope TEXT COLLATE "C" NOT NULL, owner TEXT COLLATE "C" NOT NULL, subscriber TEXT COLLATE "C" NOT NULL, subscription_id TEXT COLLATE "C" NOT NULL, kind TEXT COLLATE "C" NOT NULL, query TEXT COLLATE "C", zone_name TEXT COLLATE "C", zone_wide BOOLEAN NOT NULL, fires_on BIGINT NOT NULL, fires_once BOOLEAN NOT NULL, notification_info TEXT COLLATE "C", created_at BIGINT NOT NULL, PRIMARY KEY (container, environment, scope, owner, subscriber, subscription_id))"#,
            #"CREATE TABLE subscription_generations (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, scope TEXT COLLATE "C" NOT NULL, owner TEXT COLLATE "C" NOT NULL, generation BIGINT NOT NULL, PRIMARY KEY (container, environment, scope, owner))"#,
            #"CREATE TABLE notification_logs (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, user_name TEXT COLLATE "C" NOT NULL, head BIGINT NOT NULL, floor BIGINT NOT NULL, PRIMARY KEY (container, environment, user_name))"#,
            #"CREATE TABLE notifications (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, user_name TEXT COLLATE "C" NOT NULL, sequence BIGINT NOT NULL, notification_id TEXT COLLATE "C" NOT NULL, payload TEXT COLLATE "C" NOT NULL, created_at BIGINT NOT NULL, PRIMARY KEY (container, environment, user_name, sequence))"#,
            #"CREATE INDEX notifications_id ON notifications(container, environment, user_name, notification_id)"#,
            #"CREATE INDEX notifications_age ON notifications(created_at)"#,
            #"CREATE TABLE push_tokens (digest TEXT COLLATE "C" PRIMARY KEY, container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, user_name TEXT COLLATE "C" NOT NULL, apns_environment TEXT COLLATE "C" NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL)"#,
        ]),
        // Assets: which records refer to which content (garbage collection), each database's
        // usage (quotas) and the server's secrets (the asset signing key) (docs/assets.md).
        Migration(identifier: "v4-assets", statements: [
            #"CREATE TABLE server_secrets (name TEXT COLLATE "C" PRIMARY KEY, value TEXT COLLATE "C" NOT NULL, created_at BIGINT NOT NULL)"#,
            #"CREATE TABLE record_assets (record BIGINT NOT NULL, checksum TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL, PRIMARY KEY (record, checksum))"#,
            #"CREATE TABLE database_assets (database BIGINT NOT NULL, checksum TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL, refs BIGINT NOT NULL, PRIMARY KEY (database, checksum))"#,
            #"CREATE INDEX database_assets_checksum ON database_assets(checksum)"#,
            #"CREATE TABLE database_usage (database BIGINT PRIMARY KEY, record_bytes BIGINT NOT NULL DEFAULT 0, asset_bytes BIGINT NOT NULL DEFAULT 0)"#,
            """
            INSERT INTO database_usage (database, record_bytes, asset_bytes)
            SELECT zones.database, SUM(octet_length(records.fields))::BIGINT, 0 FROM records JOIN zones ON zones.id = records.zone
            WHERE NOT records.deleted GROUP BY zones.database
            """,
        ]),
        // Users: name components of accounts, and each account's identity per container (its user
        // record name there and whether it is discoverable) (Users/, docs/server.md).
        Migration(identifier: "v5-users", statements: [
            #"ALTER TABLE accounts ADD COLUMN given_name TEXT COLLATE "C""#,
            #"ALTER TABLE accounts ADD COLUMN family_name TEXT COLLATE "C""#,
            #"ALTER TABLE accounts ADD COLUMN middle_name TEXT COLLATE "C""#,
            #"ALTER TABLE accounts ADD COLUMN nickname TEXT COLLATE "C""#,
            #"ALTER TABLE accounts ADD COLUMN name_prefix TEXT COLLATE "C""#,
            #"ALTER TABLE accounts ADD COLUMN name_suffix TEXT COLLATE "C""#,
            #"CREATE INDEX accounts_email_lower ON accounts(lower(email))"#,
            #"CREATE TABLE user_identities (account BIGINT NOT NULL REFERENCES accounts(id), container TEXT COLLATE "C" NOT NULL, user_record_name TEXT COLLATE "C" NOT NULL, discoverable BOOLEAN NOT NULL DEFAULT FALSE, created_at BIGINT NOT NULL, PRIMARY KEY (account, container), UNIQUE (container, user_record_name))"#,
        ]),
        // Schemas: index flags of fields, record types (also those without fields), per-type
        // public-database permissions of roles, named roles and their members (Schema/,
        // docs/server.md "Schema and environments"). Existing types get CloudKit's defaults.
        Migration(identifier: "v6-schema", statements: [
            "ALTER TABLE schema_fields ADD COLUMN queryable BOOLEAN NOT NULL DEFAULT TRUE",
            "ALTER TABLE schema_fields ADD COLUMN sortable BOOLEAN NOT NULL DEFAULT TRUE",
            "ALTER TABLE schema_fields ADD COLUMN searchable BOOLEAN NOT NULL DEFAULT FALSE",
            "UPDATE schema_fields SET searchable = TRUE WHERE type IN ('STRING', 'STRING_LIST')",
            #"CREATE TABLE schema_types (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, record_type TEXT COLLATE "C" NOT NULL, PRIMARY KEY (container, environment, record_type))"#,
            "INSERT INTO schema_types (container, environment, record_type) SELECT DISTINCT container, environment, record_type FROM schema_fields",
            #"CREATE TABLE schema_permissions (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, record_type TEXT COLLATE "C" NOT NULL, role TEXT COLLATE "C" NOT NULL, permissions BIGINT NOT NULL, PRIMARY KEY (container, environment, record_type, role))"#,
            "INSERT INTO schema_permissions SELECT container, environment, record_type, '_world', 2 FROM schema_types",
            "INSERT INTO schema_permissions SELECT container, environment, record_type, '_icloud', 1 FROM schema_types",
            "INSERT INTO schema_permissions SELECT container, environment, record_type, '_creator', 6 FROM schema_types",
            #"CREATE TABLE schema_roles (container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, role TEXT COLLATE "C" NOT NULL, PRIMARY KEY (container, environment, role))"#,
            #"CREATE TABLE role_members (container TEXT COLLATE "C" NOT NULL, role TEXT COLLATE "C" NOT NULL, user_record_name TEXT COLLATE "C" NOT NULL, PRIMARY KEY (container, role, user_record_name))"#,
            "CREATE INDEX role_members_user ON role_members(container, user_record_name)",
        ]),
        // Tokens bound to a container, grouped in sessions that rotation carries on, and
        // accounts an administrator disabled (issue 24, findings 9 and 10). Earlier tokens stay
        // valid in any container, each its own session; those issued for a year are devices'.
        Migration(identifier: "v7-token-sessions", statements: [
            #"ALTER TABLE web_auth_tokens ADD COLUMN container TEXT COLLATE "C""#,
            #"ALTER TABLE web_auth_tokens ADD COLUMN session TEXT COLLATE "C""#,
            "ALTER TABLE web_auth_tokens ADD COLUMN device BOOLEAN NOT NULL DEFAULT FALSE",
            "UPDATE web_auth_tokens SET session = digest, device = (expires_at - created_at > 30 * 86400000::BIGINT)",
            "CREATE INDEX web_auth_tokens_session ON web_auth_tokens(session)",
            "CREATE INDEX web_auth_tokens_account ON web_auth_tokens(account)",
            "ALTER TABLE accounts ADD COLUMN disabled_at BIGINT",
        ]),
        // The sign-in guard's counts, shared by the server's processes and kept across restarts
        // (issue 24, finding 6). Times are seconds since 1970.
        Migration(identifier: "v8-sign-in-backoffs", statements: [
            #"CREATE TABLE sign_in_backoffs (key TEXT COLLATE "C" PRIMARY KEY, failures BIGINT NOT NULL, blocked_until DOUBLE PRECISION NOT NULL, last_failure DOUBLE PRECISION NOT NULL)"#,
        ]),
        // The tag a field's type was guessed from, when a value without `type` made it
        // (SchemaField.guess, issue 26): NULL for the fields before, whose types stand.
        Migration(identifier: "v9-schema-guesses", statements: [
            #"ALTER TABLE schema_fields ADD COLUMN guess TEXT COLLATE "C""#,
        ]),
        // The web origins a container's sign-in page may hand a token to (CloudKit's "Allowed
        // Origins"; `ubiq admin container origins`).
        Migration(identifier: "v10-container-origins", statements: [
            #"CREATE TABLE container_origins (container TEXT COLLATE "C" NOT NULL REFERENCES containers(identifier), origin TEXT COLLATE "C" NOT NULL, PRIMARY KEY (container, origin))"#,
        ]),
        // Query indexes (QueryIndexDefinition, issue 26): their definitions per container
        // environment and one key per index and live record, in key order per zone (`bytea`
        // compares as SQLite's BLOB does; the record rides in the index for index-only scans).
        Migration(identifier: "v11-query-indexes", statements: [
            #"CREATE TABLE query_indexes (id BIGSERIAL PRIMARY KEY, container TEXT COLLATE "C" NOT NULL, environment TEXT COLLATE "C" NOT NULL, record_type TEXT COLLATE "C" NOT NULL, definition TEXT COLLATE "C" NOT NULL, ready BOOLEAN NOT NULL DEFAULT FALSE, created_at BIGINT NOT NULL, UNIQUE (container, environment, record_type, definition))"#,
            "CREATE TABLE record_keys (query_index BIGINT NOT NULL, zone BIGINT NOT NULL, key BYTEA NOT NULL, record BIGINT NOT NULL, PRIMARY KEY (query_index, zone, key) INCLUDE (record))",
            "CREATE INDEX record_keys_record ON record_keys(record)",
        ]),
        // NEAR from a spatial index: GiST over each location row's point (longitude, latitude),
        // built in (no extension needed), in place of the B-tree on (field, latitude, longitude).
        Migration(identifier: "v12-record-locations", statements: [
            "CREATE INDEX record_index_space ON record_index USING gist (point(longitude, latitude)) WHERE latitude IS NOT NULL",
            "DROP INDEX record_index_geo",
        ]),
        // The documents' server history (History/, docs/history.md).
        Migration(identifier: "v13-document-history", statements: [
            #"CREATE TABLE item_versions (id BIGSERIAL PRIMARY KEY, database BIGINT NOT NULL, record_name TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL, saved_at BIGINT NOT NULL, saved_by TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL, content_hash TEXT COLLATE "C" NOT NULL, asset_checksum TEXT COLLATE "C", fields TEXT COLLATE "C" NOT NULL, current BOOLEAN NOT NULL)"#,
            "CREATE INDEX item_versions_record ON item_versions(database, record_name, saved_at)",
            "CREATE INDEX item_versions_former ON item_versions(database, saved_at) WHERE NOT current",
            "CREATE INDEX item_versions_asset ON item_versions(asset_checksum) WHERE asset_checksum IS NOT NULL",
            #"CREATE TABLE trashed_items (id BIGSERIAL PRIMARY KEY, database BIGINT NOT NULL, record_name TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL, kind TEXT COLLATE "C" NOT NULL, deleted_at BIGINT NOT NULL, deleted_by TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL, asset_checksum TEXT COLLATE "C", fields TEXT COLLATE "C" NOT NULL)"#,
            "CREATE INDEX trashed_items_database ON trashed_items(database, deleted_at)",
            "CREATE INDEX trashed_items_age ON trashed_items(deleted_at)",
            "CREATE INDEX trashed_items_asset ON trashed_items(asset_checksum) WHERE asset_checksum IS NOT NULL",
        ]),
        // Read-only share links of the web's Drive (Web/, docs/web.md).
        Migration(identifier: "v14-share-links", statements: [
            #"CREATE TABLE share_links (digest TEXT COLLATE "C" PRIMARY KEY, database BIGINT NOT NULL, record_name TEXT COLLATE "C" NOT NULL, path TEXT COLLATE "C" NOT NULL, created_at BIGINT NOT NULL, expires_at BIGINT NOT NULL, password_hash TEXT COLLATE "C")"#,
            "CREATE INDEX share_links_database ON share_links(database, created_at)",
        ]),
        // The Drive's index of each synced folder (Web/DriveIndexer.swift, docs/web.md), filled from
        // the records of the private documents zones.
        Migration(identifier: "v15-drive-index", statements: [
            #"CREATE TABLE drive_items (database BIGINT NOT NULL, record_name TEXT COLLATE "C" NOT NULL, parent TEXT COLLATE "C" NOT NULL, name TEXT COLLATE "C" NOT NULL, folded TEXT COLLATE "C" NOT NULL, kind TEXT COLLATE "C" NOT NULL, size BIGINT NOT NULL, modified BIGINT NOT NULL, PRIMARY KEY (database, record_name))"#,
            "CREATE INDEX drive_items_folder ON drive_items(database, parent, folded)",
            "CREATE INDEX drive_items_search ON drive_items(database, folded) INCLUDE (kind, name, parent, size, modified, record_name)",
            """
            INSERT INTO drive_items (database, record_name, parent, name, folded, kind, size, modified)
            SELECT z.database, r.name, CASE WHEN position('/' in p.path) > 0 THEN regexp_replace(p.path, '/[^/]*$', '') ELSE '' END,
                   regexp_replace(p.path, '^.*/', ''), lower(regexp_replace(p.path, '^.*/', '')), r.fields::json->'kind'->>'value',
                   COALESCE((r.fields::json->'size'->>'value')::bigint, 0), COALESCE((r.fields::json->'modified'->>'value')::bigint, r.modified_at)
            FROM records r JOIN zones z ON z.id = r.zone JOIN databases d ON d.id = z.database
                CROSS JOIN LATERAL (SELECT r.fields::json->'path'->>'value' AS path) p
            WHERE z.name = '_ubiquityDocuments' AND NOT z.deleted AND d.scope = 'private' AND NOT r.deleted AND r.type = 'UbiquityItem'
                AND p.path IS NOT NULL AND p.path <> '' AND r.fields::json->'kind'->>'value' IS NOT NULL
            """,
        ]),
        // The developers of each container, who may open it in the web's Console (Console/, docs/web.md).
        Migration(identifier: "v16-container-developers", statements: [
            #"CREATE TABLE container_developers (container TEXT COLLATE "C" NOT NULL, account BIGINT NOT NULL REFERENCES accounts(id), added_at BIGINT NOT NULL, PRIMARY KEY (container, account))"#,
            "CREATE INDEX container_developers_account ON container_developers(account)",
        ]),
    ]

    /// `"name"` with inner quotes doubled: an identifier in SQL text (DDL takes no parameters).
    static func quotedIdentifier(_ name: String) -> String {
        "\"" + name.replacingOccurrences(of: "\"", with: "\"\"") + "\""
    }

    /// Creates the schema (when one is set) and applies the migrations not applied yet, in one
    /// transaction under `pg_advisory_xact_lock`, so that processes starting at once neither race
    /// nor apply a migration twice. Applied migrations are listed in `ubiquity_migrations`.
    static func migrate(session: PostgresSession, schema: String?, now: Int64) async throws -> [String] {
        try await session.execute("SELECT pg_advisory_xact_lock($1)", [.int(migrationLockKey)])
        if let schema {
            try await session.execute("CREATE SCHEMA IF NOT EXISTS \(quotedIdentifier(schema))")
        }
        try await session.execute(#"CREATE TABLE IF NOT EXISTS ubiquity_migrations (identifier TEXT COLLATE "C" PRIMARY KEY, applied_at BIGINT NOT NULL)"#)
        let applied = Set(try await session.rows("SELECT identifier FROM ubiquity_migrations").map { try $0.value("identifier", as: String.self) })
        var newlyApplied: [String] = []
        for migration in migrations where !applied.contains(migration.identifier) {
            for statement in migration.statements { try await session.execute(statement) }
            try await session.execute("INSERT INTO ubiquity_migrations (identifier, applied_at) VALUES ($1, $2)", [.text(migration.identifier), .int(now)])
            newlyApplied.append(migration.identifier)
        }
        return newlyApplied
    }
}
