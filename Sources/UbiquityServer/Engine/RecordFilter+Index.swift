// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordFilter {
    /// Index conditions whose matches include every record the filters match (the store's
    /// prefilter). Filters that cannot be expressed safely give no condition; the exact
    /// evaluation runs afterwards either way. `zoneName` is the zone when the query has one.
    package static func indexConditions(for filters: [WireFilter], zoneName: String?) -> [IndexCondition] {
        filters.flatMap { indexConditions(for: $0, zoneName: zoneName) }
    }

    static func indexValue(_ value: WireFieldValue, zoneName: String?, forEquality: Bool) -> IndexValue? {
        switch value {
        case .int64, .double, .timestamp: return number(value).map(IndexValue.number)
        case .string(let text): return .text(RecordIndexEntry.indexedText(text))
        case .bytes(let data): return forEquality ? .text(RecordIndexEntry.indexedText(data.base64EncodedString())) : nil
        case .reference(let reference):
            guard forEquality, let zone = reference.zoneID?.zoneName ?? zoneName else { return nil }
            return .text(RecordIndexEntry.indexedText(RecordIndexEntry.referenceKey(zoneName: zone, recordName: reference.recordName)))
        default: return nil
        }
    }

    static func indexConditions(for filter: WireFilter, zoneName: String?) -> [IndexCondition] {
        let field = filter.key.indexName
        if case .field(let name) = filter.key, isAllTokensField(name) { return [] }
        // The record name and the user fields are indexed as plain text: references to them
        // (alone or in a list) compare by record name.
        var value = filter.fieldValue
        if case .system(let system) = filter.key, [.recordName, .createdUserRecordName, .modifiedUserRecordName].contains(system) {
            func plain(_ value: WireFieldValue) -> WireFieldValue {
                if case .reference(let reference) = value { return .string(reference.recordName) }
                return value
            }
            if case .list(let element, let items) = value {
                value = .list(element: element == .reference ? .string : element, items.map(plain))
            } else {
                value = plain(value)
            }
        }
        switch filter.comparator {
        case .equals, .listContains:
            if case .list = value { return [] }
            return indexValue(value, zoneName: zoneName, forEquality: true).map { [.compare(field: field, .equal, $0)] } ?? []
        case .lessThan, .lessThanOrEquals:
            guard let index = indexValue(value, zoneName: zoneName, forEquality: false) else { return [] }
            return [.compare(field: field, filter.comparator == .lessThan ? .less : .lessOrEqual, index)]
        case .greaterThan, .greaterThanOrEquals:
            if case .string(let text) = value, text.utf8.count >= RecordIndexEntry.maximumTextBytes { return [] }
            guard let index = indexValue(value, zoneName: zoneName, forEquality: false) else { return [] }
            return [.compare(field: field, filter.comparator == .greaterThan ? .greater : .greaterOrEqual, index)]
        case .in, .listContainsAny:
            let options = value.elements.compactMap { indexValue($0, zoneName: zoneName, forEquality: true) }
            guard options.count == value.elements.count else { return [] }
            return [.anyOf(field: field, options)]
        case .listContainsAll:
            return value.elements.compactMap { indexValue($0, zoneName: zoneName, forEquality: true) }.map { .compare(field: field, .equal, $0) }
        case .beginsWith, .listMemberBeginsWith:
            guard case .string(let prefix) = value else { return [] }
            return [.prefix(field: field, RecordIndexEntry.indexedText(prefix))]
        case .near:
            guard case .location(let center) = value, let distance = filter.distance else { return [] }
            // One degree of latitude is at least 110.5 km; widen by 1 % and 1 m for rounding.
            let latitudeSpan = (distance * 1.01 + 1) / 110_574
            let minLatitude = center.latitude - latitudeSpan, maxLatitude = center.latitude + latitudeSpan
            if minLatitude <= -90 || maxLatitude >= 90 {
                return [.box(field: field, minLatitude: max(minLatitude, -90), maxLatitude: min(maxLatitude, 90), minLongitude: -180, maxLongitude: 180)]
            }
            let widest = max(abs(minLatitude), abs(maxLatitude)) * .pi / 180
            let longitudeSpan = latitudeSpan / max(cos(widest), 1e-9)
            if longitudeSpan >= 180 {
                return [.box(field: field, minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: -180, maxLongitude: 180)]
            }
            var minLongitude = center.longitude - longitudeSpan, maxLongitude = center.longitude + longitudeSpan
            if minLongitude < -180 { minLongitude += 360 }
            if maxLongitude > 180 { maxLongitude -= 360 }
            return [.box(field: field, minLatitude: minLatitude, maxLatitude: maxLatitude, minLongitude: minLongitude, maxLongitude: maxLongitude)]
        default:
            return []
        }
    }
}
