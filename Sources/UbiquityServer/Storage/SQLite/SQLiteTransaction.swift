// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityWire

/// `RecordStoreTransaction` over one GRDB connection inside a transaction.
struct SQLiteTransaction: RecordStoreTransaction {
    let db: Database

    // MARK: Containers and credentials

    func addContainer(_ identifier: String, createdAt: Int64) throws {
        try db.execute(sql: "INSERT INTO containers (identifier, created_at) VALUES (?, ?) ON CONFLICT DO NOTHING", arguments: [identifier, createdAt])
    }

    func containerExists(_ identifier: String) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM containers WHERE identifier = ?"), arguments: [identifier]) ?? false
    }

    func containers() throws -> [String] {
        try String.fetchAll(db, sql: "SELECT identifier FROM containers ORDER BY identifier")
    }

    func addAPIToken(container: String, digest: String, createdAt: Int64) throws {
        try db.execute(sql: "INSERT INTO api_tokens (digest, container, created_at) VALUES (?, ?, ?)", arguments: [digest, container, createdAt])
    }

    func container(forAPITokenDigest digest: String) throws -> String? {
        try String.fetchOne(db.cachedStatement(sql: "SELECT container FROM api_tokens WHERE digest = ?"), arguments: [digest])
    }

    func allowedOrigins(container: String) throws -> [String] {
        try String.fetchAll(db.cachedStatement(sql: "SELECT origin FROM container_origins WHERE container = ? ORDER BY origin"), arguments: [container])
    }

    func setAllowedOrigin(_ allowed: Bool, container: String, origin: String) throws {
        if allowed {
            try db.execute(sql: "INSERT INTO container_origins (container, origin) VALUES (?, ?) ON CONFLICT DO NOTHING", arguments: [container, origin])
        } else {
            try db.execute(sql: "DELETE FROM container_origins WHERE container = ? AND origin = ?", arguments: [container, origin])
        }
    }

    func addAccount(name: String, email: String?, passwordHash: String?, createdAt: Int64) throws -> StoredAccount {
        if try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE name = ? OR (email IS NOT NULL AND email = ?)", arguments: [name, email]) ?? false {
            throw UbiquityError(.alreadyExists, "an account named \(name)\(email.map { " or with e-mail \($0)" } ?? "") exists")
        }
        try db.execute(sql: "INSERT INTO accounts (name, email, password_hash, created_at) VALUES (?, ?, ?, ?)",
                       arguments: [name, email, passwordHash, createdAt])
        return StoredAccount(id: db.lastInsertedRowID, name: name, email: email, passwordHash: passwordHash, createdAt: createdAt)
    }

    func account(_ row: Row?) -> StoredAccount? {
        row.map { StoredAccount(id: $0["id"], name: $0["name"], email: $0["email"], passwordHash: $0["password_hash"], createdAt: $0["created_at"],
                                disabledAt: $0["disabled_at"]) }
    }

    func account(named name: String) throws -> StoredAccount? {
        account(try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE name = ?", arguments: [name]))
    }

    func account(id: Int64) throws -> StoredAccount? {
        account(try Row.fetchOne(db, sql: "SELECT * FROM accounts WHERE id = ?", arguments: [id]))
    }

    func addServerKey(container: String, keyID: String, publicKeyPEM: String, createdAt: Int64) throws {
        try db.execute(sql: "INSERT INTO server_keys (container, key_id, public_key, created_at) VALUES (?, ?, ?, ?)",
                       arguments: [container, keyID, publicKeyPEM, createdAt])
    }

    func serverKey(container: String, keyID: String) throws -> String? {
        try String.fetchOne(db, sql: "SELECT public_key FROM server_keys WHERE container = ? AND key_id = ?", arguments: [container, keyID])
    }

    // MARK: Databases and zones

    func lockDatabase(_ key: DatabaseKey) throws -> StoredDatabase {
        try db.execute(sql: "INSERT INTO databases (container, environment, scope, owner) VALUES (?, ?, ?, ?) ON CONFLICT DO NOTHING",
                       arguments: [key.container, key.environment.rawValue, key.scope.rawValue, key.owner])
        guard let database = try database(key) else { throw UbiquityError(.io, "the database row of \(key) vanished") }
        return database
    }

    func database(_ key: DatabaseKey) throws -> StoredDatabase? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT id, sequence FROM databases WHERE container = ? AND environment = ? AND scope = ? AND owner = ?"),
                         arguments: [key.container, key.environment.rawValue, key.scope.rawValue, key.owner])
            .map { StoredDatabase(id: $0["id"], key: key, sequence: $0["sequence"]) }
    }

    private func zone(_ row: Row) -> StoredZone {
        StoredZone(id: row["id"], database: row["database"], name: row["name"], sequence: row["sequence"],
                   purgedThrough: row["purged_through"], deleted: row["deleted"], createdAt: row["created_at"])
    }

    func zone(database: Int64, name: String) throws -> StoredZone? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM zones WHERE database = ? AND name = ? AND deleted = 0"), arguments: [database, name]).map(zone)
    }

    func zone(key: DatabaseKey, name: String) throws -> StoredZone? {
        try Row.fetchOne(db.cachedStatement(sql: """
            SELECT zones.* FROM databases JOIN zones ON zones.database = databases.id
            WHERE databases.container = ? AND databases.environment = ? AND databases.scope = ? AND databases.owner = ? AND zones.name = ? AND zones.deleted = 0
            """), arguments: [key.container, key.environment.rawValue, key.scope.rawValue, key.owner, name]).map(zone)
    }

    func zone(id: Int64) throws -> StoredZone? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT * FROM zones WHERE id = ?"), arguments: [id]).map(zone)
    }

    func zones(database: Int64) throws -> [StoredZone] {
        try Row.fetchAll(db, sql: "SELECT * FROM zones WHERE database = ? AND deleted = 0 ORDER BY name", arguments: [database]).map(zone)
    }

    func createZone(database: Int64, name: String, createdAt: Int64) throws -> StoredZone {
        if try zone(database: database, name: name) != nil {
            throw UbiquityError(.alreadyExists, "zone \(name) exists")
        }
        try db.execute(sql: "INSERT INTO zones (database, name, created_at) VALUES (?, ?, ?)", arguments: [database, name, createdAt])
        guard let zone = try zone(id: db.lastInsertedRowID) else { throw UbiquityError(.io, "zone \(name) vanished after its insert") }
        return zone
    }

    func deleteZone(id: Int64) throws {
        try releaseZoneAssets(zone: id)
        try db.execute(sql: "DELETE FROM record_locations WHERE id IN (SELECT rowid FROM record_index WHERE latitude IS NOT NULL AND record IN (SELECT id FROM records WHERE zone = ?))", arguments: [id])
        try db.execute(sql: "DELETE FROM record_index WHERE record IN (SELECT id FROM records WHERE zone = ?)", arguments: [id])
        try db.execute(sql: "DELETE FROM record_keys WHERE record IN (SELECT id FROM records WHERE zone = ?)", arguments: [id])
        try db.execute(sql: "DELETE FROM records WHERE zone = ?", arguments: [id])
        try db.execute(sql: "UPDATE zones SET deleted = 1 WHERE id = ?", arguments: [id])
    }

    func noteZoneChanged(database: Int64, zone: Int64) throws -> Int64 {
        guard let sequence = try Int64.fetchOne(db.cachedStatement(sql: "UPDATE databases SET sequence = sequence + 1 WHERE id = ? RETURNING sequence"),
                                                arguments: [database]) else {
            throw UbiquityError(.notFound, "no database with id \(database)")
        }
        try db.cachedStatement(sql: "UPDATE zones SET database_sequence = ? WHERE id = ?").execute(arguments: [sequence, zone])
        return sequence
    }

    func zoneChanges(database: Int64, after sequence: Int64, limit: Int) throws -> [StoredZoneChange] {
        try Row.fetchAll(db, sql: """
            SELECT * FROM zones WHERE database = ? AND database_sequence > ? ORDER BY database_sequence LIMIT ?
            """, arguments: [database, sequence, limit])
            .map { StoredZoneChange(zone: zone($0), sequence: $0["database_sequence"]) }
    }

    func nextZoneSequence(zone: Int64) throws -> Int64 {
        try reserveZoneSequences(zone: zone, count: 1)
    }

    func reserveZoneSequences(zone: Int64, count: Int) throws -> Int64 {
        guard let sequence = try Int64.fetchOne(db.cachedStatement(sql: "UPDATE zones SET sequence = sequence + ? WHERE id = ? RETURNING sequence"),
                                                arguments: [max(count, 1), zone]) else {
            throw UbiquityError(.notFound, "no zone with id \(zone)")
        }
        return sequence
    }

    func purgeTombstones(zone: Int64, through sequence: Int64) throws {
        try db.execute(sql: "DELETE FROM records WHERE zone = ? AND deleted = 1 AND sequence <= ?", arguments: [zone, sequence])
        try db.execute(sql: "UPDATE zones SET purged_through = max(purged_through, ?) WHERE id = ?", arguments: [sequence, zone])
    }

    // MARK: Records

    static let recordColumns = "id, zone, name, type, change_tag, sequence, deleted, fields, created_at, created_by, created_device, modified_at, modified_by, modified_device, parent, short_guid"

    /// A record from a row of ``recordColumns``, read by position (by name, GRDB looks each
    /// column up, lowercasing names: ~2 % of the server answering `changes/zone`).
    func record(_ row: Row) throws -> StoredRecord {
        try record(row, decodingFields: true)
    }

    /// ``record(_:)``, its fields left empty unless `decodingFields`.
    func record(_ row: Row, decodingFields: Bool) throws -> StoredRecord {
        let deleted: Bool = row[6]
        let fieldsText: String = row[7]
        return StoredRecord(
            zone: row[1], recordName: row[2], recordType: row[3], changeTag: row[4],
            sequence: row[5], deleted: deleted, fields: deleted || !decodingFields ? [:] : try StoredRecord.decodeFields(fieldsText),
            created: WireRecordStamp(timestamp: row[8], userRecordName: row[9], deviceID: row[10]),
            modified: WireRecordStamp(timestamp: row[11], userRecordName: row[12], deviceID: row[13]),
            parent: row[14], shortGUID: row[15])
    }

    func record(zone: Int64, name: String) throws -> StoredRecord? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.recordColumns) FROM records WHERE zone = ? AND name = ?"), arguments: [zone, name]).map(record)
    }

    func records(zone: Int64, names: [String]) throws -> [String: StoredRecord] {
        var found: [String: StoredRecord] = [:]
        let statement = try db.cachedStatement(sql: "SELECT \(Self.recordColumns) FROM records WHERE zone = ? AND name = ?")
        for name in names {
            if let row = try Row.fetchOne(statement, arguments: [zone, name]) { found[name] = try record(row) }
        }
        return found
    }

    func putRecord(_ stored: StoredRecord) throws {
        let zoneName = try String.fetchOne(db.cachedStatement(sql: "SELECT name FROM zones WHERE id = ?"), arguments: [stored.zone]) ?? WireZoneID.defaultZoneName
        try putRecords([RecordWrite(record: stored, fieldsJSON: stored.deleted ? "{}" : stored.fieldsJSON)], zoneName: zoneName,
                       replacing: [stored.recordName])
    }

    func putRecords(_ writes: [RecordWrite], zoneName: String, replacing: Set<String>) throws {
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
        let deleteEntries = try db.cachedStatement(sql: "DELETE FROM record_index WHERE record = ?")
        let deleteLocations = try db.cachedStatement(sql: "DELETE FROM record_locations WHERE id IN (SELECT rowid FROM record_index WHERE record = ? AND latitude IS NOT NULL)")
        let insertLocation = try db.cachedStatement(sql: "INSERT INTO record_locations (id, min_latitude, max_latitude, min_longitude, max_longitude) VALUES (?, ?, ?, ?, ?)")
        let indexes = try writes.first.map { try queryIndexes(zone: $0.record.zone) } ?? []
        let deleteKeys = try db.cachedStatement(sql: "DELETE FROM record_keys WHERE record = ?")
        let insertKey = try db.cachedStatement(sql: "INSERT INTO record_keys (query_index, zone, key, record) VALUES (?, ?, ?, ?)")
        let insertEntry = try db.cachedStatement(sql: "INSERT INTO record_index (record, field, number, text, latitude, longitude) VALUES (?, ?, ?, ?, ?, ?)")
        var usage = AssetUsageDelta()
        for write in writes {
            let stored = write.record
            let previous = try replacing.contains(stored.recordName) ? previousAssetState(zone: stored.zone, name: stored.recordName) : nil
            let values: [(any DatabaseValueConvertible)?] = [
                stored.zone, stored.recordName, stored.recordType, stored.changeTag, stored.sequence, stored.deleted,
                stored.deleted ? "{}" : write.fieldsJSON,
                stored.created.timestamp, stored.created.userRecordName, stored.created.deviceID,
                stored.modified.timestamp, stored.modified.userRecordName, stored.modified.deviceID, stored.parent, stored.shortGUID,
            ]
            guard let id = try Int64.fetchOne(insert, arguments: StatementArguments(values)) else {
                throw UbiquityError(.io, "the record store did not return the row of record \(stored.recordName)")
            }
            if replacing.contains(stored.recordName) {
                try deleteLocations.execute(arguments: [id])
                try deleteEntries.execute(arguments: [id])
                if !indexes.isEmpty { try deleteKeys.execute(arguments: [id]) }
            }
            let assets = stored.assetReferences
            usage.recordBytes += (stored.deleted ? 0 : Int64(write.fieldsJSON.utf8.count)) - (previous?.bytes ?? 0)
            usage.replace(previous?.assets ?? [:], with: assets)
            try replaceRecordAssets(id: id, old: previous?.assets ?? [:], new: assets)
            guard !stored.deleted else { continue }
            for item in RecordIndexEntry.entries(for: stored, zoneName: zoneName) {
                try insertEntry.execute(arguments: [id, item.field, item.number, item.text, item.latitude, item.longitude])
                if let latitude = item.latitude, let longitude = item.longitude {
                    try insertLocation.execute(arguments: [db.lastInsertedRowID, latitude, latitude, longitude, longitude])
                }
            }
            for index in indexes where index.definition.recordType == stored.recordType {
                try insertKey.execute(arguments: [index.id, stored.zone, Data(index.definition.key(for: stored, zoneName: zoneName)), id])
            }
        }
        if let zone = writes.first?.record.zone, usage.recordBytes != 0 || !usage.changedReferences.isEmpty {
            guard let database = try Int64.fetchOne(db.cachedStatement(sql: "SELECT database FROM zones WHERE id = ?"), arguments: [zone]) else {
                throw UbiquityError(.notFound, "no zone with id \(zone)")
            }
            try applyUsage(usage, database: database)
        }
    }

    func changes(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) throws -> [StoredRecord] {
        try changeRows(zone: zone, after: sequence, limit: limit, recordTypes: recordTypes).map(record)
    }

    func changesKeepingFieldsText(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) throws -> [StoredRecordText] {
        try changeRows(zone: zone, after: sequence, limit: limit, recordTypes: recordTypes).map {
            StoredRecordText(record: try record($0, decodingFields: false), fieldsText: $0[7])
        }
    }

    private func changeRows(zone: Int64, after sequence: Int64, limit: Int, recordTypes: [String]?) throws -> [Row] {
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = ? AND sequence > ?"
        var arguments: [(any DatabaseValueConvertible)?] = [zone, sequence]
        if let recordTypes {
            sql += " AND (deleted = 1 OR type IN (\(databaseQuestionMarks(count: recordTypes.count))))"
            arguments += recordTypes.map { $0 }
        }
        sql += " ORDER BY sequence LIMIT ?"
        arguments.append(limit)
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments))
    }

    func candidates(zones: [Int64], recordType: String, conditions: [IndexCondition]) throws -> [StoredRecord] {
        guard !zones.isEmpty else { return [] }
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone IN (\(databaseQuestionMarks(count: zones.count))) AND type = ? AND deleted = 0"
        var arguments: [(any DatabaseValueConvertible)?] = zones.map { $0 }
        arguments.append(recordType)
        for condition in conditions {
            let (clause, values) = IndexConditionSQL.recordClause(condition, dialect: .sqlite, startIndex: arguments.count)
            sql += " AND \(clause)"
            arguments += values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .number(let number): return number
                case .text(let text): return text
                }
            }
        }
        sql += " ORDER BY id"
        return try Row.fetchAll(db, sql: sql, arguments: StatementArguments(arguments)).map(record)
    }

    func candidateKeys(zones: [Int64], recordType: String, conditions: [IndexCondition], fields: [String]) throws -> [StoredRecordKeys] {
        guard !zones.isEmpty else { return [] }
        var arguments: [(any DatabaseValueConvertible)?] = []
        var join = ""
        if !fields.isEmpty {
            join = " LEFT JOIN record_index k ON k.record = records.id AND k.field IN (\(databaseQuestionMarks(count: fields.count)))"
            arguments += fields.map { $0 }
        }
        var sql = """
            SELECT records.id, records.zone, records.name, records.created_at, records.created_by, records.modified_at, records.modified_by\(fields.isEmpty ? "" : ", k.field, k.number, k.text, k.latitude, k.longitude")
            FROM records\(join) WHERE records.zone IN (\(databaseQuestionMarks(count: zones.count))) AND records.type = ? AND records.deleted = 0
            """
        arguments += zones.map { $0 }
        arguments.append(recordType)
        for condition in conditions {
            let (clause, values) = IndexConditionSQL.recordClause(condition, dialect: .sqlite, startIndex: arguments.count)
            sql += " AND \(clause)"
            arguments += values.map { value -> (any DatabaseValueConvertible)? in
                switch value {
                case .number(let number): return number
                case .text(let text): return text
                }
            }
        }
        sql += fields.isEmpty ? " ORDER BY records.id" : " ORDER BY records.id, k.rowid"
        var keys: [StoredRecordKeys] = []
        let rows = try Row.fetchCursor(db, sql: sql, arguments: StatementArguments(arguments))
        while let row = try rows.next() {
            let id: Int64 = row[0]
            if keys.last?.id != id {
                keys.append(StoredRecordKeys(id: id, zone: row[1], recordName: row[2],
                                             created: WireRecordStamp(timestamp: row[3], userRecordName: row[4], deviceID: nil),
                                             modified: WireRecordStamp(timestamp: row[5], userRecordName: row[6], deviceID: nil), entries: [:]))
            }
            if !fields.isEmpty, let field: String = row[7], keys[keys.count - 1].entries[field] == nil {
                keys[keys.count - 1].entries[field] = RecordIndexEntry(field: field, number: row[8], text: row[9], latitude: row[10], longitude: row[11])
            }
        }
        return keys
    }

    func records(ids: [Int64]) throws -> [Int64: StoredRecord] {
        var found: [Int64: StoredRecord] = [:]
        let statement = try db.cachedStatement(sql: "SELECT \(Self.recordColumns) FROM records WHERE id = ?")
        for id in ids {
            if let row = try Row.fetchOne(statement, arguments: [id]) { found[id] = try record(row) }
        }
        return found
    }

    func recordTexts(zone: Int64, names: [String]) throws -> [String: StoredRecordText] {
        guard !names.isEmpty else { return [:] }
        var found: [String: StoredRecordText] = [:]
        // cached per number of names (at most 200 statements): a lookup's SQL is not parsed again
        let rows = try Row.fetchCursor(db.cachedStatement(sql: "SELECT \(Self.recordColumns) FROM records WHERE zone = ? AND name IN (\(databaseQuestionMarks(count: names.count)))"),
                                       arguments: StatementArguments([zone] as [any DatabaseValueConvertible] + names))
        while let row = try rows.next() {
            let text = StoredRecordText(record: try record(row, decodingFields: false), fieldsText: row[7])
            found[text.record.recordName] = text
        }
        return found
    }

    func referencing(zones: [Int64], targetZone: String, targetName: String) throws -> [StoredRecord] {
        guard !zones.isEmpty else { return [] }
        let key = RecordIndexEntry.indexedText(RecordIndexEntry.referenceKey(zoneName: targetZone, recordName: targetName))
        var arguments: [(any DatabaseValueConvertible)?] = [key]
        arguments += zones.map { $0 }
        return try Row.fetchAll(db, sql: """
            SELECT \(Self.recordColumns) FROM records WHERE id IN (SELECT record FROM record_index WHERE text = ? AND field NOT LIKE '\\_\\_\\_%' ESCAPE '\\')
            AND zone IN (\(databaseQuestionMarks(count: zones.count))) AND deleted = 0 ORDER BY id
            """, arguments: StatementArguments(arguments)).map(record)
    }
}
