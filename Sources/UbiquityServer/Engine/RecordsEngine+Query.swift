// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// A page of a query's matches: at most `limit`, sorted, from `start`; the position of its
    /// last record when more matches follow. `type` is the query's record type in the
    /// environment's schema (nil when it has none). Read in one snapshot: without a ready index
    /// a page's keys and its records are two statements, and a record changed between them would
    /// be answered under a filter it no longer meets.
    ///
    /// The usual page, off an index in one statement, needs no snapshot: `records/query` reads it
    /// with the query's other reads (``indexedPage(_:index:plan:zone:type:query:start:limit:oneStatement:)``)
    /// and comes here only when that was not enough.
    static func queryPage(_ store: any RecordStore, source: QueryPageSource, type: RecordTypeSchema?, zones: [StoredZone], query: WireQuery,
                          conditions: [IndexCondition], start: QueryStart, limit: Int) async throws -> (page: [QueryPageRecord], next: QueryPosition?) {
        if case .index(let index, let plan, let zone, let indexedType) = source, let found = try await store.read({ tx -> (page: [QueryPageRecord], next: QueryPosition?)? in
            // the index's keys hold every record only while it is ready, seen in this snapshot
            let indexes = try await tx.queryIndexStore().queryIndexes(container: index.container, environment: index.environment)
            guard indexes.contains(where: { $0.id == index.id && $0.ready }) else { return nil }
            return try await indexedPage(tx, index: index, plan: plan, zone: zone, type: indexedType, query: query, start: start, limit: limit)
        }) {
            return found
        }
        // scanned, or the index was dropped meanwhile
        let (page, next) = try await store.read { tx in
            try await scannedPage(tx, type: type, zones: zones, query: query, conditions: conditions, start: start, limit: limit)
        }
        return (page.map { QueryPageRecord(record: $0.record, zoneName: $0.zoneName) }, next)
    }

    /// The page read off a ready index: keys in the plan's range from `start`, in batches, each
    /// batch's records read as stored and — unless the plan decides every filter exactly —
    /// decoded and filtered, until `limit` and one more match. The index must be ready: a scan of
    /// one that is not finds nothing.
    ///
    /// `oneStatement`: the page is read outside a snapshot, so it must come from one scan, whose
    /// hits prove the index was ready as it ran. Nil when it needs another batch or the scan
    /// found nothing (which outside a snapshot could also mean the index was just dropped).
    static func indexedPage(_ tx: any RecordStoreTransaction, index: StoredQueryIndex, plan: QueryIndexPlan, zone: StoredZone, type: RecordTypeSchema,
                            query: WireQuery, start: QueryStart, limit: Int, oneStatement: Bool = false) async throws -> (page: [QueryPageRecord], next: QueryPosition?)? {
        let store = try tx.queryIndexStore()
        let guessed = GuessedFields(type)
        func decoded(_ item: StoredRecordText) -> StoredRecord { guessed.retyped(Self.decoded(item.record, fieldsText: item.fieldsText)) }
        var lower = plan.lower
        if case .after(let position) = start { lower = plan.start(after: position) }
        var matched: [QueryPageRecord] = []
        var batch = limit + 1
        var scans = 0
        scan: while lower.lexicographicallyPrecedes(plan.upper) {
            if oneStatement, scans > 0 { return nil }
            scans += 1
            let hits = try await store.scanQueryIndex(id: index.id, zone: zone.id, from: lower, to: plan.upper, limit: batch)
            if oneStatement, hits.isEmpty { return nil }
            for hit in hits {
                let item = hit.stored
                guard !item.record.deleted else { continue }
                if plan.exact {
                    matched.append(QueryPageRecord(record: item.record, zoneName: zone.name, fieldsText: item.fieldsText))
                } else {
                    let record = decoded(item)
                    guard query.filterBy.allSatisfy({ RecordFilter.matches($0, record: record, zoneName: zone.name) }) else { continue }
                    matched.append(QueryPageRecord(record: record, zoneName: zone.name, fieldsText: item.fieldsText))
                }
                if matched.count > limit { break scan }
            }
            guard hits.count == batch, let last = hits.last else { break }
            lower = last.key + [0]
            batch = min(batch * 2, 1_000)
        }
        guard matched.count > limit else { return (matched, nil) }
        let page = Array(matched.prefix(limit))
        // the position of the page's last record, from its decoded fields
        guard let last = page.last else { return (page, nil) }
        let record = last.record.fields.isEmpty ? decoded(StoredRecordText(record: last.record, fieldsText: last.fieldsText ?? "{}")) : last.record
        return (page, QueryPosition(of: (record, last.zoneName), by: query.sortBy))
    }

    /// The page from every candidate the store's prefilter gives, filtered and sorted here.
    ///
    /// When every field the query filters or sorts on is one whose whole value the index rows
    /// hold (a scalar STRING, INT64, DOUBLE or TIMESTAMP field; a LOCATION under NEAR or a
    /// distance sort; the system fields kept in columns), the records are filtered and sorted on
    /// their keys (`candidateKeys`), with the same `RecordFilter` code, and only the page is read
    /// and decoded. Otherwise — or when a key turns out not to be whole (text cut by the index,
    /// an integer past 2⁵³) — every candidate is decoded and filtered.
    static func scannedPage(_ tx: any RecordStoreTransaction, type: RecordTypeSchema?, zones: [StoredZone], query: WireQuery,
                            conditions: [IndexCondition], start: QueryStart, limit: Int) async throws -> (page: [(record: StoredRecord, zoneName: String)], next: QueryPosition?) {
        let names = Dictionary(uniqueKeysWithValues: zones.map { ($0.id, $0.name) })
        let zoneIDs = zones.map(\.id)
        let schema = type?.fields.mapValues(\.type) ?? [:]
        if let fields = keyFields(for: query, schema: schema) {
            let keys = try await tx.candidateKeys(zones: zoneIDs, recordType: query.recordType, conditions: conditions, fields: fields)
            var light: [(record: StoredRecord, zoneName: String)] = []
            var ids: [String: Int64] = [:]
            var whole = true
            light.reserveCapacity(keys.count)
            for item in keys {
                guard let record = lightRecord(item, recordType: query.recordType, schema: schema) else {
                    whole = false
                    break
                }
                let zoneName = names[item.zone] ?? WireZoneID.defaultZoneName
                guard query.filterBy.allSatisfy({ RecordFilter.matches($0, record: record, zoneName: zoneName) }) else { continue }
                light.append((record, zoneName))
                ids[zoneName + RecordIndexEntry.referenceSeparator + item.recordName] = item.id
            }
            if whole {
                let (page, next) = Self.page(of: light, query: query, start: start, limit: limit)
                let pageIDs = page.compactMap { ids[$0.zoneName + RecordIndexEntry.referenceSeparator + $0.record.recordName] }
                let records = try await tx.records(ids: pageIDs)
                let guessed = GuessedFields(type)
                let full = zip(page, pageIDs).compactMap { item, id in records[id].map { (record: guessed.retyped($0), zoneName: item.zoneName) } }
                return (full, next)
            }
        }
        let guessed = GuessedFields(type)
        let candidates = try await tx.candidates(zones: zoneIDs, recordType: query.recordType, conditions: conditions).map(guessed.retyped)
        let matched = candidates.compactMap { record -> (record: StoredRecord, zoneName: String)? in
            let zoneName = names[record.zone] ?? WireZoneID.defaultZoneName
            return query.filterBy.allSatisfy { RecordFilter.matches($0, record: record, zoneName: zoneName) } ? (record, zoneName) : nil
        }
        return Self.page(of: matched, query: query, start: start, limit: limit)
    }

    /// The page of `matches` from `start`, sorted, and the position of its last record when
    /// more follow.
    static func page(of matches: [(record: StoredRecord, zoneName: String)], query: WireQuery, start: QueryStart, limit: Int)
        -> (page: [(record: StoredRecord, zoneName: String)], next: QueryPosition?) {
        let ordered = RecordFilter.ordered(matches, by: query.sortBy)
        let from: Int
        switch start {
        case .first: from = 0
        case .offset(let offset): from = min(offset, ordered.count)
        case .after(let position):
            from = ordered.firstIndex { position.precedes($0.position, by: query.sortBy) } ?? ordered.count
        }
        let page = ordered[from...].prefix(limit)
        let more = from + page.count < ordered.count
        return (page.map(\.item), more ? page.last?.position : nil)
    }

    /// The custom fields to read keys of, or nil when the query needs whole records.
    static func keyFields(for query: WireQuery, schema: [String: String]) -> [String]? {
        var fields = Set<String>()
        func accept(_ key: WireFieldKey, location: Bool) -> Bool {
            switch key {
            case .system(let field):
                return [.recordName, .createdTimestamp, .modifiedTimestamp, .createdUserRecordName, .modifiedUserRecordName].contains(field)
            case .field(let name):
                if RecordFilter.isAllTokensField(name) { return false }
                switch schema[name] {
                case nil, "STRING", "INT64", "DOUBLE", "TIMESTAMP": break
                case "LOCATION": if !location { return false }
                default: return false
                }
                fields.insert(name)
                return true
            }
        }
        for filter in query.filterBy where !accept(filter.key, location: filter.comparator == .near) { return nil }
        for sort in query.sortBy where !accept(sort.key, location: sort.relativeLocation != nil) { return nil }
        return fields.sorted()
    }

    /// A record with only the keyed fields, or nil when an index entry does not hold the whole value.
    static func lightRecord(_ keys: StoredRecordKeys, recordType: String, schema: [String: String]) -> StoredRecord? {
        var fields: [String: WireFieldValue] = [:]
        for (name, entry) in keys.entries {
            switch schema[name] {
            case "STRING":
                guard let text = entry.text, text.utf8.count < RecordIndexEntry.maximumTextBytes - 3 else { return nil }
                fields[name] = .string(text)
            case "INT64":
                guard let number = entry.number, abs(number) < RecordIndexEntry.exactNumberLimit else { return nil }
                fields[name] = .int64(Int64(number))
            case "TIMESTAMP":
                guard let number = entry.number, abs(number) < RecordIndexEntry.exactNumberLimit else { return nil }
                fields[name] = .timestamp(number)
            case "DOUBLE":
                guard let number = entry.number else { return nil }
                fields[name] = .double(number)
            case "LOCATION":
                guard let latitude = entry.latitude, let longitude = entry.longitude else { return nil }
                fields[name] = .location(WireLocation(latitude: latitude, longitude: longitude))
            default:
                return nil
            }
        }
        return StoredRecord(zone: keys.zone, recordName: keys.recordName, recordType: recordType, changeTag: "", sequence: 0, deleted: false,
                            fields: fields, created: keys.created, modified: keys.modified)
    }
}

/// A record of a query's page: decoded and retyped (its fields in `record.fields`), with its
/// stored fields text when it was read as stored (then `record.fields` may be empty: it was not
/// decoded, the index having matched it exactly).
struct QueryPageRecord: Sendable {
    var record: StoredRecord
    var zoneName: String
    var fieldsText: String? = nil
}
