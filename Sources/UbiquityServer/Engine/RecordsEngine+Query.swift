// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension RecordsEngine {
    /// The matches of a query in `zones`, sorted, from `offset`, at most `limit`, and how many
    /// there are in all.
    ///
    /// When every field the query filters or sorts on is one whose whole value the index holds
    /// (a scalar STRING, INT64, DOUBLE or TIMESTAMP field; a LOCATION under NEAR or a distance
    /// sort; the system fields kept in columns), the records are filtered and sorted on their
    /// keys (`candidateKeys`), with the same `RecordFilter` code, and only the page is read and
    /// decoded. Otherwise — or when a key turns out not to be whole (text cut by the index,
    /// an integer past 2⁵³) — every candidate is decoded and filtered.
    /// `type` is the query's record type in the environment's schema (nil when it has none).
    static func queryPage(_ tx: any RecordStoreTransaction, type: RecordTypeSchema?, zones: [StoredZone], query: WireQuery,
                          conditions: [IndexCondition], offset: Int, limit: Int) throws -> (page: [(record: StoredRecord, zoneName: String)], total: Int) {
        let names = Dictionary(uniqueKeysWithValues: zones.map { ($0.id, $0.name) })
        let zoneIDs = zones.map(\.id)
        let schema = type?.fields.mapValues(\.type) ?? [:]
        if let fields = keyFields(for: query, schema: schema) {
            let keys = try tx.candidateKeys(zones: zoneIDs, recordType: query.recordType, conditions: conditions, fields: fields)
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
                let page = RecordFilter.sort(light, by: query.sortBy).dropFirst(offset).prefix(limit)
                let pageIDs = page.compactMap { ids[$0.zoneName + RecordIndexEntry.referenceSeparator + $0.record.recordName] }
                let records = try tx.records(ids: pageIDs)
                let full = zip(page, pageIDs).compactMap { item, id in records[id].map { (record: $0, zoneName: item.zoneName) } }
                return (full, light.count)
            }
        }
        let candidates = try tx.candidates(zones: zoneIDs, recordType: query.recordType, conditions: conditions)
        let matched = candidates.compactMap { record -> (record: StoredRecord, zoneName: String)? in
            let zoneName = names[record.zone] ?? WireZoneID.defaultZoneName
            return query.filterBy.allSatisfy { RecordFilter.matches($0, record: record, zoneName: zoneName) } ? (record, zoneName) : nil
        }
        return (Array(RecordFilter.sort(matched, by: query.sortBy).dropFirst(offset).prefix(limit)), matched.count)
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
        let exactInteger = 9_007_199_254_740_992.0 // 2^53
        var fields: [String: WireFieldValue] = [:]
        for (name, entry) in keys.entries {
            switch schema[name] {
            case "STRING":
                guard let text = entry.text, text.utf8.count < RecordIndexEntry.maximumTextBytes - 3 else { return nil }
                fields[name] = .string(text)
            case "INT64":
                guard let number = entry.number, abs(number) < exactInteger else { return nil }
                fields[name] = .int64(Int64(number))
            case "TIMESTAMP":
                guard let number = entry.number, abs(number) < exactInteger else { return nil }
                fields[name] = .timestamp(Int64(number))
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
