// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// `records/lookup`: each record, or a NOT_FOUND item (also for a public record the caller's
    /// roles may not read, so that its existence does not leak).
    package func lookupRecords(_ request: WireLookupRecordsRequest, context: Context) async throws -> JSONValue {
        guard request.records.count <= WireLimits.recordsPerResponse else {
            throw WireError(.badRequest, "limit exceeded: \(request.records.count) records; a lookup may ask for at most \(WireLimits.recordsPerResponse)")
        }
        let key = try context.databaseKey(forWriting: false)
        let zoneID = request.zoneID ?? .default
        try context.checkOwner(zoneID)
        let caller = context.caller
        let found: [StoredRecord?]
        do {
            found = try await lookup(request, key: key, zoneID: zoneID, caller: caller)
        } catch var error as WireError where error.code == .zoneNotFound {
            // each record says so, as CloudKit answers a lookup in a missing zone
            return .object(["records": .array(request.records.map { item in
                error.recordName = item.recordName
                return error.json()
            })])
        }
        let wireZone = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
        let items: [JSONValue] = zip(request.records, found).map { item, record in
            guard let record else {
                var error = WireError(.notFound, "record \(item.recordName) does not exist")
                error.recordName = item.recordName
                return error.json()
            }
            return presented(record, context: context).wireRecord(zoneID: wireZone).json(desiredKeys: item.desiredKeys ?? request.desiredKeys, numbersAsStrings: request.numbersAsStrings)
        }
        return .object(["records": .array(items)])
    }

    /// The records of a lookup the caller may read (nil where none), in request order, their
    /// guessed fields in the schema's types.
    private func lookup(_ request: WireLookupRecordsRequest, key: DatabaseKey, zoneID: WireZoneID,
                        caller: RecordsCaller) async throws -> [StoredRecord?] {
        try await store.read { tx in
            guard let zone = try RecordsEngine.readZone(tx, key: key, zoneID: zoneID) else {
                return Array(repeating: nil, count: request.records.count)
            }
            var access = RecordAccess(key: key, caller: caller)
            let records = try request.records.map { item -> StoredRecord? in
                guard let record = try tx.record(zone: zone.id, name: item.recordName), !record.deleted,
                      try access.canRead(record, tx: tx) else { return nil }
                return record
            }
            let guessed = try GuessedFields.of(records.compactMap { $0?.recordType }, key: key, tx: tx)
            return records.map { $0.map(guessed.retyped) }
        }
    }

    /// `records/query`: filters ANDed, sorted, paged with continuation markers. Filters and sorts
    /// must use fields the schema indexes (queryable, sortable, searchable for token comparators);
    /// in the public database, records the caller's roles may not read are left out.
    package func queryRecords(_ request: WireQueryRecordsRequest, context: Context) async throws -> JSONValue {
        guard request.query.recordType != UserDirectory.recordType else {
            throw WireError(.badRequest, "query.recordType: user records (Users) cannot be queried; look them up by name, or find users with users/discover")
        }
        let key = try context.databaseKey(forWriting: false)
        let zoneWide = request.zoneWide && request.zoneID == nil
        let zoneID = request.zoneID ?? .default
        if !zoneWide { try context.checkOwner(zoneID) }
        let limit = min(request.resultsLimit ?? WireLimits.recordsPerResponse, WireLimits.recordsPerResponse)
        let fingerprint = RecordsEngine.fingerprint(request, key: key)
        var begin = QueryStart.first
        if let marker = request.continuationMarker {
            if let (print, text) = SyncToken.decodeMarker(marker), print == fingerprint,
               let position = QueryPosition(encoded: text, count: request.query.sortBy.count) {
                begin = .after(position)
            } else if let (print, value) = SyncToken.decode(marker, kind: "q1"), print == fingerprint {
                begin = .offset(Int(clamping: value))
            } else {
                throw WireError(.badRequest, "continuationMarker: not a marker of this query (a marker is valid only with the query, zone and database it came from)")
            }
        }
        let start = begin
        let caller = context.caller
        let (page, next): ([(record: StoredRecord, zoneName: String)], QueryPosition?) = try await store.read { tx in
            var access = RecordAccess(key: key, caller: caller)
            var query = request.query
            let type = try access.recordType(query.recordType, tx: tx)
            try RecordsEngine.checkIndexes(query, type: type)
            switch try access.readScope(query.recordType, tx: tx) {
            case .all: break
            case .own(let name):
                query.filterBy.append(WireFilter(comparator: .equals, key: .system(.createdUserRecordName), fieldValue: .reference(WireReference(recordName: name))))
            case .nothing: return ([], nil)
            }
            let conditions = RecordFilter.indexConditions(for: query.filterBy, zoneName: zoneWide ? nil : zoneID.zoneName)
            var zones: [StoredZone] = []
            if zoneWide {
                if let database = try tx.database(key) { zones = try tx.zones(database: database.id) }
            } else if let zone = try RecordsEngine.readZone(tx, key: key, zoneID: zoneID) {
                zones = [zone]
            }
            return try RecordsEngine.queryPage(tx, type: type, zones: zones, query: query, conditions: conditions, start: start, limit: limit)
        }
        var body: [String: JSONValue] = [
            "records": .array(page.map { item in
                presented(item.record, context: context).wireRecord(zoneID: RecordsEngine.wireZoneID(item.zoneName, key: key))
                    .json(desiredKeys: request.desiredKeys, numbersAsStrings: request.numbersAsStrings)
            }),
        ]
        if let next {
            body["continuationMarker"] = .string(SyncToken.marker(fingerprint: fingerprint, after: next))
        }
        return .object(body)
    }

    /// Refuses (BAD_REQUEST, as CloudKit) a filter on a field that is not queryable, a token
    /// comparator on one that is not searchable (`allTokens`: when the type has string fields but
    /// none is searchable) and a sort on one that is not sortable. Fields the schema does not know
    /// match nothing, as before; system fields are always queryable and sortable.
    static func checkIndexes(_ query: WireQuery, type: RecordTypeSchema?) throws {
        guard let type else { return }
        for (index, filter) in query.filterBy.enumerated() {
            guard case .field(let name) = filter.key else { continue }
            if RecordFilter.isAllTokensField(name) {
                let strings = type.fields.values.filter { SchemaField.canBeSearchable(type: $0.type) }
                if !strings.isEmpty, !strings.contains(where: \.searchable) {
                    throw WireError(.badRequest, "query.filterBy[\(index)]: Field '\(name)' needs a searchable field; no field of \(type.name) is marked searchable")
                }
                continue
            }
            guard let field = type.fields[name] else { continue }
            guard SchemaField.canBeIndexed(type: field.type) else {
                throw WireError(.badRequest, "query.filterBy[\(index)]: Field '\(name)' is \(field.type): bytes and assets cannot be queried")
            }
            if filter.comparator == .containsAllTokens || filter.comparator == .containsAnyTokens {
                guard field.searchable else { throw WireError(.badRequest, "query.filterBy[\(index)]: Field '\(name)' is not marked searchable") }
            } else if !field.queryable {
                throw WireError(.badRequest, "query.filterBy[\(index)]: Field '\(name)' is not marked queryable")
            }
        }
        for (index, sort) in query.sortBy.enumerated() {
            guard case .field(let name) = sort.key, let field = type.fields[name] else { continue }
            guard SchemaField.canBeIndexed(type: field.type) else {
                throw WireError(.badRequest, "query.sortBy[\(index)]: Field '\(name)' is \(field.type): bytes and assets cannot be sorted on")
            }
            if !field.sortable { throw WireError(.badRequest, "query.sortBy[\(index)]: Field '\(name)' is not marked sortable") }
        }
    }

    /// What a continuation marker is bound to: the query, its zone and the database.
    static func fingerprint(_ request: WireQueryRecordsRequest, key: DatabaseKey) -> String {
        var identity = request.query.json
        if case .object(var members) = identity {
            members["zone"] = .string(request.zoneID?.zoneName ?? (request.zoneWide ? "*" : WireZoneID.defaultZoneName))
            members["db"] = .string(key.description)
            identity = .object(members)
        }
        return String(SHA256.hexHash(identity.serialized()).prefix(24))
    }
}
