// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// `RecordStoreTransaction` over one PostgreSQL connection inside a transaction: the same
/// statements as `SQLiteTransaction`, in PostgreSQL's dialect. Inserts that may meet an existing
/// row use `ON CONFLICT DO NOTHING` and throw `alreadyExists` themselves, so the transaction stays
/// usable (a failed statement would abort it).
final class PostgresTransaction: RecordStoreTransaction {
    let session: PostgresSession

    init(session: PostgresSession) {
        self.session = session
    }

    // MARK: Containers and credentials

    func addContainer(_ identifier: String, createdAt: Int64) throws {
        try session.execute("INSERT INTO containers (identifier, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                            [.text(identifier), .int(createdAt)])
    }

    func containerExists(_ identifier: String) throws -> Bool {
        try session.row("SELECT 1 FROM containers WHERE identifier = $1", [.text(identifier)]) != nil
    }

    func containers() throws -> [String] {
        try session.rows("SELECT identifier FROM containers ORDER BY identifier").map { try $0.value("identifier") }
    }

    func addAPIToken(container: String, digest: String, createdAt: Int64) throws {
        let inserted = try session.row("INSERT INTO api_tokens (digest, container, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1",
                                       [.text(digest), .text(container), .int(createdAt)])
        if inserted == nil { throw UbiquityError(.alreadyExists, "the API token exists") }
    }

    func container(forAPITokenDigest digest: String) throws -> String? {
        try session.row("SELECT container FROM api_tokens WHERE digest = $1", [.text(digest)]).map { try $0.value("container") }
    }

    func addAccount(name: String, email: String?, passwordHash: String?, createdAt: Int64) throws -> StoredAccount {
        let row = try session.row("""
            INSERT INTO accounts (name, email, password_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING id
            """, [.text(name), .text(email), .text(passwordHash), .int(createdAt)])
        guard let row else {
            throw UbiquityError(.alreadyExists, "an account named \(name)\(email.map { " or with e-mail \($0)" } ?? "") exists")
        }
        return StoredAccount(id: try row.value("id"), name: name, email: email, passwordHash: passwordHash, createdAt: createdAt)
    }

    private func account(_ row: PostgresRandomAccessRow?) throws -> StoredAccount? {
        guard let row else { return nil }
        return StoredAccount(id: try row.value("id"), name: try row.value("name"), email: try row.value("email"),
                             passwordHash: try row.value("password_hash"), createdAt: try row.value("created_at"))
    }

    func account(named name: String) throws -> StoredAccount? {
        try account(session.row("SELECT id, name, email, password_hash, created_at FROM accounts WHERE name = $1", [.text(name)]))
    }

    func account(id: Int64) throws -> StoredAccount? {
        try account(session.row("SELECT id, name, email, password_hash, created_at FROM accounts WHERE id = $1", [.int(id)]))
    }

    func addWebAuthToken(accountID: Int64, digest: String, createdAt: Int64, expiresAt: Int64) throws {
        let inserted = try session.row("""
            INSERT INTO web_auth_tokens (digest, account, created_at, expires_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1
            """, [.text(digest), .int(accountID), .int(createdAt), .int(expiresAt)])
        if inserted == nil { throw UbiquityError(.alreadyExists, "the web-auth token exists") }
    }

    func account(forWebAuthTokenDigest digest: String, now: Int64) throws -> StoredAccount? {
        try account(session.row("""
            SELECT accounts.id, accounts.name, accounts.email, accounts.password_hash, accounts.created_at
            FROM web_auth_tokens JOIN accounts ON accounts.id = web_auth_tokens.account
            WHERE web_auth_tokens.digest = $1 AND web_auth_tokens.expires_at > $2
            """, [.text(digest), .int(now)]))
    }

    func addServerKey(container: String, keyID: String, publicKeyPEM: String, createdAt: Int64) throws {
        let inserted = try session.row("""
            INSERT INTO server_keys (container, key_id, public_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1
            """, [.text(container), .text(keyID), .text(publicKeyPEM), .int(createdAt)])
        if inserted == nil { throw UbiquityError(.alreadyExists, "container \(container) has a server key \(keyID)") }
    }

    func serverKey(container: String, keyID: String) throws -> String? {
        try session.row("SELECT public_key FROM server_keys WHERE container = $1 AND key_id = $2", [.text(container), .text(keyID)])
            .map { try $0.value("public_key") }
    }

    // MARK: Databases and zones

    func lockDatabase(_ key: DatabaseKey) throws -> StoredDatabase {
        let parameters: [PostgresParameter] = [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner)]
        try session.execute("INSERT INTO databases (container, environment, scope, owner) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", parameters)
        guard let row = try session.row("""
            SELECT id, sequence FROM databases WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4 FOR UPDATE
            """, parameters) else {
            throw UbiquityError(.io, "the record store did not return database \(key)")
        }
        return StoredDatabase(id: try row.value("id"), key: key, sequence: try row.value("sequence"))
    }

    func database(_ key: DatabaseKey) throws -> StoredDatabase? {
        try session.row("SELECT id, sequence FROM databases WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4",
                        [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner)])
            .map { StoredDatabase(id: try $0.value("id"), key: key, sequence: try $0.value("sequence")) }
    }

    private static let zoneColumns = "id, database, name, sequence, purged_through, deleted, created_at, database_sequence"

    private func zone(_ row: PostgresRandomAccessRow) throws -> StoredZone {
        StoredZone(id: try row.value("id"), database: try row.value("database"), name: try row.value("name"), sequence: try row.value("sequence"),
                   purgedThrough: try row.value("purged_through"), deleted: try row.value("deleted"), createdAt: try row.value("created_at"))
    }

    func zone(database: Int64, name: String) throws -> StoredZone? {
        try session.row("SELECT \(Self.zoneColumns) FROM zones WHERE database = $1 AND name = $2 AND NOT deleted", [.int(database), .text(name)])
            .map(zone)
    }

    func zone(id: Int64) throws -> StoredZone? {
        try session.row("SELECT \(Self.zoneColumns) FROM zones WHERE id = $1", [.int(id)]).map(zone)
    }

    func zones(database: Int64) throws -> [StoredZone] {
        try session.rows("SELECT \(Self.zoneColumns) FROM zones WHERE database = $1 AND NOT deleted ORDER BY name", [.int(database)]).map(zone)
    }

    func createZone(database: Int64, name: String, createdAt: Int64) throws -> StoredZone {
        guard let row = try session.row("""
            INSERT INTO zones (database, name, created_at) VALUES ($1, $2, $3)
            ON CONFLICT (database, name) WHERE NOT deleted DO NOTHING RETURNING \(Self.zoneColumns)
            """, [.int(database), .text(name), .int(createdAt)]) else {
            throw UbiquityError(.alreadyExists, "a zone named \(name) exists in database \(database)")
        }
        return try zone(row)
    }

    func deleteZone(id: Int64) throws {
        try session.execute("DELETE FROM record_index WHERE record IN (SELECT id FROM records WHERE zone = $1)", [.int(id)])
        try session.execute("DELETE FROM records WHERE zone = $1", [.int(id)])
        try session.execute("UPDATE zones SET deleted = TRUE WHERE id = $1", [.int(id)])
    }

    func noteZoneChanged(database: Int64, zone: Int64) throws -> Int64 {
        guard let row = try session.row("UPDATE databases SET sequence = sequence + 1 WHERE id = $1 RETURNING sequence", [.int(database)]) else {
            throw UbiquityError(.notFound, "no database \(database) in the record store")
        }
        let sequence: Int64 = try row.value("sequence")
        try session.execute("UPDATE zones SET database_sequence = $1 WHERE id = $2", [.int(sequence), .int(zone)])
        return sequence
    }

    func zoneChanges(database: Int64, after sequence: Int64, limit: Int) throws -> [StoredZoneChange] {
        try session.rows("""
            SELECT \(Self.zoneColumns) FROM zones WHERE database = $1 AND database_sequence > $2 ORDER BY database_sequence LIMIT $3
            """, [.int(database), .int(sequence), Self.limit(limit)])
            .map { StoredZoneChange(zone: try zone($0), sequence: try $0.value("database_sequence")) }
    }

    func nextZoneSequence(zone: Int64) throws -> Int64 {
        guard let row = try session.row("UPDATE zones SET sequence = sequence + 1 WHERE id = $1 RETURNING sequence", [.int(zone)]) else {
            throw UbiquityError(.notFound, "no zone \(zone) in the record store")
        }
        return try row.value("sequence")
    }

    func purgeTombstones(zone: Int64, through sequence: Int64) throws {
        try session.execute("DELETE FROM records WHERE zone = $1 AND deleted AND sequence <= $2", [.int(zone), .int(sequence)])
        try session.execute("UPDATE zones SET purged_through = GREATEST(purged_through, $1) WHERE id = $2", [.int(sequence), .int(zone)])
    }

    /// SQLite reads a negative `LIMIT` as no limit; `LIMIT NULL` is PostgreSQL's.
    private static func limit(_ limit: Int) -> PostgresParameter {
        .int(limit < 0 ? nil : Int64(limit))
    }

    // MARK: Records

    private static let recordColumns = "id, zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, parent, short_guid"

    private func record(_ row: PostgresRandomAccessRow) throws -> StoredRecord {
        let deleted: Bool = try row.value("deleted")
        let fieldsText: String = try row.value("fields")
        return StoredRecord(
            zone: try row.value("zone"), recordName: try row.value("name"), recordType: try row.value("type"), changeTag: try row.value("change_tag"),
            sequence: try row.value("sequence"), deleted: deleted, fields: deleted ? [:] : try StoredRecord.decodeFields(fieldsText),
            created: WireRecordStamp(timestamp: try row.value("created_at"), userRecordName: try row.value("created_by"), deviceID: try row.value("created_device")),
            modified: WireRecordStamp(timestamp: try row.value("modified_at"), userRecordName: try row.value("modified_by"), deviceID: try row.value("modified_device")),
            parent: try row.value("parent"), shortGUID: try row.value("short_guid"))
    }

    func record(zone: Int64, name: String) throws -> StoredRecord? {
        try session.row("SELECT \(Self.recordColumns) FROM records WHERE zone = $1 AND name = $2", [.int(zone), .text(name)]).map(record)
    }

    /// Index rows per `INSERT` (5 parameters each, plus the record id: far below the 65,535 limit).
    private static let indexRowsPerStatement = 1000

    func putRecord(_ stored: StoredRecord) throws {
        let fields = stored.deleted ? "{}" : stored.fieldsJSON
        guard let row = try session.row("""
            INSERT INTO records (zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device,
                                 modified_at, modified_by, modified_device, parent, short_guid)
            VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14, $15)
            ON CONFLICT (zone, name) DO UPDATE SET type = excluded.type, change_tag = excluded.change_tag, sequence = excluded.sequence,
                deleted = excluded.deleted, fields = excluded.fields, created_at = excluded.created_at, created_by = excluded.created_by,
                created_device = excluded.created_device, modified_at = excluded.modified_at, modified_by = excluded.modified_by,
                modified_device = excluded.modified_device, parent = excluded.parent, short_guid = excluded.short_guid
            RETURNING id
            """, [
                .int(stored.zone), .text(stored.recordName), .text(stored.recordType), .text(stored.changeTag), .int(stored.sequence),
                .bool(stored.deleted), .text(fields), .int(stored.created.timestamp), .text(stored.created.userRecordName),
                .text(stored.created.deviceID), .int(stored.modified.timestamp), .text(stored.modified.userRecordName),
                .text(stored.modified.deviceID), .text(stored.parent), .text(stored.shortGUID),
            ]) else {
            throw UbiquityError(.io, "the record store did not return the row of record \(stored.recordName)")
        }
        let id: Int64 = try row.value("id")
        try session.execute("DELETE FROM record_index WHERE record = $1", [.int(id)])
        guard !stored.deleted else { return }
        let zoneName = try session.row("SELECT name FROM zones WHERE id = $1", [.int(stored.zone)]).map { try $0.value("name", as: String.self) }
            ?? WireZoneID.defaultZoneName
        let entries = RecordIndexEntry.entries(for: stored, zoneName: zoneName)
        var start = entries.startIndex
        while start < entries.endIndex {
            let end = min(start + Self.indexRowsPerStatement, entries.endIndex)
            var parameters: [PostgresParameter] = [.int(id)]
            var rows: [String] = []
            for item in entries[start..<end] {
                let first = parameters.count + 1
                rows.append("($1, $\(first), $\(first + 1)::DOUBLE PRECISION, $\(first + 2)::TEXT, $\(first + 3)::DOUBLE PRECISION, $\(first + 4)::DOUBLE PRECISION)")
                parameters += [.text(item.field), .double(item.number), .text(item.text), .double(item.latitude), .double(item.longitude)]
            }
            try session.execute("INSERT INTO record_index (record, field, number, text, latitude, longitude) VALUES \(rows.joined(separator: ", "))", parameters)
            start = end
        }
    }

    func changes(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) throws -> [StoredRecord] {
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = $1 AND sequence > $2"
        var parameters: [PostgresParameter] = [.int(zone), .int(sequence)]
        if let recordTypes {
            parameters.append(.texts(recordTypes))
            sql += " AND (deleted OR type = ANY($\(parameters.count)))"
        }
        parameters.append(Self.limit(limit))
        sql += " ORDER BY sequence LIMIT $\(parameters.count)"
        return try session.rows(sql, parameters).map(record)
    }

    func candidates(zones: [Int64], recordType: String, conditions: [IndexCondition]) throws -> [StoredRecord] {
        guard !zones.isEmpty else { return [] }
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = ANY($1) AND type = $2 AND NOT deleted"
        var parameters: [PostgresParameter] = [.ints(zones), .text(recordType)]
        for condition in conditions {
            let (clause, values) = IndexConditionSQL.clause(condition, placeholder: { "$\($0)" }, startIndex: parameters.count)
            sql += " AND id IN (SELECT record FROM record_index WHERE \(clause))"
            parameters += values.map { value -> PostgresParameter in
                switch value {
                case .number(let number): return .double(number)
                case .text(let text): return .text(text)
                }
            }
        }
        sql += " ORDER BY id"
        return try session.rows(sql, parameters).map(record)
    }

    func referencing(zones: [Int64], targetZone: String, targetName: String) throws -> [StoredRecord] {
        guard !zones.isEmpty else { return [] }
        let key = RecordIndexEntry.indexedText(RecordIndexEntry.referenceKey(zoneName: targetZone, recordName: targetName))
        return try session.rows("""
            SELECT \(Self.recordColumns) FROM records WHERE id IN (SELECT record FROM record_index WHERE text = $1 AND field NOT LIKE '\\_\\_\\_%' ESCAPE '\\')
            AND zone = ANY($2) AND NOT deleted ORDER BY id
            """, [.text(key), .ints(zones)]).map(record)
    }

    // MARK: Schema

    func fieldTypes(container: String, environment: CloudKitEnvironment, recordType: String) throws -> [String: String] {
        let rows = try session.rows("SELECT field, type FROM schema_fields WHERE container = $1 AND environment = $2 AND record_type = $3",
                                    [.text(container), .text(environment.rawValue), .text(recordType)])
        return Dictionary(try rows.map { (try $0.value("field", as: String.self), try $0.value("type", as: String.self)) },
                          uniquingKeysWith: { first, _ in first })
    }

    func addFieldTypes(container: String, environment: CloudKitEnvironment, recordType: String, types: [String: String]) throws {
        for (field, type) in types {
            try session.execute("""
                INSERT INTO schema_fields (container, environment, record_type, field, type) VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING
                """, [.text(container), .text(environment.rawValue), .text(recordType), .text(field), .text(type)])
        }
    }
}
