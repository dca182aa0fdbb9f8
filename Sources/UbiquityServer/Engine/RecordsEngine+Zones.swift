// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// `zones/list`: the default zone and every live zone.
    package func listZones(context: Context) async throws -> JSONValue {
        let key = try context.databaseKey(forWriting: false)
        if context.scope == .shared { return .object(["zones": .array([])]) }
        let zones: [StoredZone] = try await store.read { tx in
            guard let database = try await tx.database(key) else { return [] }
            return try await tx.zones(database: database.id)
        }
        var items: [JSONValue] = []
        if !zones.contains(where: { $0.name == WireZoneID.defaultZoneName }) {
            items.append(RecordsEngine.zoneJSON(nil, name: WireZoneID.defaultZoneName, key: key))
        }
        items += zones.map { RecordsEngine.zoneJSON($0, name: $0.name, key: key) }
        return .object(["zones": .array(items)])
    }

    /// `zones/lookup`: each zone, or a ZONE_NOT_FOUND item.
    package func lookupZones(_ zoneIDs: [WireZoneID], context: Context) async throws -> JSONValue {
        let key = try context.databaseKey(forWriting: false)
        // each answer made inside the read (not a `Result` of an optional zone carried out of it:
        // a shape Swift 6.3.1's optimized code misread elsewhere — docs/sync.md, "Folders before their files")
        let items: [JSONValue] = try await store.read { tx in
            var items: [JSONValue] = []
            for zoneID in zoneIDs {
                do {
                    try context.checkOwner(zoneID)
                    items.append(RecordsEngine.zoneJSON(try await RecordsEngine.readZone(tx, key: key, zoneID: zoneID), name: zoneID.zoneName, key: key))
                } catch {
                    var wire = (error as? WireError) ?? WireError(.internalError, "\(error)")
                    wire.zoneID = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
                    items.append(wire.json())
                }
            }
            return items
        }
        return .object(["zones": .array(items)])
    }

    /// `zones/modify`: create (private databases only; creating an existing zone returns it) and
    /// delete (with all its records, permanently).
    package func modifyZones(_ operations: [WireZoneOperation], context: Context) async throws -> JSONValue {
        guard operations.count <= WireLimits.operationsPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(operations.count) operations; a request may have at most \(WireLimits.operationsPerRequest)")
        }
        let key = try context.databaseKey(forWriting: true)
        let engine = self
        let observer = changeObserver
        let changedBy = context.caller.userRecordName ?? ""
        let (results, changes): ([Result<StoredZone, WireError>], [StoreChange]) = try await store.write { tx in
            let database = try await tx.lockDatabase(key)
            var results: [Result<StoredZone, WireError>] = []
            var changes: [StoreChange] = []
            for operation in operations {
                do {
                    try context.checkOwner(operation.zoneID)
                    let name = operation.zoneID.zoneName
                    switch operation.operationType {
                    case .create:
                        guard key.scope == .private else {
                            throw WireError(.badRequest, "custom zones exist only in private databases; the public database has only \(WireZoneID.defaultZoneName)")
                        }
                        if let zone = try await tx.zone(database: database.id, name: name) {
                            results.append(.success(zone))
                        } else {
                            let zone = try await tx.createZone(database: database.id, name: name, createdAt: engine.timestamp)
                            _ = try await tx.noteZoneChanged(database: database.id, zone: zone.id)
                            changes.append(.zone(ZoneChange(database: key, zone: zone, deleted: false, changedBy: changedBy)))
                            results.append(.success(zone))
                        }
                    case .delete:
                        guard !operation.zoneID.isDefault else { throw WireError(.badRequest, "the default zone cannot be deleted") }
                        guard key.scope == .private else { throw WireError(.badRequest, "the public database has no custom zones to delete") }
                        guard var zone = try await tx.zone(database: database.id, name: name) else {
                            throw WireError(.zoneNotFound, "zone \(name) does not exist")
                        }
                        try await tx.deleteZone(id: zone.id)
                        _ = try await tx.noteZoneChanged(database: database.id, zone: zone.id)
                        zone.deleted = true
                        changes.append(.zone(ZoneChange(database: key, zone: zone, deleted: true, changedBy: changedBy)))
                        results.append(.success(zone))
                    }
                } catch let error as WireError {
                    results.append(.failure(error))
                }
            }
            if let observer, !changes.isEmpty { try await observer.changesWillCommit(changes, in: tx) }
            return (results, changes)
        }
        if let observer, !changes.isEmpty { await observer.changesDidCommit(changes) }
        let items: [JSONValue] = zip(operations, results).map { operation, result in
            switch result {
            case .success(let zone) where zone.deleted:
                return .object(["zoneID": RecordsEngine.wireZoneID(zone.name, key: key).json, "deleted": .bool(true)])
            case .success(let zone):
                return RecordsEngine.zoneJSON(zone, name: zone.name, key: key)
            case .failure(var error):
                error.zoneID = RecordsEngine.wireZoneID(operation.zoneID.zoneName, key: key)
                return error.json()
            }
        }
        return .object(["zones": .array(items)])
    }
}
