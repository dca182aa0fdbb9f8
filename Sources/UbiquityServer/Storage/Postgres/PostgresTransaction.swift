// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore
import UbiquityWire

/// `RecordStoreTransaction` over one PostgreSQL connection inside a transaction: the same
/// statements as `SQLiteTransaction`, in PostgreSQL's dialect. Inserts that may meet an existing
/// row use `ON CONFLICT DO NOTHING` and throw `alreadyExists` themselves, so the transaction stays
/// usable (a failed statement would abort it).
final class PostgresTransaction: RecordStoreTransaction {
    let session: PostgresSession
    /// Records (and tombstones) written so far (``PostgresStatistics``).
    private(set) var recordsWritten = 0

    init(session: PostgresSession) {
        self.session = session
    }

    // MARK: Containers and credentials

    func addContainer(_ identifier: String, createdAt: Int64) async throws {
        try await session.execute("INSERT INTO containers (identifier, created_at) VALUES ($1, $2) ON CONFLICT DO NOTHING",
                            [.text(identifier), .int(createdAt)])
    }

    func containerExists(_ identifier: String) async throws -> Bool {
        try await session.row("SELECT 1 FROM containers WHERE identifier = $1", [.text(identifier)]) != nil
    }

    func containers() async throws -> [String] {
        try await session.rows("SELECT identifier FROM containers ORDER BY identifier").map { try $0.value("identifier") }
    }

    func addAPIToken(container: String, digest: String, createdAt: Int64) async throws {
        let inserted = try await session.row("INSERT INTO api_tokens (digest, container, created_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1",
                                       [.text(digest), .text(container), .int(createdAt)])
        if inserted == nil { throw UbiquityError(.alreadyExists, "the API token exists") }
    }

    func container(forAPITokenDigest digest: String) async throws -> String? {
        try await session.row("SELECT container FROM api_tokens WHERE digest = $1", [.text(digest)]).map { try $0.value("container") }
    }

    func allowedOrigins(container: String) async throws -> [String] {
        try await session.rows("SELECT origin FROM container_origins WHERE container = $1 ORDER BY origin", [.text(container)]).map { try $0.value("origin") }
    }

    func setAllowedOrigin(_ allowed: Bool, container: String, origin: String) async throws {
        if allowed {
            try await session.execute("INSERT INTO container_origins (container, origin) VALUES ($1, $2) ON CONFLICT DO NOTHING", [.text(container), .text(origin)])
        } else {
            try await session.execute("DELETE FROM container_origins WHERE container = $1 AND origin = $2", [.text(container), .text(origin)])
        }
    }

    func addAccount(name: String, email: String?, passwordHash: String?, createdAt: Int64) async throws -> StoredAccount {
        let row = try await session.row("""
            INSERT INTO accounts (name, email, password_hash, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING id
            """, [.text(name), .text(email), .text(passwordHash), .int(createdAt)])
        guard let row else {
            throw UbiquityError(.alreadyExists, "an account named \(name)\(email.map { " or with e-mail \($0)" } ?? "") exists")
        }
        return StoredAccount(id: try row.value("id"), name: name, email: email, passwordHash: passwordHash, createdAt: createdAt)
    }

    /// The columns ``account(_:)`` decodes.
    static let accountColumns = "accounts.id, accounts.name, accounts.email, accounts.password_hash, accounts.created_at, accounts.disabled_at"

    func account(_ row: PostgresRandomAccessRow?) throws -> StoredAccount? {
        guard let row else { return nil }
        return StoredAccount(id: try row.value("id"), name: try row.value("name"), email: try row.value("email"),
                             passwordHash: try row.value("password_hash"), createdAt: try row.value("created_at"),
                             disabledAt: try row.value("disabled_at"))
    }

    func account(named name: String) async throws -> StoredAccount? {
        try await account(session.row("SELECT \(Self.accountColumns) FROM accounts WHERE name = $1", [.text(name)]))
    }

    func account(id: Int64) async throws -> StoredAccount? {
        try await account(session.row("SELECT \(Self.accountColumns) FROM accounts WHERE id = $1", [.int(id)]))
    }

    func addServerKey(container: String, keyID: String, publicKeyPEM: String, createdAt: Int64) async throws {
        let inserted = try await session.row("""
            INSERT INTO server_keys (container, key_id, public_key, created_at) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING RETURNING 1
            """, [.text(container), .text(keyID), .text(publicKeyPEM), .int(createdAt)])
        if inserted == nil { throw UbiquityError(.alreadyExists, "container \(container) has a server key \(keyID)") }
    }

    func serverKey(container: String, keyID: String) async throws -> String? {
        try await session.row("SELECT public_key FROM server_keys WHERE container = $1 AND key_id = $2", [.text(container), .text(keyID)])
            .map { try $0.value("public_key") }
    }

    // MARK: Databases and zones

    func lockDatabase(_ key: DatabaseKey) async throws -> StoredDatabase {
        let parameters: [PostgresParameter] = [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner)]
        try await session.execute("INSERT INTO databases (container, environment, scope, owner) VALUES ($1, $2, $3, $4) ON CONFLICT DO NOTHING", parameters)
        guard let row = try await session.row("""
            SELECT id, sequence FROM databases WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4 FOR UPDATE
            """, parameters) else {
            throw UbiquityError(.io, "the record store did not return database \(key)")
        }
        return StoredDatabase(id: try row.value("id"), key: key, sequence: try row.value("sequence"))
    }

    func database(_ key: DatabaseKey) async throws -> StoredDatabase? {
        try await session.row("SELECT id, sequence FROM databases WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4",
                        [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner)])
            .map { StoredDatabase(id: try $0.value("id"), key: key, sequence: try $0.value("sequence")) }
    }

    private static let zoneColumns = "id, database, name, sequence, purged_through, deleted, created_at, database_sequence"

    /// A zone from its columns, each named with `prefix` (when joined with a record's).
    private func zone(_ row: PostgresRandomAccessRow, prefix: String) throws -> StoredZone {
        StoredZone(id: try row.value(prefix + "id"), database: try row.value(prefix + "database"), name: try row.value(prefix + "name"),
                   sequence: try row.value(prefix + "sequence"), purgedThrough: try row.value(prefix + "purged_through"),
                   deleted: try row.value(prefix + "deleted"), createdAt: try row.value(prefix + "created_at"))
    }

    private func zone(_ row: PostgresRandomAccessRow) throws -> StoredZone {
        try zone(row, prefix: "")
    }

    func zone(database: Int64, name: String) async throws -> StoredZone? {
        try await session.row("SELECT \(Self.zoneColumns) FROM zones WHERE database = $1 AND name = $2 AND NOT deleted", [.int(database), .text(name)])
            .map(zone)
    }

    func zone(key: DatabaseKey, name: String) async throws -> StoredZone? {
        try await session.row(ZoneByKey.self, [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner), .text(name)])
            .map(zone)
    }

    /// The statement of ``zone(key:name:)``.
    enum ZoneByKey: PostgresStatement {
        static let name = "zone_by_key"
        static let sql = """
            SELECT \(QueryIndexSQL.qualified(PostgresTransaction.zoneColumns, by: "z")) FROM databases d JOIN zones z ON z.database = d.id
            WHERE d.container = $1 AND d.environment = $2 AND d.scope = $3 AND d.owner = $4 AND z.name = $5 AND NOT z.deleted
            """
    }

    func zone(id: Int64) async throws -> StoredZone? {
        try await session.row("SELECT \(Self.zoneColumns) FROM zones WHERE id = $1", [.int(id)]).map(zone)
    }

    func zones(database: Int64) async throws -> [StoredZone] {
        try await session.rows("SELECT \(Self.zoneColumns) FROM zones WHERE database = $1 AND NOT deleted ORDER BY name", [.int(database)]).map(zone)
    }

    func createZone(database: Int64, name: String, createdAt: Int64) async throws -> StoredZone {
        guard let row = try await session.row("""
            INSERT INTO zones (database, name, created_at) VALUES ($1, $2, $3)
            ON CONFLICT (database, name) WHERE NOT deleted DO NOTHING RETURNING \(Self.zoneColumns)
            """, [.int(database), .text(name), .int(createdAt)]) else {
            throw UbiquityError(.alreadyExists, "a zone named \(name) exists in database \(database)")
        }
        return try zone(row)
    }

    func deleteZone(id: Int64) async throws {
        try await releaseZoneAssets(zone: id)
        try await session.execute("DELETE FROM record_index WHERE record IN (SELECT id FROM records WHERE zone = $1)", [.int(id)])
        try await session.execute("DELETE FROM record_keys WHERE record IN (SELECT id FROM records WHERE zone = $1)", [.int(id)])
        try await session.execute("DELETE FROM records WHERE zone = $1", [.int(id)])
        try await session.execute("UPDATE zones SET deleted = TRUE WHERE id = $1", [.int(id)])
    }

    func noteZoneChanged(database: Int64, zone: Int64) async throws -> Int64 {
        guard let row = try await session.row("UPDATE databases SET sequence = sequence + 1 WHERE id = $1 RETURNING sequence", [.int(database)]) else {
            throw UbiquityError(.notFound, "no database \(database) in the record store")
        }
        let sequence: Int64 = try row.value("sequence")
        try await session.execute("UPDATE zones SET database_sequence = $1 WHERE id = $2", [.int(sequence), .int(zone)])
        return sequence
    }

    func zoneChanges(database: Int64, after sequence: Int64, limit: Int) async throws -> [StoredZoneChange] {
        try await session.rows("""
            SELECT \(Self.zoneColumns) FROM zones WHERE database = $1 AND database_sequence > $2 ORDER BY database_sequence LIMIT $3
            """, [.int(database), .int(sequence), Self.limit(limit)])
            .map { StoredZoneChange(zone: try zone($0), sequence: try $0.value("database_sequence")) }
    }

    func nextZoneSequence(zone: Int64) async throws -> Int64 {
        try await reserveZoneSequences(zone: zone, count: 1)
    }

    func reserveZoneSequences(zone: Int64, count: Int) async throws -> Int64 {
        guard let row = try await session.row("UPDATE zones SET sequence = sequence + $1 WHERE id = $2 RETURNING sequence", [.int(Int64(max(count, 1))), .int(zone)]) else {
            throw UbiquityError(.notFound, "no zone \(zone) in the record store")
        }
        return try row.value("sequence")
    }

    func purgeTombstones(zone: Int64, through sequence: Int64) async throws {
        try await session.execute("DELETE FROM records WHERE zone = $1 AND deleted AND sequence <= $2", [.int(zone), .int(sequence)])
        try await session.execute("UPDATE zones SET purged_through = GREATEST(purged_through, $1) WHERE id = $2", [.int(sequence), .int(zone)])
    }

    /// SQLite reads a negative `LIMIT` as no limit; `LIMIT NULL` is PostgreSQL's.
    static func limit(_ limit: Int) -> PostgresParameter {
        .int(limit < 0 ? nil : Int64(limit))
    }

    // MARK: Records

    static let recordColumns = "id, zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, parent, short_guid"

    func record(_ row: PostgresRandomAccessRow) throws -> StoredRecord {
        try record(row, decodingFields: true)
    }

    /// ``record(_:)``, its fields left empty unless `decodingFields`.
    func record(_ row: PostgresRandomAccessRow, decodingFields: Bool) throws -> StoredRecord {
        let deleted: Bool = try row.value("deleted")
        let fieldsText: String = try row.value("fields")
        return StoredRecord(
            zone: try row.value("zone"), recordName: try row.value("name"), recordType: try row.value("type"), changeTag: try row.value("change_tag"),
            sequence: try row.value("sequence"), deleted: deleted, fields: deleted || !decodingFields ? [:] : try StoredRecord.decodeFields(fieldsText),
            created: WireRecordStamp(timestamp: try row.value("created_at"), userRecordName: try row.value("created_by"), deviceID: try row.value("created_device")),
            modified: WireRecordStamp(timestamp: try row.value("modified_at"), userRecordName: try row.value("modified_by"), deviceID: try row.value("modified_device")),
            parent: try row.value("parent"), shortGUID: try row.value("short_guid"))
    }

    func record(zone: Int64, name: String) async throws -> StoredRecord? {
        try await session.row("SELECT \(Self.recordColumns) FROM records WHERE zone = $1 AND name = $2", [.int(zone), .text(name)]).map(record)
    }

    func records(zone: Int64, names: [String]) async throws -> [String: StoredRecord] {
        guard !names.isEmpty else { return [:] }
        let rows = try await session.rows("SELECT \(Self.recordColumns) FROM records WHERE zone = $1 AND name = ANY($2)", [.int(zone), .texts(names)])
        var found: [String: StoredRecord] = [:]
        for row in rows {
            let record = try record(row)
            found[record.recordName] = record
        }
        return found
    }

    /// Index rows per `INSERT` (5 parameters each, plus the record id: far below the 65,535 limit).
    private static let indexRowsPerStatement = 1000
    /// Records per `INSERT` (15 parameters each).
    private static let recordsPerStatement = 200

    func putRecord(_ stored: StoredRecord) async throws {
        let zoneName = try await session.row("SELECT name FROM zones WHERE id = $1", [.int(stored.zone)]).map { try $0.value("name", as: String.self) }
            ?? WireZoneID.defaultZoneName
        try await putRecords([RecordWrite(record: stored, fieldsJSON: stored.deleted ? "{}" : stored.fieldsJSON)], zoneName: zoneName,
                       replacing: [stored.recordName])
    }

    /// One multi-row upsert per 200 records, one `DELETE` of the replaced records' index rows and
    /// one multi-row `INSERT` per 1,000 index rows: a handful of round trips for a whole batch.
    func putRecords(_ writes: [RecordWrite], zoneName: String, replacing: Set<String>) async throws {
        guard !writes.isEmpty else { return }
        recordsWritten += writes.count
        let previous = try await previousAssetStates(zone: writes[writes.startIndex].record.zone,
                                               names: writes.map(\.record.recordName).filter { replacing.contains($0) })
        var ids: [String: Int64] = [:]
        var start = writes.startIndex
        while start < writes.endIndex {
            let end = min(start + Self.recordsPerStatement, writes.endIndex)
            var parameters: [PostgresParameter] = []
            var rows: [String] = []
            for write in writes[start..<end] {
                let stored = write.record
                let first = parameters.count + 1
                rows.append("(" + (first..<first + 15).map { "$\($0)" }.joined(separator: ", ") + ")")
                parameters += [
                    .int(stored.zone), .text(stored.recordName), .text(stored.recordType), .text(stored.changeTag), .int(stored.sequence),
                    .bool(stored.deleted), .text(stored.deleted ? "{}" : write.fieldsJSON), .int(stored.created.timestamp),
                    .text(stored.created.userRecordName), .text(stored.created.deviceID), .int(stored.modified.timestamp),
                    .text(stored.modified.userRecordName), .text(stored.modified.deviceID), .text(stored.parent), .text(stored.shortGUID),
                ]
            }
            let returned = try await session.rows("""
                INSERT INTO records (zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device,
                                     modified_at, modified_by, modified_device, parent, short_guid)
                VALUES \(rows.joined(separator: ", "))
                ON CONFLICT (zone, name) DO UPDATE SET type = excluded.type, change_tag = excluded.change_tag, sequence = excluded.sequence,
                    deleted = excluded.deleted, fields = excluded.fields, created_at = excluded.created_at, created_by = excluded.created_by,
                    created_device = excluded.created_device, modified_at = excluded.modified_at, modified_by = excluded.modified_by,
                    modified_device = excluded.modified_device, parent = excluded.parent, short_guid = excluded.short_guid
                RETURNING id, name
                """, parameters)
            for row in returned { ids[try row.value("name", as: String.self)] = try row.value("id", as: Int64.self) }
            start = end
        }
        var usage = AssetUsageDelta()
        var assetChanges: [(id: Int64, old: [String: Int64], new: [String: Int64])] = []
        for write in writes {
            guard let id = ids[write.record.recordName] else {
                throw UbiquityError(.io, "the record store did not return the row of record \(write.record.recordName)")
            }
            let before = previous[write.record.recordName]
            let assets = write.record.assetReferences
            usage.recordBytes += (write.record.deleted ? 0 : Int64(write.fieldsJSON.utf8.count)) - (before?.bytes ?? 0)
            usage.replace(before?.assets ?? [:], with: assets)
            assetChanges.append((id, before?.assets ?? [:], assets))
        }
        try await replaceRecordAssets(assetChanges)
        if usage.recordBytes != 0 || !usage.changedReferences.isEmpty {
            try await applyUsage(usage, zone: writes[writes.startIndex].record.zone)
        }
        let replaced = writes.compactMap { replacing.contains($0.record.recordName) ? ids[$0.record.recordName] : nil }
        if !replaced.isEmpty {
            try await session.execute("DELETE FROM record_index WHERE record = ANY($1)", [.ints(replaced)])
        }
        try await putKeys(writes, ids: ids, replaced: replaced, zoneName: zoneName)
        var entries: [(Int64, RecordIndexEntry)] = []
        for write in writes where !write.record.deleted {
            guard let id = ids[write.record.recordName] else {
                throw UbiquityError(.io, "the record store did not return the row of record \(write.record.recordName)")
            }
            for entry in RecordIndexEntry.entries(for: write.record, zoneName: zoneName) { entries.append((id, entry)) }
        }
        var entryStart = entries.startIndex
        while entryStart < entries.endIndex {
            let end = min(entryStart + Self.indexRowsPerStatement, entries.endIndex)
            var parameters: [PostgresParameter] = []
            var rows: [String] = []
            for (id, item) in entries[entryStart..<end] {
                let first = parameters.count + 1
                rows.append("($\(first), $\(first + 1), $\(first + 2)::DOUBLE PRECISION, $\(first + 3)::TEXT, $\(first + 4)::DOUBLE PRECISION, $\(first + 5)::DOUBLE PRECISION)")
                parameters += [.int(id), .text(item.field), .double(item.number), .text(item.text), .double(item.latitude), .double(item.longitude)]
            }
            try await session.execute("INSERT INTO record_index (record, field, number, text, latitude, longitude) VALUES \(rows.joined(separator: ", "))", parameters)
            entryStart = end
        }
    }

    func changes(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) async throws -> [StoredRecord] {
        try await changeRows(zone: zone, after: sequence, limit: limit, recordTypes: recordTypes).map(record)
    }

    func changesKeepingFieldsText(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) async throws -> [StoredRecordText] {
        try await changeRows(zone: zone, after: sequence, limit: limit, recordTypes: recordTypes).map {
            StoredRecordText(record: try record($0, decodingFields: false), fieldsText: try $0.value("fields"))
        }
    }

    private func changeRows(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) async throws -> [PostgresRandomAccessRow] {
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = $1 AND sequence > $2"
        var parameters: [PostgresParameter] = [.int(zone), .int(sequence)]
        if let recordTypes {
            parameters.append(.texts(recordTypes))
            sql += " AND (deleted OR type = ANY($\(parameters.count)))"
        }
        parameters.append(Self.limit(limit))
        sql += " ORDER BY sequence LIMIT $\(parameters.count)"
        return try await session.rows(sql, parameters)
    }

    func candidates(zones: [Int64], recordType: String, conditions: [IndexCondition]) async throws -> [StoredRecord] {
        guard !zones.isEmpty else { return [] }
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = ANY($1) AND type = $2 AND NOT deleted"
        var parameters: [PostgresParameter] = [.ints(zones), .text(recordType)]
        for condition in conditions {
            let (clause, values) = IndexConditionSQL.recordClause(condition, dialect: .postgres, startIndex: parameters.count)
            sql += " AND \(clause)"
            parameters += values.map { value -> PostgresParameter in
                switch value {
                case .number(let number): return .double(number)
                case .text(let text): return .text(text)
                }
            }
        }
        sql += " ORDER BY id"
        return try await session.rows(sql, parameters).map(record)
    }

    func candidateKeys(zones: [Int64], recordType: String, conditions: [IndexCondition], fields: [String]) async throws -> [StoredRecordKeys] {
        guard !zones.isEmpty else { return [] }
        var parameters: [PostgresParameter] = [.ints(zones), .text(recordType)]
        var join = ""
        if !fields.isEmpty {
            parameters.append(.texts(fields))
            join = " LEFT JOIN record_index k ON k.record = records.id AND k.field = ANY($3)"
        }
        var sql = """
            SELECT records.id, records.zone, records.name, records.created_at, records.created_by, records.modified_at, records.modified_by\(fields.isEmpty ? "" : ", k.field, k.number, k.text, k.latitude, k.longitude")
            FROM records\(join) WHERE records.zone = ANY($1) AND records.type = $2 AND NOT records.deleted
            """
        for condition in conditions {
            let (clause, values) = IndexConditionSQL.recordClause(condition, dialect: .postgres, startIndex: parameters.count)
            sql += " AND \(clause)"
            parameters += values.map { value -> PostgresParameter in
                switch value {
                case .number(let number): return .double(number)
                case .text(let text): return .text(text)
                }
            }
        }
        sql += " ORDER BY records.id"
        var keys: [StoredRecordKeys] = []
        for row in try await session.rows(sql, parameters) {
            let id: Int64 = try row.value("id")
            if keys.last?.id != id {
                keys.append(StoredRecordKeys(id: id, zone: try row.value("zone"), recordName: try row.value("name"),
                                             created: WireRecordStamp(timestamp: try row.value("created_at"), userRecordName: try row.value("created_by"), deviceID: nil),
                                             modified: WireRecordStamp(timestamp: try row.value("modified_at"), userRecordName: try row.value("modified_by"), deviceID: nil),
                                             entries: [:]))
            }
            if !fields.isEmpty, let field = try row.value("field", as: String?.self), keys[keys.count - 1].entries[field] == nil {
                keys[keys.count - 1].entries[field] = RecordIndexEntry(field: field, number: try row.value("number"), text: try row.value("text"),
                                                                       latitude: try row.value("latitude"), longitude: try row.value("longitude"))
            }
        }
        return keys
    }

    func recordTexts(zone: Int64, names: [String]) async throws -> [String: StoredRecordText] {
        guard !names.isEmpty else { return [:] }
        var found: [String: StoredRecordText] = [:]
        for row in try await session.rows(RecordTextsByName.self, [.int(zone), .texts(names)]) {
            let text = StoredRecordText(record: try record(row, decodingFields: false), fieldsText: try row.value("fields"))
            found[text.record.recordName] = text
        }
        return found
    }

    /// The zone and its records in one statement (a row of the zone alone when none is found).
    func recordTexts(key: DatabaseKey, zoneName: String, names: [String]) async throws -> (zone: StoredZone?, records: [String: StoredRecordText]) {
        let rows = try await session.rows(ZoneRecordTextsByName.self, [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue),
                                                                      .text(key.owner), .text(zoneName), .texts(names)])
        guard let first = rows.first else { return (nil, [:]) }
        var found: [String: StoredRecordText] = [:]
        for row in rows where try row.value("name", as: String?.self) != nil {
            let text = StoredRecordText(record: try record(row, decodingFields: false), fieldsText: try row.value("fields"))
            found[text.record.recordName] = text
        }
        return (try zone(first, prefix: "zone_"), found)
    }

    /// The statement of ``recordTexts(key:zoneName:names:)``: the zone's columns as `zone_…`.
    enum ZoneRecordTextsByName: PostgresStatement {
        static let name = "zone_record_texts_by_name"
        static let sql = """
            SELECT \(QueryIndexSQL.qualified(PostgresTransaction.zoneColumns, by: "z", prefix: "zone_")),
                \(QueryIndexSQL.qualified(PostgresTransaction.recordColumns, by: "r"))
            FROM databases d JOIN zones z ON z.database = d.id LEFT JOIN records r ON r.zone = z.id AND r.name = ANY($6)
            WHERE d.container = $1 AND d.environment = $2 AND d.scope = $3 AND d.owner = $4 AND z.name = $5 AND NOT z.deleted
            """
    }

    /// The statement of ``recordTexts(zone:names:)``.
    enum RecordTextsByName: PostgresStatement {
        static let name = "record_texts_by_name"
        static let sql = "SELECT \(PostgresTransaction.recordColumns) FROM records WHERE zone = $1 AND name = ANY($2)"
    }

    func records(ids: [Int64]) async throws -> [Int64: StoredRecord] {
        guard !ids.isEmpty else { return [:] }
        var found: [Int64: StoredRecord] = [:]
        for row in try await session.rows("SELECT \(Self.recordColumns) FROM records WHERE id = ANY($1)", [.ints(ids)]) {
            found[try row.value("id")] = try record(row)
        }
        return found
    }

    func referencing(zones: [Int64], targetZone: String, targetName: String) async throws -> [StoredRecord] {
        guard !zones.isEmpty else { return [] }
        let key = RecordIndexEntry.indexedText(RecordIndexEntry.referenceKey(zoneName: targetZone, recordName: targetName))
        return try await session.rows("""
            SELECT \(Self.recordColumns) FROM records WHERE id IN (SELECT record FROM record_index WHERE text = $1 AND field NOT LIKE '\\_\\_\\_%' ESCAPE '\\')
            AND zone = ANY($2) AND NOT deleted ORDER BY id
            """, [.text(key), .ints(zones)]).map(record)
    }
}
