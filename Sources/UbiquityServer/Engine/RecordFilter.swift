// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// Exact evaluation of CloudKit query filters and sort descriptors on stored records: the
/// semantics of every comparator, written once and used after the store's index prefilter.
///
/// A record without the filtered field matches no comparator (negations included), as SQL's
/// NULL does. Numbers of every kind (INT64, DOUBLE, TIMESTAMP) compare numerically; a STRING
/// compares with a REFERENCE by record name.
package enum RecordFilter {
    /// The values of a field or system field of a record (a scalar as one element, a list's
    /// elements), and whether the field is a list; nil when the record lacks it.
    static func values(of key: WireFieldKey, in record: StoredRecord, zoneName: String) -> (values: [WireFieldValue], isList: Bool)? {
        switch key {
        case .field(let name):
            guard let value = record.fields[name] else { return nil }
            if case .list(_, let items) = value { return (items, true) }
            return ([value], false)
        case .system(let field):
            switch field {
            case .recordName: return ([.string(record.recordName)], false)
            case .createdTimestamp: return ([.timestamp(Double(record.created.timestamp))], false)
            case .modifiedTimestamp: return ([.timestamp(Double(record.modified.timestamp))], false)
            case .createdUserRecordName: return ([.reference(WireReference(recordName: record.created.userRecordName))], false)
            case .modifiedUserRecordName: return ([.reference(WireReference(recordName: record.modified.userRecordName))], false)
            case .parent:
                guard let parent = record.parent else { return nil }
                return ([.reference(WireReference(recordName: parent, zoneID: WireZoneID(zoneName: zoneName)))], false)
            case .share: return nil
            }
        }
    }

    /// Whether `record` (in the zone named `zoneName`) satisfies `filter`.
    package static func matches(_ filter: WireFilter, record: StoredRecord, zoneName: String) -> Bool {
        if case .field(let name) = filter.key, isAllTokensField(name) {
            return tokensMatch(filter, text: record.fields.values.flatMap(\.elements).compactMap { if case .string(let text) = $0 { return text } else { return nil } })
        }
        guard let (values, isList) = values(of: filter.key, in: record, zoneName: zoneName) else { return false }
        let operands = filter.fieldValue.elements
        let single = filter.fieldValue
        func contains(_ value: WireFieldValue) -> Bool { values.contains { equal($0, value, zoneName: zoneName) } }
        switch filter.comparator {
        case .equals:
            if isList, case .list = single { return values.count == operands.count && zip(values, operands).allSatisfy { equal($0, $1, zoneName: zoneName) } }
            return contains(single)
        case .notEquals:
            if isList, case .list = single { return !(values.count == operands.count && zip(values, operands).allSatisfy { equal($0, $1, zoneName: zoneName) }) }
            return !contains(single)
        case .lessThan: return values.contains { compare($0, single).map { $0 < 0 } ?? false }
        case .lessThanOrEquals: return values.contains { compare($0, single).map { $0 <= 0 } ?? false }
        case .greaterThan: return values.contains { compare($0, single).map { $0 > 0 } ?? false }
        case .greaterThanOrEquals: return values.contains { compare($0, single).map { $0 >= 0 } ?? false }
        case .in: return values.contains { value in operands.contains { equal(value, $0, zoneName: zoneName) } }
        case .notIn: return !values.contains { value in operands.contains { equal(value, $0, zoneName: zoneName) } }
        case .listContains: return contains(single)
        case .notListContains: return !contains(single)
        case .listContainsAny: return operands.contains(where: contains)
        case .notListContainsAny: return !operands.contains(where: contains)
        case .listContainsAll: return operands.allSatisfy(contains)
        case .notListContainsAll: return !operands.allSatisfy(contains)
        case .beginsWith, .listMemberBeginsWith:
            guard case .string(let prefix) = single else { return false }
            return values.contains { if case .string(let text) = $0 { return text.hasPrefix(prefix) } else { return false } }
        case .notBeginsWith, .notListMemberBeginsWith:
            guard case .string(let prefix) = single else { return false }
            return !values.contains { if case .string(let text) = $0 { return text.hasPrefix(prefix) } else { return false } }
        case .near:
            guard case .location(let center) = single, let distance = filter.distance else { return false }
            return values.contains { if case .location(let point) = $0 { return point.distance(to: center) <= distance } else { return false } }
        case .containsAllTokens, .containsAnyTokens:
            return tokensMatch(filter, text: values.compactMap { if case .string(let text) = $0 { return text } else { return nil } })
        }
    }

    /// `allTokens`, `___allTokens` and `self` name every string field of the record.
    static func isAllTokensField(_ name: String) -> Bool { name == "allTokens" || name == "self" }

    static func tokensMatch(_ filter: WireFilter, text: [String]) -> Bool {
        guard case .string(let query) = filter.fieldValue else { return false }
        let wanted = tokens(query)
        guard !wanted.isEmpty else { return false }
        let present = Set(text.flatMap(tokens))
        return filter.comparator == .containsAllTokens ? wanted.allSatisfy(present.contains) : wanted.contains(where: present.contains)
    }

    /// Words of a text, case- and diacritic-folded, split on anything that is not a letter or digit.
    package static func tokens(_ text: String) -> [String] {
        text.folding(options: [.caseInsensitive, .diacriticInsensitive, .widthInsensitive], locale: nil)
            .split(whereSeparator: { !$0.isLetter && !$0.isNumber }).map(String.init)
    }

    static func number(_ value: WireFieldValue) -> Double? {
        switch value {
        case .int64(let number): return Double(number)
        case .double(let number): return number
        case .timestamp(let millis): return Double(millis)
        default: return nil
        }
    }

    static func name(_ value: WireFieldValue) -> String? {
        switch value {
        case .string(let text): return text
        case .reference(let reference): return reference.recordName
        default: return nil
        }
    }

    /// Equality across compatible types.
    static func equal(_ lhs: WireFieldValue, _ rhs: WireFieldValue, zoneName: String) -> Bool {
        if case .int64(let a) = lhs, case .int64(let b) = rhs { return a == b }
        if case .timestamp(let a) = lhs, case .timestamp(let b) = rhs { return a == b }
        if let a = number(lhs), let b = number(rhs) { return a == b }
        if case .reference(let a) = lhs, case .reference(let b) = rhs {
            return a.recordName == b.recordName && (a.zoneID?.zoneName ?? zoneName) == (b.zoneID?.zoneName ?? zoneName)
        }
        if let a = name(lhs), let b = name(rhs) { return a == b }
        if case .location(let a) = lhs, case .location(let b) = rhs { return a.latitude == b.latitude && a.longitude == b.longitude }
        return lhs == rhs
    }

    /// Ordering of two values (-1, 0, 1), or nil when they do not compare.
    static func compare(_ lhs: WireFieldValue, _ rhs: WireFieldValue) -> Int? {
        if case .int64(let a) = lhs, case .int64(let b) = rhs { return a < b ? -1 : (a == b ? 0 : 1) }
        if case .timestamp(let a) = lhs, case .timestamp(let b) = rhs { return a < b ? -1 : (a == b ? 0 : 1) }
        if let a = number(lhs), let b = number(rhs) { return a < b ? -1 : (a == b ? 0 : 1) }
        if let a = name(lhs), let b = name(rhs) { return a < b ? -1 : (a == b ? 0 : 1) }
        if case .bytes(let a) = lhs, case .bytes(let b) = rhs { return a.lexicographicallyPrecedes(b) ? -1 : (a == b ? 0 : 1) }
        return nil
    }

    /// `records` in the order of `descriptors` (then zone and record name: a total order), each
    /// with its position in it.
    static func ordered(_ records: [(record: StoredRecord, zoneName: String)], by descriptors: [WireSort])
        -> [(item: (record: StoredRecord, zoneName: String), position: QueryPosition)] {
        // Sorts positions with their keys computed once, so the comparisons copy no records.
        let positions = records.map { QueryPosition(of: $0, by: descriptors) }
        let order = records.indices.sorted { positions[$0].precedes(positions[$1], by: descriptors) }
        return order.map { (records[$0], positions[$0]) }
    }
}
