// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// `records/lookup`: each record, or a NOT_FOUND item (also for a public record the caller's
    /// roles may not read, so that its existence does not leak); the answer as bytes, each
    /// record's stored fields spliced in as they are when nothing needs changing in them
    /// (``writeRecord(_:fieldsText:zone:desiredKeys:numbersAsStrings:guessed:context:to:)``).
    package func lookupRecordsBody(_ request: WireLookupRecordsRequest, context: Context) async throws -> [UInt8] {
        guard request.records.count <= WireLimits.recordsPerResponse else {
            throw WireError(.badRequest, "limit exceeded: \(request.records.count) records; a lookup may ask for at most \(WireLimits.recordsPerResponse)")
        }
        let key = try context.databaseKey(forWriting: false)
        let zoneID = request.zoneID ?? .default
        try context.checkOwner(zoneID)
        let caller = context.caller
        let found: [StoredRecordText?]
        let guessed: GuessedFields
        do {
            (found, guessed) = try await lookup(request, key: key, zoneID: zoneID, caller: caller)
        } catch var error as WireError where error.code == .zoneNotFound {
            // each record says so, as CloudKit answers a lookup in a missing zone
            return JSONValue.object(["records": .array(request.records.map { item in
                error.recordName = item.recordName
                return error.json()
            })]).serializedBytes()
        }
        let wireZone = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
        var out: [UInt8] = Array(#"{"records":["#.utf8)
        for (position, (item, record)) in zip(request.records, found).enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            guard let record else {
                var error = WireError(.notFound, "record \(item.recordName) does not exist")
                error.recordName = item.recordName
                error.json().write(to: &out)
                continue
            }
            try writeRecord(record.record, fieldsText: record.fieldsText, zone: wireZone, desiredKeys: item.desiredKeys ?? request.desiredKeys,
                            numbersAsStrings: request.numbersAsStrings, guessed: guessed, context: context, to: &out)
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }

    /// The records of a lookup the caller may read (nil where none), in request order, their
    /// fields as stored, and the guessed fields of their types.
    private func lookup(_ request: WireLookupRecordsRequest, key: DatabaseKey, zoneID: WireZoneID,
                        caller: RecordsCaller) async throws -> ([StoredRecordText?], GuessedFields) {
        // each statement reads its own facts: no common snapshot needed (nor its round trips)
        try await store.readWithoutSnapshot { tx in
            let (zone, stored) = try await tx.recordTexts(key: key, zoneName: zoneID.zoneName, names: request.records.map(\.recordName))
            guard zone != nil else {
                try RecordsEngine.checkMissingZone(key: key, zoneID: zoneID)
                return (Array(repeating: nil, count: request.records.count), .none)
            }
            var access = RecordAccess(key: key, caller: caller)
            var records: [StoredRecordText?] = []
            for item in request.records {
                guard let record = stored[item.recordName], !record.record.deleted, try await access.canRead(record.record, tx: tx) else {
                    records.append(nil)
                    continue
                }
                records.append(record)
            }
            return (records, try await GuessedFields.of(records.compactMap { $0?.record.recordType }, access: &access, tx: tx))
        }
    }

    /// `records/query`: filters ANDed, sorted, paged with continuation markers. Filters and sorts
    /// must use fields the schema indexes (queryable, sortable, searchable for token comparators);
    /// in the public database, records the caller's roles may not read are left out. The answer
    /// as bytes: records read as stored go out with their stored fields
    /// (``writeRecord(_:fieldsText:zone:desiredKeys:numbersAsStrings:guessed:context:to:)``).
    package func queryRecordsBody(_ request: WireQueryRecordsRequest, context: Context) async throws -> [UInt8] {
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
        // The type, roles, zones and indexes (one statement where the store can) and the usual
        // page, off an index in one statement, outside a transaction: a statement sees one
        // snapshot, and the index scan finds nothing unless its index is still ready. Any other
        // page is read in one snapshot after (queryPage).
        typealias Reading = (type: RecordTypeSchema?, zones: [StoredZone], query: WireQuery?, source: QueryPageSource,
                             found: (page: [QueryPageRecord], next: QueryPosition?)?)
        let reading: Reading = try await store.readWithoutSnapshot { tx in
            var access = RecordAccess(key: key, caller: caller)
            let target = try await tx.queryTarget(key: key, zoneName: zoneWide ? nil : zoneID.zoneName, recordType: request.query.recordType,
                                                  rolesOf: access.rolesToRead)
            access.adopt(target.type, named: request.query.recordType, roles: target.roles)
            var query = request.query
            try RecordsEngine.checkIndexes(query, type: target.type)
            switch try await access.readScope(query.recordType, tx: tx) {
            case .all: break
            case .own(let name):
                query.filterBy.append(WireFilter(comparator: .equals, key: .system(.createdUserRecordName), fieldValue: .reference(WireReference(recordName: name))))
            case .nothing: return (target.type, [], nil, .scan(wanted: nil), nil)
            }
            if !zoneWide, target.zones.isEmpty { try RecordsEngine.checkMissingZone(key: key, zoneID: zoneID) }
            guard !target.zones.isEmpty else { return (target.type, [], nil, .scan(wanted: nil), nil) }
            let source = QueryPageSource(type: target.type, zones: target.zones, query: query, start: start, indexes: target.indexes)
            guard case .index(let index, let plan, let zone, let type) = source else { return (target.type, target.zones, query, source, nil) }
            let found = try await RecordsEngine.indexedPage(tx, index: index, plan: plan, zone: zone, type: type, query: query, start: start, limit: limit,
                                                           oneStatement: true)
            return (target.type, target.zones, query, source, found)
        }
        var page: [QueryPageRecord] = []
        var next: QueryPosition?
        if let found = reading.found {
            (page, next) = found
        } else if let query = reading.query {
            let conditions = RecordFilter.indexConditions(for: query.filterBy, zoneName: zoneWide ? nil : zoneID.zoneName)
            (page, next) = try await RecordsEngine.queryPage(store, source: reading.source, type: reading.type, zones: reading.zones, query: query,
                                                            conditions: conditions, start: start, limit: limit)
        }
        let guessed = GuessedFields(reading.type)
        // development adds the index a query shape needs (production's come from deployment)
        if case .scan(let wanted?) = reading.source, key.environment == .development {
            await queryIndexBuilder.request(wanted, container: key.container, environment: key.environment)
        }
        var out: [UInt8] = Array(#"{"records":["#.utf8)
        out.reserveCapacity(page.count * 400 + 64)
        for (position, item) in page.enumerated() {
            if position > 0 { out.append(UInt8(ascii: ",")) }
            try writeRecord(item.record, fieldsText: item.fieldsText, zone: RecordsEngine.wireZoneID(item.zoneName, key: key),
                            desiredKeys: request.desiredKeys, numbersAsStrings: request.numbersAsStrings, guessed: guessed, context: context, to: &out)
        }
        out.append(UInt8(ascii: "]"))
        if let next {
            out.append(contentsOf: #","continuationMarker":"#.utf8)
            JSONValue.string(SyncToken.marker(fingerprint: fingerprint, after: next)).write(to: &out)
        }
        out.append(UInt8(ascii: "}"))
        return out
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
