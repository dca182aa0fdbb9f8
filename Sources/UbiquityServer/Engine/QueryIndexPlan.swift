// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// How a query reads its matches off a query index (``QueryIndexDefinition``), in order: the index
/// it needs and the key range that holds every match. A pure value, tested without a store.
///
/// A query in one zone can use an index when every sort descriptor is on a field whose first value
/// orders as `QueryPosition` orders it (STRING, INT64, DOUBLE, TIMESTAMP, REFERENCE, their lists,
/// the system fields; not a distance sort). Its `EQUALS` filters on scalar fields of those types
/// become the index's equality components; range filters (`LESS_THAN`, …) on the first sort field
/// narrow the range. Every other filter is checked on the records read, as every filter is: the
/// range only has to hold every match (a superset), in the query's order.
struct QueryIndexPlan: Sendable, Hashable {
    /// The index the query needs.
    var definition: QueryIndexDefinition
    /// The keys' common start: the equality values.
    var prefix: [UInt8]
    /// The first key of the range (inclusive).
    var lower: [UInt8]
    /// The end of the range (exclusive).
    var upper: [UInt8]
    /// The query's sort descriptors (to key a continuation position).
    var sorts: [WireSort]
    /// Every filter is one the range decides exactly (an equality or a range on a STRING or
    /// number field with a value of its kind): the records read need no filtering, nor decoding.
    var exact: Bool

    /// The plan of `query` over a type with `fields` (its schema), or nil when no index can answer it.
    init?(query: WireQuery, fields: [String: SchemaField]) {
        func scalarType(_ key: WireFieldKey) -> WireFieldType.Scalar? {
            switch key {
            case .system(let field):
                switch field {
                case .recordName, .createdUserRecordName, .modifiedUserRecordName: return .string
                case .createdTimestamp, .modifiedTimestamp: return .timestamp
                case .parent: return .reference
                case .share: return nil
                }
            case .field(let name):
                guard !RecordFilter.isAllTokensField(name), let type = fields[name].flatMap({ WireFieldType(tag: $0.type) }),
                      case .scalar(let scalar) = type else { return nil }
                return scalar
            }
        }
        func sortable(_ key: WireFieldKey) -> Bool {
            if case .field(let name) = key, let type = fields[name].flatMap({ WireFieldType(tag: $0.type) }), case .list(let element?) = type {
                return Self.keyable(element)
            }
            return scalarType(key).map(Self.keyable) ?? false
        }
        func withinExactRange(_ value: WireFieldValue) -> Bool {
            switch value {
            case .string, .reference: return true
            case .int64, .double, .timestamp: return RecordFilter.number(value).map { abs($0) < RecordIndexEntry.exactNumberLimit } ?? false
            default: return false
            }
        }
        guard query.sortBy.allSatisfy({ $0.relativeLocation == nil && sortable($0.key) }) else { return nil }
        // whether the key decides the filter exactly: values of the field's kind (the record
        // name and the user fields are strings here; a reference field's zone is not in the key)
        func decides(_ filter: WireFilter, _ type: WireFieldType.Scalar) -> Bool {
            switch (type, filter.fieldValue) {
            case (.string, .string), (.int64, .int64), (.int64, .double), (.int64, .timestamp), (.double, .int64), (.double, .double),
                 (.double, .timestamp), (.timestamp, .int64), (.timestamp, .double), (.timestamp, .timestamp):
                return true
            case (.string, .reference(let reference)):
                return reference.zoneID == nil || filter.key == .system(.recordName)
            default:
                return false
            }
        }
        var equal: [WireFieldKey: WireFieldValue] = [:]
        var decided = 0
        for filter in query.filterBy where filter.comparator == .equals && equal[filter.key] == nil {
            guard let type = scalarType(filter.key), Self.keyable(type), withinExactRange(filter.fieldValue) else { continue }
            if query.sortBy.contains(where: { $0.key == filter.key }) { continue }
            equal[filter.key] = filter.fieldValue
            if decides(filter, type) { decided += 1 }
        }
        let components = equal.keys.map { QueryIndexDefinition.Component($0, .equal) }
            + query.sortBy.map { QueryIndexDefinition.Component($0.key, $0.ascending ? .ascending : .descending) }
        guard Set(components.map(\.key)).count == components.count else { return nil }  // a field sorted twice
        definition = QueryIndexDefinition(recordType: query.recordType, components: components)
        var prefix: [UInt8] = []
        for component in definition.components where component.role == .equal {
            QueryIndexKey.append(equal[component.key], descending: false, to: &prefix)
        }
        self.prefix = prefix
        sorts = query.sortBy
        lower = prefix
        upper = prefix + [QueryIndexKey.after]
        self.exact = decided == query.filterBy.count
        // Range filters on the first sort field bound the range (its scalar values only: a list's
        // later elements may match where its first does not).
        guard let first = query.sortBy.first, let firstType = scalarType(first.key), Self.keyable(firstType) else { return }
        var bounded = false
        for filter in query.filterBy where filter.key == first.key && withinExactRange(filter.fieldValue) {
            let value = QueryIndexKey.encoded(filter.fieldValue, descending: !first.ascending)
            let past = prefix + value + [QueryIndexKey.after]
            // In a descending component larger values come first: the comparisons swap ends.
            var comparator = filter.comparator
            if !first.ascending {
                switch comparator {
                case .lessThan: comparator = .greaterThan
                case .lessThanOrEquals: comparator = .greaterThanOrEquals
                case .greaterThan: comparator = .lessThan
                case .greaterThanOrEquals: comparator = .lessThanOrEquals
                default: break
                }
            }
            switch comparator {
            case .greaterThanOrEquals: lower = Self.larger(lower, prefix + value)
            case .greaterThan: lower = Self.larger(lower, past)
            case .lessThan: upper = Self.smaller(upper, prefix + value)
            case .lessThanOrEquals: upper = Self.smaller(upper, past)
            default: continue
            }
            bounded = true
            if decides(filter, firstType) { decided += 1 }
        }
        self.exact = decided == query.filterBy.count
        // A record without the field matches no range filter: its keys (missing, last) are left out.
        if bounded { upper = Self.smaller(upper, prefix + [QueryIndexKey.missingTag]) }
    }

    static func keyable(_ type: WireFieldType.Scalar) -> Bool {
        [.string, .int64, .double, .timestamp, .reference].contains(type)
    }

    static func larger(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] { a.lexicographicallyPrecedes(b) ? b : a }
    static func smaller(_ a: [UInt8], _ b: [UInt8]) -> [UInt8] { a.lexicographicallyPrecedes(b) ? a : b }

    /// The first key after `position` (a continuation marker's last record).
    func start(after position: QueryPosition) -> [UInt8] {
        var key = prefix
        for (index, sort) in sorts.enumerated() {
            QueryIndexKey.append(index < position.keys.count ? position.keys[index] : nil, descending: !sort.ascending, to: &key)
        }
        QueryIndexKey.append(.string(position.recordName), descending: false, to: &key)
        return Self.larger(lower, key + [0])
    }
}
