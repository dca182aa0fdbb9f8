// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

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

    /// `records/modify`.
    public func modifyRecords(_ request: WireModifyRecordsRequest, context: Context) async throws -> JSONValue {
        guard request.operations.count <= WireLimits.operationsPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(request.operations.count) operations; a request may have at most \(WireLimits.operationsPerRequest)")
        }
        let key = try context.databaseKey(forWriting: true)
        let zoneID = request.zoneID ?? .default
        try context.checkOwner(zoneID)
        var names = Set<String>()
        for (index, operation) in request.operations.enumerated() where !operation.record.recordName.isEmpty {
            guard names.insert(operation.record.recordName).inserted else {
                throw WireError(.badRequest, "operations[\(index)]: record \(operation.record.recordName) appears twice; one operation per record per request")
            }
        }
        let atomic = (request.atomic ?? true) && !zoneID.isDefault && key.scope == .private
        let engine = self
        let caller = context.caller
        let results: [ItemResult]
        do {
            results = try await store.write { tx in
                let database = try tx.lockDatabase(key)
                let zone = try engine.writeZone(tx, database: database, zoneID: zoneID)
                var batch = ModifyBatch(engine: engine, tx: tx, database: database, zone: zone, caller: caller)
                var results: [ItemResult] = []
                for (index, operation) in request.operations.enumerated() {
                    do {
                        results.append(try batch.apply(operation, path: "operations[\(index)]"))
                    } catch let error as WireError {
                        results.append(.failed(error))
                        if atomic {
                            let rest = request.operations.count - results.count
                            results = results.map { result in
                                if case .failed = result { return result }
                                return .failed(WireError(.atomicError, "the atomic batch failed because another operation in it failed"))
                            }
                            results += Array(repeating: .failed(WireError(.atomicError, "the atomic batch failed because another operation in it failed")), count: rest)
                            throw AtomicFailure(results: results)
                        }
                    }
                }
                try batch.finish()
                return results
            }
        } catch let failure as AtomicFailure {
            results = failure.results
        }
        var items: [JSONValue] = []
        for (index, result) in results.enumerated() {
            let operation = request.operations[index]
            let desiredKeys = operation.desiredKeys ?? request.desiredKeys
            switch result {
            case .saved(let record):
                items.append(record.wireRecord(zoneID: RecordsEngine.wireZoneID(zoneID.zoneName, key: key))
                    .json(desiredKeys: desiredKeys, numbersAsStrings: request.numbersAsStrings))
            case .deleted(let name):
                items.append(.object(["recordName": .string(name), "deleted": .bool(true),
                                      "zoneID": RecordsEngine.wireZoneID(zoneID.zoneName, key: key).json]))
            case .failed(var error):
                error.recordName = error.recordName ?? (operation.record.recordName.isEmpty ? nil : operation.record.recordName)
                error.uuid = UUID().uuidString.lowercased()
                if let server = error.serverRecord, server.zoneID == nil {
                    error.serverRecord?.zoneID = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
                }
                items.append(error.json(numbersAsStrings: request.numbersAsStrings))
            }
        }
        return .object(["records": .array(items)])
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
    var schemaCache: [String: [String: String]] = [:]

    init(engine: RecordsEngine, tx: any RecordStoreTransaction, database: StoredDatabase, zone: StoredZone, caller: RecordsCaller) {
        self.engine = engine
        self.tx = tx
        self.database = database
        self.zone = zone
        self.caller = caller
    }

    mutating func finish() throws {
        if changed { _ = try tx.noteZoneChanged(database: database.id, zone: zone.id) }
        for other in touchedZones where other != zone.id { _ = try tx.noteZoneChanged(database: database.id, zone: other) }
    }

    func stamp() -> WireRecordStamp {
        WireRecordStamp(timestamp: engine.timestamp, userRecordName: caller.userRecordName ?? "", deviceID: caller.deviceID)
    }

    static func changeTag(_ sequence: Int64) -> String { String(sequence, radix: 36) }

    func serverRecord(_ record: StoredRecord) -> WireRecord {
        record.wireRecord(zoneID: RecordsEngine.wireZoneID(zone.name, key: database.key))
    }

    mutating func apply(_ operation: WireRecordOperation, path: String) throws -> RecordsEngine.ItemResult {
        var incoming = operation.record
        let type = operation.operationType
        if incoming.recordName.isEmpty {
            guard [.create, .forceUpdate, .forceReplace].contains(type) else {
                throw WireError(.badRequest, "\(path).record.recordName: required for \(type.rawValue)")
            }
            incoming.recordName = UUID().uuidString.lowercased()
        }
        let existing = try tx.record(zone: zone.id, name: incoming.recordName).flatMap { $0.deleted ? nil : $0 }
        let needsTag: Bool = [.update, .replace, .delete].contains(type)
        if let existing {
            if type == .create {
                var error = WireError(.exists, "record \(incoming.recordName) already exists")
                error.serverRecord = serverRecord(existing)
                throw error
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
            if database.key.scope == .public, case .user = caller.identity, existing.created.userRecordName != caller.userRecordName {
                throw WireError(.accessDenied, "record \(incoming.recordName) in the public database belongs to the user who created it")
            }
        } else if type != .create, type != .forceUpdate, type != .forceReplace {
            throw WireError(.notFound, "record \(incoming.recordName) does not exist")
        }

        switch type {
        case .delete, .forceDelete:
            try delete(existing!)
            return .deleted(incoming.recordName)
        case .create, .update, .forceUpdate, .replace, .forceReplace:
            let recordType = incoming.recordType ?? existing?.recordType
            guard let recordType else {
                throw WireError(.badRequest, "\(path).record.recordType: required to create record \(incoming.recordName)")
            }
            if let existing, recordType != existing.recordType {
                throw WireError(.badRequest, "\(path).record.recordType: record \(incoming.recordName) is a \(existing.recordType), not a \(recordType)")
            }
            var fields: [String: WireFieldValue]
            if let existing, type == .update || type == .forceUpdate {
                fields = existing.fields
                for (name, value) in incoming.fields ?? [:] { fields[name] = value }
                for name in incoming.nullFields { fields[name] = nil }
            } else {
                fields = incoming.fields ?? [:]
            }
            try checkSchema(recordType: recordType, fields: incoming.fields ?? [:], path: path)
            try checkReferences(fields: incoming.fields ?? [:], path: path)
            let stored = StoredRecord(zone: zone.id, recordName: incoming.recordName, recordType: recordType, changeTag: "",
                                      sequence: 0, deleted: false, fields: fields, created: existing?.created ?? stamp(),
                                      modified: stamp(), parent: incoming.parent ?? existing?.parent,
                                      shortGUID: existing?.shortGUID ?? (incoming.createShortGUID == true ? ModifyBatch.shortGUID() : nil))
            let size = stored.fieldsJSON.utf8.count
            let assetBytes = fields.values.filter { if case .asset = $0 { return true }; if case .list(.asset, _) = $0 { return true }; return false }
                .reduce(0) { $0 + $1.fieldJSON().serialized().count }
            guard size - assetBytes <= WireLimits.recordSize else {
                throw WireError(.badRequest, "limit exceeded: record \(incoming.recordName) is \(size - assetBytes) bytes; a record may have at most \(WireLimits.recordSize) bytes besides its assets")
            }
            var saved = stored
            saved.sequence = try tx.nextZoneSequence(zone: zone.id)
            saved.changeTag = ModifyBatch.changeTag(saved.sequence)
            try tx.putRecord(saved)
            changed = true
            return .saved(saved)
        }
    }

    static func shortGUID() -> String {
        let alphabet = Array("0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
        var generator = SystemRandomNumberGenerator()
        return "0" + String((0..<25).map { _ in alphabet[Int(generator.next() % UInt64(alphabet.count))] })
    }

    /// Field types are fixed by the first save of a field of a record type (CloudKit's
    /// just-in-time schema); a later value of another type is refused.
    mutating func checkSchema(recordType: String, fields: [String: WireFieldValue], path: String) throws {
        guard !fields.isEmpty else { return }
        let known: [String: String]
        if let cached = schemaCache[recordType] {
            known = cached
        } else {
            known = try tx.fieldTypes(container: database.key.container, environment: database.key.environment, recordType: recordType)
        }
        var added: [String: String] = [:]
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            let tag = value.type.description
            if let expected = known[name] {
                if expected == tag { continue }
                // An empty list of unknown type fits any list field.
                if value.type == .list(nil), expected.hasSuffix("_LIST") { continue }
                throw WireError(.badRequest, "\(path).record.fields.\(name): Invalid value, expected type \(expected)")
            } else if value.type != .list(nil) {
                added[name] = tag
            }
        }
        if !added.isEmpty {
            try tx.addFieldTypes(container: database.key.container, environment: database.key.environment, recordType: recordType, types: added)
            schemaCache[recordType] = known.merging(added) { first, _ in first }
        } else {
            schemaCache[recordType] = known
        }
    }

    /// VALIDATE references need their target to exist (in this database).
    mutating func checkReferences(fields: [String: WireFieldValue], path: String) throws {
        for (name, value) in fields {
            for case .reference(let reference) in value.elements where reference.action == .validate {
                let targetZoneName = reference.zoneID?.zoneName ?? zone.name
                let targetZone = targetZoneName == zone.name ? zone : try tx.zone(database: database.id, name: targetZoneName)
                let target = try targetZone.flatMap { try tx.record(zone: $0.id, name: reference.recordName) }
                guard let target, !target.deleted else {
                    throw WireError(.validatingReferenceError, "\(path).record.fields.\(name): the referenced record \(reference.recordName) does not exist in zone \(targetZoneName)")
                }
            }
        }
    }

    mutating func zonesOfDatabase() throws -> [StoredZone] {
        if let liveZones { return liveZones }
        let zones = try tx.zones(database: database.id)
        liveZones = zones
        return zones
    }

    /// Deletes a record and, transitively, every record with a DELETE_SELF reference to a
    /// deleted one; refuses when a VALIDATE reference from a surviving record points at one.
    mutating func delete(_ record: StoredRecord) throws {
        let zones = try zonesOfDatabase()
        let zoneNames = Dictionary(uniqueKeysWithValues: zones.map { ($0.id, $0.name) })
        var doomed: [StoredRecord] = [record]
        var doomedKeys: Set<String> = [RecordIndexEntry.referenceKey(zoneName: zone.name, recordName: record.recordName)]
        var blockers: [(StoredRecord, String)] = []
        var index = 0
        while index < doomed.count {
            let target = doomed[index]
            index += 1
            let targetZoneName = zoneNames[target.zone] ?? zone.name
            for source in try tx.referencing(zones: zones.map(\.id), targetZone: targetZoneName, targetName: target.recordName) {
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
            tombstone.sequence = try tx.nextZoneSequence(zone: victim.zone)
            tombstone.changeTag = ModifyBatch.changeTag(tombstone.sequence)
            tombstone.modified = stamp()
            try tx.putRecord(tombstone)
            if victim.zone == zone.id { changed = true } else { touchedZones.insert(victim.zone) }
        }
    }
}
