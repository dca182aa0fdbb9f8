// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension RecordsEngine {
    /// `records/lookup`: each record, or a NOT_FOUND item.
    public func lookupRecords(_ request: WireLookupRecordsRequest, context: Context) async throws -> JSONValue {
        guard request.records.count <= WireLimits.recordsPerResponse else {
            throw WireError(.badRequest, "limit exceeded: \(request.records.count) records; a lookup may ask for at most \(WireLimits.recordsPerResponse)")
        }
        let key = try context.databaseKey(forWriting: false)
        let zoneID = request.zoneID ?? .default
        try context.checkOwner(zoneID)
        let found: [StoredRecord?] = try await store.read { tx in
            guard let zone = try RecordsEngine.readZone(tx, key: key, zoneID: zoneID) else {
                return Array(repeating: nil, count: request.records.count)
            }
            return try request.records.map { item in try tx.record(zone: zone.id, name: item.recordName).flatMap { $0.deleted ? nil : $0 } }
        }
        let wireZone = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
        let items: [JSONValue] = zip(request.records, found).map { item, record in
            guard let record else {
                var error = WireError(.notFound, "record \(item.recordName) does not exist")
                error.recordName = item.recordName
                return error.json()
            }
            return record.wireRecord(zoneID: wireZone).json(desiredKeys: item.desiredKeys ?? request.desiredKeys, numbersAsStrings: request.numbersAsStrings)
        }
        return .object(["records": .array(items)])
    }

    /// `records/query`: filters ANDed, sorted, paged with continuation markers.
    public func queryRecords(_ request: WireQueryRecordsRequest, context: Context) async throws -> JSONValue {
        let key = try context.databaseKey(forWriting: false)
        let zoneWide = request.zoneWide && request.zoneID == nil
        let zoneID = request.zoneID ?? .default
        if !zoneWide { try context.checkOwner(zoneID) }
        let limit = min(request.resultsLimit ?? WireLimits.recordsPerResponse, WireLimits.recordsPerResponse)
        let fingerprint = RecordsEngine.fingerprint(request, key: key)
        var offset = 0
        if let marker = request.continuationMarker {
            guard let (print, value) = SyncToken.decode(marker, kind: "q1"), print == fingerprint else {
                throw WireError(.badRequest, "continuationMarker: not a marker of this query (a marker is valid only with the query, zone and database it came from)")
            }
            offset = Int(value)
        }
        let query = request.query
        let conditions = RecordFilter.indexConditions(for: query.filterBy, zoneName: zoneWide ? nil : zoneID.zoneName)
        let matched: [(record: StoredRecord, zoneName: String)] = try await store.read { tx in
            var zones: [StoredZone] = []
            if zoneWide {
                if let database = try tx.database(key) { zones = try tx.zones(database: database.id) }
            } else if let zone = try RecordsEngine.readZone(tx, key: key, zoneID: zoneID) {
                zones = [zone]
            }
            let names = Dictionary(uniqueKeysWithValues: zones.map { ($0.id, $0.name) })
            let candidates = try tx.candidates(zones: zones.map(\.id), recordType: query.recordType, conditions: conditions)
            return candidates.compactMap { record in
                let zoneName = names[record.zone] ?? zoneID.zoneName
                return query.filterBy.allSatisfy { RecordFilter.matches($0, record: record, zoneName: zoneName) } ? (record, zoneName) : nil
            }
        }
        let sorted = RecordFilter.sort(matched, by: query.sortBy)
        let page = sorted.dropFirst(offset).prefix(limit)
        var body: [String: JSONValue] = [
            "records": .array(page.map { item in
                item.record.wireRecord(zoneID: RecordsEngine.wireZoneID(item.zoneName, key: key))
                    .json(desiredKeys: request.desiredKeys, numbersAsStrings: request.numbersAsStrings)
            }),
        ]
        if offset + page.count < sorted.count {
            body["continuationMarker"] = .string(SyncToken.marker(fingerprint: fingerprint, offset: offset + page.count))
        }
        return .object(body)
    }

    /// What a continuation marker is bound to: the query, its zone and the database.
    static func fingerprint(_ request: WireQueryRecordsRequest, key: DatabaseKey) -> String {
        var identity = request.query.json
        if case .object(var members) = identity {
            members["zone"] = .string(request.zoneID?.zoneName ?? (request.zoneWide ? "*" : WireZoneID.defaultZoneName))
            members["db"] = .string(key.description)
            identity = .object(members)
        }
        return String(SHA256Digest.hexHash(identity.serialized()).prefix(24))
    }
}
