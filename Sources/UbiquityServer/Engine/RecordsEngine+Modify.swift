// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// The outcome of one operation of a batch.
    enum ItemResult: Sendable {
        case saved(StoredRecord)
        case deleted(String)
        case failed(WireError)
    }

    /// Thrown inside the write transaction to roll back a failed atomic batch.
    struct AtomicFailure: Error {
        var results: [ItemResult]
    }

    /// `records/modify`: ``modifyRecordsBody(_:context:)`` read back (for callers that read the
    /// answer).
    package func modifyRecords(_ request: WireModifyRecordsRequest, context: Context) async throws -> JSONValue {
        try JSONValue.parse(Data(await modifyRecordsBody(request, context: context)))
    }

    /// `records/modify`, answered as JSON text (written without a `JSONValue` tree).
    package func modifyRecordsBody(_ request: WireModifyRecordsRequest, context: Context) async throws -> [UInt8] {
        guard request.operations.count <= WireLimits.operationsPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(request.operations.count) operations; a request may have at most \(WireLimits.operationsPerRequest)")
        }
        let key = try context.databaseKey(forWriting: true)
        // the request's zone, else the one its records name (a client may set it only on them)
        let named = request.operations.indices.filter { request.unreadable[$0] == nil }.compactMap { request.operations[$0].record.zoneID }
        let zoneID = request.zoneID ?? (Set(named.map(\.zoneName)).count == 1 ? named[0] : .default)
        try context.checkOwner(zoneID)
        var operations = request.operations
        var refusals = request.unreadable
        for (index, operation) in operations.enumerated() where refusals[index] == nil {
            if let own = operation.record.zoneID, own.zoneName != zoneID.zoneName {
                var refusal = WireError(.badRequest, "operations[\(index)].record.zoneID: zone \(own.zoneName) is not the request's zone \(zoneID.zoneName); one zone per request")
                refusal.recordName = operation.record.recordName.isEmpty ? nil : operation.record.recordName
                refusals[index] = refusal
            }
        }
        let unreadable = refusals
        var names = Set<String>()
        for (index, operation) in operations.enumerated() where !operation.record.recordName.isEmpty && unreadable[index] == nil {
            guard names.insert(operation.record.recordName).inserted else {
                throw WireError(.badRequest, "operations[\(index)]: record \(operation.record.recordName) appears twice; one operation per record per request")
            }
        }
        // Receipts are bound to the record's name: a record created without one gets it now.
        for index in operations.indices where operations[index].record.recordName.isEmpty && unreadable[index] == nil
            && [.create, .forceUpdate, .forceReplace].contains(operations[index].operationType) {
            operations[index].record.recordName = UUID().uuidString.lowercased()
        }
        let receiptChecks = await checkReceipts(operations, key: key, zoneName: zoneID.zoneName)
        let batchOperations = operations
        let operationNames = Set(operations.map(\.record.recordName))
        let atomic = (request.atomic ?? true) && !zoneID.isDefault && key.scope == .private
        let engine = self
        let caller = context.caller
        let observer = changeObserver
        var results: [ItemResult]
        var changes: [StoreChange] = []
        var tokens: ModifyBatch.ZoneTokens?
        do {
            (results, changes, tokens) = try await store.write { tx in
                let database = try await tx.lockDatabase(key)
                // a zone this batch creates was fetched as "no zone" (id 0) before it
                let existed = try await tx.zone(database: database.id, name: zoneID.zoneName) != nil
                let zone: StoredZone
                do {
                    zone = try await engine.writeZone(tx, database: database, zoneID: zoneID)
                } catch let error as WireError where error.code == .zoneNotFound {
                    // each record says so, as CloudKit answers a batch into a missing zone
                    return (batchOperations.map { _ in ItemResult.failed(error) }, [], nil)
                }
                var batch = ModifyBatch(engine: engine, tx: tx, database: database, zone: zone, caller: caller)
                batch.receiptChecks = receiptChecks
                try await batch.prefetch(batchOperations.indices.filter { unreadable[$0] == nil }.map { batchOperations[$0].record.recordName }.filter { !$0.isEmpty })
                var results: [ItemResult] = []
                for (index, operation) in batchOperations.enumerated() {
                    do {
                        if let refusal = unreadable[index] { throw refusal }
                        await results.append(try batch.apply(operation, index: index, path: "operations[\(index)]"))
                    } catch let error as WireError {
                        results.append(.failed(error))
                        if atomic {
                            let rest = batchOperations.count - results.count
                            results = results.map { result in
                                if case .failed = result { return result }
                                return .failed(WireError(.atomicError, "the atomic batch failed because another operation in it failed"))
                            }
                            results += Array(repeating: .failed(WireError(.atomicError, "the atomic batch failed because another operation in it failed")), count: rest)
                            throw AtomicFailure(results: results)
                        }
                    }
                }
                try await batch.finish()
                results = results.map { result in
                    if case .saved(let record) = result { return .saved(batch.written[record.recordName] ?? record) }
                    return result
                }
                if let observer, !batch.changes.isEmpty { try await observer.changesWillCommit(batch.changes, in: tx) }
                let after = try await tx.zone(database: database.id, name: zone.name)?.sequence ?? zone.sequence
                return (results, batch.changes, batch.tokens(before: zone.sequence, after: after, names: operationNames, created: !existed))
            }
        } catch let failure as AtomicFailure {
            results = failure.results
        }
        if let observer, !changes.isEmpty { await observer.changesDidCommit(changes) }
        var out: [UInt8] = Array(#"{"records":["#.utf8)
        out.reserveCapacity(results.count * 400 + 128)
        let zone = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
        for (index, result) in results.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let operation = operations[index]
            let desiredKeys = operation.desiredKeys ?? request.desiredKeys
            switch result {
            case .saved(let record):
                presented(record, context: context).wireRecord(zoneID: zone).write(to: &out, desiredKeys: desiredKeys, numbersAsStrings: request.numbersAsStrings)
            case .deleted(let name):
                WireRecord(recordName: name, deleted: true, zoneID: zone).write(to: &out)
            case .failed(var error):
                error.recordName = error.recordName ?? (operation.record.recordName.isEmpty ? nil : operation.record.recordName)
                error.uuid = UUID().uuidString.lowercased()
                if let server = error.serverRecord, server.zoneID == nil {
                    error.serverRecord?.zoneID = zone
                }
                error.json(numbersAsStrings: request.numbersAsStrings).write(to: &out)
            }
        }
        out.append(UInt8(ascii: "]"))
        if let tokens {
            // a Ubiquity extension (CloudKit clients ignore it): the zone's change tokens around the batch
            out.append(contentsOf: #","syncTokenBefore":"#.utf8)
            JSONValue.string(tokens.before).write(to: &out)
            out.append(contentsOf: #","syncToken":"#.utf8)
            JSONValue.string(tokens.after).write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
    }
}

/// One `records/modify` batch inside its write transaction.
struct ModifyBatch {
    let engine: RecordsEngine
    let tx: any RecordStoreTransaction
    let database: StoredDatabase
    let zone: StoredZone
    let caller: RecordsCaller
    /// Zones (other than `zone`) whose records changed, e.g. by a cascading delete.
    var touchedZones: Set<Int64> = []
    var changed = false
    var liveZones: [StoredZone]?
    /// The caller's roles and the record types' schemas, cached for the batch.
    var access: RecordAccess
    /// The rows (live or tombstones) of the batch's records in `zone` as the batch has left them.
    var known: [String: StoredRecord] = [:]
    /// Saves not written yet: they are written together, in order, by `flush()`.
    var pending: [RecordWrite] = []
    /// The previous state of each pending save (nil when created).
    var pendingPrevious: [StoredRecord?] = []
    /// The records as written (with their sequence and change tag), by name.
    var written: [String: StoredRecord] = [:]
    /// The committed changes, for the change observer.
    var changes: [StoreChange] = []
    /// The receipts checked before the transaction (`RecordsEngine.checkReceipts`).
    var receiptChecks: [AssetCheckKey: AssetCheck] = [:]
    /// The database's usage as the batch has left it (read at the first save under a quota).
    var usage: Int64?
    /// Checksums already counted in `usage` by this batch's saves.
    var countedAssets: Set<String> = []
    /// The key-value store zone's usage as the batch has left it (``KeyValueRules``).
    var keyValueUsage: KeyValueRules.Usage?

    init(engine: RecordsEngine, tx: any RecordStoreTransaction, database: StoredDatabase, zone: StoredZone, caller: RecordsCaller) {
        self.engine = engine
        self.tx = tx
        self.database = database
        self.zone = zone
        self.caller = caller
        self.access = RecordAccess(key: database.key, caller: caller)
    }

    /// Reads the rows of the named records of `zone` in one go.
    mutating func prefetch(_ names: [String]) async throws {
        known = try await tx.records(zone: zone.id, names: names)
    }

    /// Writes the pending saves: one block of sequences, one batch write.
    mutating func flush() async throws {
        guard !pending.isEmpty else { return }
        let last = try await tx.reserveZoneSequences(zone: zone.id, count: pending.count)
        var sequence = last - Int64(pending.count)
        var replacing = Set<String>()
        for index in pending.indices {
            sequence += 1
            pending[index].record.sequence = sequence
            pending[index].record.changeTag = ModifyBatch.changeTag(sequence)
            let record = pending[index].record
            if known[record.recordName] != nil { replacing.insert(record.recordName) }
            let previous = pendingPrevious[index]
            changes.append(.record(RecordChange(database: database.key, zoneName: zone.name, kind: previous == nil ? .created : .updated,
                                                record: record, previous: previous, changedBy: caller.userRecordName ?? "")))
        }
        try await tx.putRecords(pending, zoneName: zone.name, replacing: replacing)
        for write in pending {
            known[write.record.recordName] = write.record
            written[write.record.recordName] = write.record
        }
        pending = []
        pendingPrevious = []
        changed = true
    }

    mutating func finish() async throws {
        try await flush()
        if changed { _ = try await tx.noteZoneChanged(database: database.id, zone: zone.id) }
        for other in touchedZones where other != zone.id { _ = try await tx.noteZoneChanged(database: database.id, zone: other) }
    }

    func stamp() -> WireRecordStamp {
        WireRecordStamp(timestamp: engine.timestamp, userRecordName: caller.userRecordName ?? "", deviceID: caller.deviceID)
    }

    static func changeTag(_ sequence: Int64) -> String { String(sequence, radix: 36) }

    /// A batch's place in its zone's change history: the zone's change tokens just before and
    /// just after it.
    struct ZoneTokens: Sendable, Hashable {
        var before: String
        var after: String
    }

    /// The zone's change tokens around the batch (zone sequences `before` and `after`), when
    /// the changes between them are exactly the batch's own saves and deletes of the records
    /// it names (`names`): no cascading delete of another record, nothing else. A client that
    /// had fetched the zone's changes up to `before`, and keeps what the answer says, may
    /// continue from `after` without fetching its own changes back (`docs/sync.md`). A zone
    /// the batch `created` was "no zone" before (the token a fetch gave then). Nil when
    /// nothing changed or something else did.
    func tokens(before: Int64, after: Int64, names: Set<String>, created: Bool) -> ZoneTokens? {
        var count: Int64 = 0
        for case .record(let change) in changes where change.zoneName == zone.name {
            guard names.contains(change.record.recordName) else { return nil }
            count += 1
        }
        guard count > 0, after - before == count, touchedZones.isEmpty else { return nil }
        return ZoneTokens(before: created ? SyncToken.zone(id: 0, sequence: 0) : SyncToken.zone(id: zone.id, sequence: before),
                          after: SyncToken.zone(id: zone.id, sequence: after))
    }

    func serverRecord(_ record: StoredRecord) -> WireRecord {
        record.wireRecord(zoneID: RecordsEngine.wireZoneID(zone.name, key: database.key))
    }

    mutating func apply(_ operation: WireRecordOperation, index: Int, path: String) async throws -> RecordsEngine.ItemResult {
        if isKeyValueZone { return try await applyKeyValue(operation, index: index, path: path) }
        return try await applyRecord(operation, index: index, path: path)
    }

    mutating func applyRecord(_ operation: WireRecordOperation, index: Int, path: String) async throws -> RecordsEngine.ItemResult {
        var incoming = operation.record
        let type = operation.operationType
        if incoming.recordName.isEmpty {
            guard [.create, .forceUpdate, .forceReplace].contains(type) else {
                throw WireError(.badRequest, "\(path).record.recordName: required for \(type.rawValue)")
            }
            incoming.recordName = UUID().uuidString.lowercased()
        }
        let existing = known[incoming.recordName].flatMap { $0.deleted ? nil : $0 }
        if database.key.scope == .public,
           existing?.recordType == UserDirectory.recordType || incoming.recordType == UserDirectory.recordType || UserDirectory.isUserRecordName(incoming.recordName) {
            try checkUserRecordWrite(incoming, type: type, path: path)
        }
        let needsTag: Bool = [.update, .replace, .delete].contains(type)
        if let existing {
            // a record the caller may not read is answered as `records/lookup` answers it: its
            // fields are never shown, and a change tag check tells nothing about it
            let readable = try await access.canRead(existing, tx: tx)
            if type == .create {
                var error = WireError(.exists, "record \(incoming.recordName) already exists")
                if readable { error.serverRecord = serverRecord(existing) }
                throw error
            }
            if !readable, [.update, .replace, .delete, .forceDelete].contains(type) {
                throw WireError(.notFound, "record \(incoming.recordName) does not exist")
            }
            if needsTag {
                guard let tag = incoming.recordChangeTag else {
                    throw WireError(.badRequest, "\(path).record.recordChangeTag: required for \(type.rawValue) (use force\(type.rawValue.prefix(1).uppercased() + type.rawValue.dropFirst()) to skip the check)")
                }
                if tag != existing.changeTag {
                    var error = WireError(.conflict, "record \(incoming.recordName) changed on the server (change tag \(existing.changeTag), yours \(tag))")
                    error.serverRecord = serverRecord(existing)
                    throw error
                }
            }
        } else if type != .create, type != .forceUpdate, type != .forceReplace {
            throw WireError(.notFound, "record \(incoming.recordName) does not exist")
        }

        switch type {
        case .delete, .forceDelete:
            guard let existing else { throw WireError(.notFound, "record \(incoming.recordName) does not exist") }
            try await access.checkWrite(existing, tx: tx)
            try await flush()
            try await delete(existing)
            if let current = usage { usage = current - Int64(existing.fieldsJSON.utf8.count) }
            return .deleted(incoming.recordName)
        case .create, .update, .forceUpdate, .replace, .forceReplace:
            let recordType = incoming.recordType ?? existing?.recordType
            guard let recordType else {
                throw WireError(.badRequest, "\(path).record.recordType: required to create record \(incoming.recordName)")
            }
            if let existing, recordType != existing.recordType {
                throw WireError(.badRequest, "\(path).record.recordType: record \(incoming.recordName) is a \(existing.recordType), not a \(recordType)")
            }
            if let existing {
                try await access.checkWrite(existing, tx: tx)
            } else {
                try await access.checkCreate(recordType, recordName: incoming.recordName, tx: tx)
            }
            // (fields sent without a type are typed from the schema first)
            var sent = incoming.fields ?? [:]
            try await checkSchema(recordType: recordType, fields: &sent, untyped: incoming.untypedFields, path: path)
            var fields: [String: WireFieldValue]
            if let existing, type == .update || type == .forceUpdate {
                fields = existing.fields
                for (name, value) in sent { fields[name] = value }
                for name in incoming.nullFields { fields[name] = nil }
            } else {
                fields = sent
            }
            try await checkReferences(fields: sent, path: path)
            if engine.assets != nil {
                try checkAssets(sent, existing: existing, recordType: recordType, operation: index, path: path)
                fields = fields.mapValues { value in
                    value.mappingAssets { asset in
                        var stored = asset
                        stored.receipt = nil
                        stored.downloadURL = nil
                        return stored
                    }
                }
            }
            let stored = StoredRecord(zone: zone.id, recordName: incoming.recordName, recordType: recordType, changeTag: "",
                                      sequence: 0, deleted: false, fields: fields, created: existing?.created ?? stamp(),
                                      modified: stamp(), parent: incoming.parent ?? existing?.parent,
                                      shortGUID: existing?.shortGUID ?? (incoming.createShortGUID == true ? ModifyBatch.shortGUID() : nil))
            let fieldsJSON = stored.fieldsJSON
            let size = fieldsJSON.utf8.count
            let assetBytes = fields.values.filter { if case .asset = $0 { return true }; if case .list(.asset, _) = $0 { return true }; return false }
                .reduce(0) { $0 + $1.fieldJSON().serialized().count }
            // The key-value store's zone is limited as a whole (KeyValueRules), not per record.
            guard size - assetBytes <= WireLimits.recordSize || isKeyValueZone else {
                throw WireError(.badRequest, "limit exceeded: record \(incoming.recordName) is \(size - assetBytes) bytes; a record may have at most \(WireLimits.recordSize) bytes besides its assets")
            }
            if let limit = engine.quotas.limit(for: database.key) {
                try await charge(bytes: Int64(size), assets: stored.assetReferences, existing: existing, limit: limit, recordName: incoming.recordName)
            }
            pending.append(RecordWrite(record: stored, fieldsJSON: fieldsJSON))
            pendingPrevious.append(existing)
            return .saved(stored)
        }
    }

    /// User records (type `Users`, named by their user's record name, in the public database)
    /// are written only by their user, keep their type and are never deleted; their names are
    /// reserved for them.
    func checkUserRecordWrite(_ incoming: WireRecord, type: WireRecordOperation.OperationType, path: String) throws {
        guard case .user(_, let own) = caller.identity, own == incoming.recordName else {
            throw WireError(.accessDenied, "record \(incoming.recordName): user records (type Users, named by a user record name) are written only by their user")
        }
        guard type != .delete, type != .forceDelete else {
            throw WireError(.accessDenied, "user record \(incoming.recordName) cannot be deleted")
        }
        if let recordType = incoming.recordType, recordType != UserDirectory.recordType {
            throw WireError(.badRequest, "\(path).record.recordType: \(incoming.recordName) is a user record, of type Users, not \(recordType)")
        }
    }

    /// Checks the asset values a save sets: each must equal what the field already holds (same
    /// `fileChecksum` and `size`: a fetched record sent back unchanged), or carry a receipt
    /// accepted for this record and field.
    func checkAssets(_ fields: [String: WireFieldValue], existing: StoredRecord?, recordType: String, operation: Int, path: String) throws {
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let stored = (existing?.fields[name]?.elements ?? []).compactMap { element -> WireAsset? in
                if case .asset(let asset) = element { return asset }
                return nil
            }
            let fieldPath = "\(path).record.fields.\(name)"
            for case .asset(let asset) in value.elements {
                guard let checksum = asset.fileChecksum, let size = asset.size else {
                    throw WireError(.badRequest, "\(fieldPath): an asset needs fileChecksum and size (and the receipt its upload returned)")
                }
                if stored.contains(where: { $0.fileChecksum == checksum && $0.size == size }) { continue }
                switch receiptChecks[AssetCheckKey(operation: operation, field: name, fileChecksum: checksum, size: size)] {
                case .accepted(let type)?:
                    guard type == recordType else {
                        throw WireError(.badRequest, "\(fieldPath): the asset receipt was issued for record type \(type), not \(recordType)")
                    }
                case .refused(let error)?:
                    var reason = error.reason
                    if reason.hasPrefix("field \(name): ") { reason.removeFirst("field \(name): ".count) }
                    throw WireError(error.code, "\(fieldPath): \(reason)")
                case nil:
                    throw WireError(.badRequest, "\(fieldPath): a new asset needs the receipt its upload returned (assets/upload)")
                }
            }
        }
    }

    /// Counts a save against the database's quota: its JSON bytes instead of the stored
    /// record's, plus the assets the database does not hold yet.
    /// - Throws: `QUOTA_EXCEEDED` when the save would take the database over `limit` (saves
    ///   that do not grow it always pass).
    mutating func charge(bytes: Int64, assets: [String: Int64], existing: StoredRecord?, limit: Int64, recordName: String) async throws {
        let current: Int64
        if let usage {
            current = usage
        } else {
            current = try await tx.databaseUsage(database: database.id).total
        }
        let fresh = assets.filter { !countedAssets.contains($0.key) }
        let held = fresh.isEmpty ? [] : try await tx.referencedAssets(database: database.id, checksums: Array(fresh.keys))
        let added = fresh.filter { !held.contains($0.key) }.values.reduce(0, +)
        let delta = bytes - (existing.map { Int64($0.fieldsJSON.utf8.count) } ?? 0) + added
        if delta > 0, current + delta > limit {
            usage = current
            let which = database.key.scope == .public ? "the public database" : "your private database"
            throw WireError(.quotaExceeded, "record \(recordName) needs \(delta) more bytes; \(which) uses \(current) of its \(limit)-byte quota")
        }
        usage = current + delta
        countedAssets.formUnion(assets.keys)
    }

    static func shortGUID() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return "0" + String((0..<25).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }

    /// Field types are fixed by the first save of a field of a record type (CloudKit's
    /// just-in-time schema, in development); a later value of another type is refused. The
    /// production schema is locked: an unknown type or field is refused, until deployed. The
    /// system type `Users` grows just in time in both environments.
    ///
    /// A field sent without a type (`untyped`: the protocol allows it) takes the type the schema
    /// gives the field when its JSON reads as that type (``WireFieldValue/retyped(as:)``: an
    /// integer as a TIMESTAMP, a Base64 string as BYTES, …); without a type in the schema, the
    /// type inferred from the JSON is recorded, as before.
    mutating func checkSchema(recordType: String, fields: inout [String: WireFieldValue], untyped: Set<String> = [], path: String) async throws {
        let key = database.key
        let existing = try await access.recordType(recordType, tx: tx)
        var type = existing ?? RecordTypeSchema(name: recordType)
        for name in untyped {
            guard let value = fields[name] else { continue }
            let expected = SystemRecordTypes.isDeclared(recordType) ? SystemRecordTypes.accepted(recordType, field: name) ?? []
                : type.fields[name].map { [$0.type] } ?? []
            guard !expected.isEmpty, !expected.contains(value.type.description) else { continue }
            for tag in expected {
                if let wanted = WireFieldType(tag: tag), let typed = value.retyped(as: wanted) {
                    fields[name] = typed
                    break
                }
            }
        }
        if SystemRecordTypes.isDeclared(recordType) {
            // declared, never inferred: checked against the declaration, whatever the schema
            // says; only declared fields with their declared types are ever recorded
            let declared = try SystemRecordTypes.check(recordType, fields: fields, path: path)
            let added = declared.filter { type.fields[$0.key] == nil }.reduce(into: [String: SchemaField]()) {
                $0[$1.key] = SchemaField.justInTime(name: $1.key, type: $1.value)
            }
            guard existing == nil || !added.isEmpty else { return }
            try await tx.schemas().addToSchema(RecordTypeSchema(name: recordType, fields: added), container: key.container, environment: key.environment)
            type.fields.merge(added) { first, _ in first }
            access.cache(type)
            return
        }
        // Users exists in both environments (the server makes user records); its fields, as
        // any type's, grow just in time in development only: production changes only by deploy.
        let locked = key.environment == .production
        if locked, existing == nil, recordType != UserDirectory.recordType {
            throw WireError(.badRequest, "\(path).record.recordType: record type \(recordType) is not in the production schema; deploy it with `ubiq admin schema deploy`")
        }
        var added: [String: SchemaField] = [:]
        var settled: [SchemaField] = []
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let tag = value.type.description
            if let field = type.fields[name] {
                // A guessed type (SchemaField.guess) is settled by the first value sent with a
                // type the same JSON reads as, and widened by an untyped value it cannot hold.
                let change = locked ? nil : untyped.contains(name) ? field.widened(to: tag) : field.settled(as: tag)
                if let change, change != field {
                    settled.append(change)
                    type.fields[name] = change
                    continue
                }
                if field.type == tag { continue }
                // An empty list of unknown type fits any list field.
                if value.type == .list(nil), field.type.hasSuffix("_LIST") { continue }
                throw WireError(.badRequest, "\(path).record.fields.\(name): Invalid value, expected type \(field.type)")
            } else if locked {
                throw WireError(.badRequest, "\(path).record.fields.\(name): field \(name) of record type \(recordType) is not in the production schema; deploy it with `ubiq admin schema deploy`")
            } else if value.type != .list(nil) {
                added[name] = SchemaField.justInTime(name: name, type: tag, guessed: untyped.contains(name))
            }
        }
        guard existing == nil || !added.isEmpty || !settled.isEmpty else { return }
        let schemas = try tx.schemas()
        for field in settled {
            try await schemas.updateField(field, recordType: recordType, container: key.container, environment: key.environment)
        }
        if existing == nil || !added.isEmpty {
            try await schemas.addToSchema(RecordTypeSchema(name: recordType, fields: added), container: key.container, environment: key.environment)
        }
        type.fields.merge(added) { first, _ in first }
        access.cache(type)
    }

    /// VALIDATE references need their target to exist (in this database).
    mutating func checkReferences(fields: [String: WireFieldValue], path: String) async throws {
        for (name, value) in fields {
            for case .reference(let reference) in value.elements where reference.action == .validate {
                try await flush()
                let targetZoneName = reference.zoneID?.zoneName ?? zone.name
                let targetZone = targetZoneName == zone.name ? zone : try await tx.zone(database: database.id, name: targetZoneName)
                let target = if let targetZone { try await tx.record(zone: targetZone.id, name: reference.recordName) } else { StoredRecord?.none }
                // one the caller may not read is refused as a missing one is (no existence oracle)
                guard let target, !target.deleted, try await access.canRead(target, tx: tx) else {
                    throw WireError(.validatingReferenceError, "\(path).record.fields.\(name): the referenced record \(reference.recordName) does not exist in zone \(targetZoneName)")
                }
            }
        }
    }

    mutating func zonesOfDatabase() async throws -> [StoredZone] {
        if let liveZones { return liveZones }
        let zones = try await tx.zones(database: database.id)
        liveZones = zones
        return zones
    }

    /// Deletes a record and, transitively, every record with a DELETE_SELF reference to a
    /// deleted one; refuses when a VALIDATE reference from a surviving record points at one.
    mutating func delete(_ record: StoredRecord) async throws {
        let zones = try await zonesOfDatabase()
        let zoneNames = Dictionary(uniqueKeysWithValues: zones.map { ($0.id, $0.name) })
        var doomed: [StoredRecord] = [record]
        var doomedKeys: Set<String> = [RecordIndexEntry.referenceKey(zoneName: zone.name, recordName: record.recordName)]
        var blockers: [(StoredRecord, String)] = []
        var index = 0
        while index < doomed.count {
            let target = doomed[index]
            index += 1
            let targetZoneName = zoneNames[target.zone] ?? zone.name
            for source in try await tx.referencing(zones: zones.map(\.id), targetZone: targetZoneName, targetName: target.recordName) {
                let sourceZoneName = zoneNames[source.zone] ?? zone.name
                let sourceKey = RecordIndexEntry.referenceKey(zoneName: sourceZoneName, recordName: source.recordName)
                let actions = source.fields.values.flatMap(\.elements).compactMap { value -> WireReference.Action? in
                    guard case .reference(let reference) = value, reference.recordName == target.recordName,
                          (reference.zoneID?.zoneName ?? sourceZoneName) == targetZoneName else { return nil }
                    return reference.action ?? WireReference.Action.none
                }
                if actions.contains(.deleteSelf), !doomedKeys.contains(sourceKey) {
                    doomedKeys.insert(sourceKey)
                    doomed.append(source)
                } else if actions.contains(.validate) {
                    blockers.append((source, target.recordName))
                }
            }
        }
        for (source, targetName) in blockers {
            let sourceKey = RecordIndexEntry.referenceKey(zoneName: zoneNames[source.zone] ?? zone.name, recordName: source.recordName)
            if !doomedKeys.contains(sourceKey) {
                throw WireError(.validatingReferenceError, "record \(targetName) cannot be deleted: record \(source.recordName) has a VALIDATE reference to it")
            }
        }
        for victim in doomed {
            var tombstone = victim
            tombstone.deleted = true
            tombstone.fields = [:]
            tombstone.sequence = try await tx.nextZoneSequence(zone: victim.zone)
            tombstone.changeTag = ModifyBatch.changeTag(tombstone.sequence)
            tombstone.modified = stamp()
            try await tx.putRecord(tombstone)
            if victim.zone == zone.id {
                changed = true
                known[victim.recordName] = tombstone
            } else {
                touchedZones.insert(victim.zone)
            }
            changes.append(.record(RecordChange(database: database.key, zoneName: zoneNames[victim.zone] ?? zone.name, kind: .deleted,
                                                record: tombstone, previous: victim, changedBy: caller.userRecordName ?? "")))
        }
    }
}
