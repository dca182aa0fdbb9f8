import Foundation
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// A distinct value of an attribute among a query's results, with how many results have it
/// (`NSMetadataQueryAttributeValueTuple`).
public struct MetadataQueryAttributeValueTuple: @unchecked Sendable {
    /// The attribute name.
    public let attribute: String
    /// The value (nil for results without one). `@unchecked Sendable`: values are `String`,
    /// numbers, `Bool`, `Date`, `URL` or arrays of those, all immutable.
    public let value: Any?
    /// How many results have it.
    public let count: Int
}

/// Results sharing a value of a grouping attribute (`NSMetadataQueryResultGroup`).
public struct MetadataQueryResultGroup: @unchecked Sendable {
    /// The grouping attribute.
    public let attribute: String
    /// The shared value (`@unchecked Sendable` as in ``MetadataQueryAttributeValueTuple``).
    public let value: Any?
    /// Groups by the next grouping attribute, if there is one.
    public let subgroups: [MetadataQueryResultGroup]?
    /// The results in the group.
    public let results: [Any]
    /// How many results the group holds.
    public var resultCount: Int { results.count }
    /// The result at `index`.
    public func result(at index: Int) -> Any { results[index] }
}

extension MetadataQuery {
    /// How many results there are now.
    public var resultCount: Int { locked { resultSet.count } }

    /// The result at `index` (an ``MetadataItem``, or the delegate's replacement).
    public func result(at index: Int) -> Any {
        let (item, delegate) = locked { (resultSet.ordered()[index], _delegate) }
        return delegate?.metadataQuery(self, replacementObjectForResultObject: item) ?? item
    }

    /// Every result, in order (prefer ``resultCount`` and ``result(at:)`` as Apple advises).
    public var results: [Any] {
        let (items, delegate) = locked { (resultSet.ordered(), _delegate) }
        guard let delegate else { return items }
        return items.map { delegate.metadataQuery(self, replacementObjectForResultObject: $0) }
    }

    /// The items behind the results, in order.
    public var resultItems: [MetadataItem] { locked { resultSet.ordered() } }

    /// The index of `result` (an item or a delegate replacement), or `NSNotFound`.
    public func index(ofResult result: Any) -> Int {
        locked {
            guard let item = result as? MetadataItem else { return NSNotFound }
            return resultSet.position(of: item.record.path) ?? NSNotFound
        }
    }

    /// The value of `attribute` for the result at `index`.
    public func value(ofAttribute attribute: String, forResultAt index: Int) -> Any? {
        let (item, delegate) = locked { (resultSet.ordered()[index], _delegate) }
        guard let value = item.value(forAttribute: attribute) else { return nil }
        return delegate?.metadataQuery(self, replacementValueForAttribute: attribute, value: value) ?? value
    }

    /// Calls `body` with each result and its index, with updates disabled meanwhile; set the
    /// `Bool` to true to stop.
    public func enumerateResults(_ body: (Any, Int, inout Bool) -> Void) {
        disableUpdates()
        defer { enableUpdates() }
        let results = self.results
        var stop = false
        for (index, result) in results.enumerated() {
            body(result, index, &stop)
            if stop { break }
        }
    }

    /// For each of ``valueListAttributes``, its distinct values among the results with counts.
    public var valueLists: [String: [MetadataQueryAttributeValueTuple]] {
        let (items, attributes) = locked { (resultSet.ordered(), _valueListAttributes) }
        var lists: [String: [MetadataQueryAttributeValueTuple]] = [:]
        for attribute in attributes {
            guard let key = MetadataAttribute(name: attribute) else { continue }
            var counts: [MetadataValue?: Int] = [:]
            var order: [MetadataValue?] = []
            for item in items {
                let value = item.record.metadataValue(for: key)
                if counts[value] == nil { order.append(value) }
                counts[value, default: 0] += 1
            }
            lists[attribute] = order.map {
                MetadataQueryAttributeValueTuple(attribute: attribute, value: $0.flatMap(MetadataItem.bridge), count: counts[$0] ?? 0)
            }
        }
        return lists
    }

    /// The results grouped by ``groupingAttributes`` (outermost first); empty without them.
    public var groupedResults: [MetadataQueryResultGroup] {
        let (items, attributes) = locked { (resultSet.ordered(), _groupingAttributes ?? []) }
        return Self.group(items, by: attributes[...])
    }

    static func group(_ items: [MetadataItem], by attributes: ArraySlice<String>) -> [MetadataQueryResultGroup] {
        guard let attribute = attributes.first else { return [] }
        let key = MetadataAttribute(name: attribute)
        var groups: [MetadataValue?: [MetadataItem]] = [:]
        var order: [MetadataValue?] = []
        for item in items {
            let value = key.flatMap { item.record.metadataValue(for: $0) }
            if groups[value] == nil { order.append(value) }
            groups[value, default: []].append(item)
        }
        let rest = attributes.dropFirst()
        return order.map { value in
            let members = groups[value] ?? []
            return MetadataQueryResultGroup(attribute: attribute, value: value.flatMap(MetadataItem.bridge),
                                            subgroups: rest.isEmpty ? nil : group(members, by: rest), results: members)
        }
    }

    /// Applies `update` to the results (lock held).
    func applyLocked(_ update: QueryUpdate) {
        resultSet.apply(update)
    }

    /// Orders the results by the sort descriptors from now on (lock held).
    func resortLocked() {
        resultSet.sortKeys = _sortDescriptors.compactMap { descriptor in
            MetadataAttribute(name: descriptor.key).map { ($0, descriptor.ascending) }
        }
    }
}

extension MetadataValue {
    /// Orders two optional values for sorting: missing values first, then by kind, numbers
    /// numerically, strings by code points, dates in time.
    static func order(_ lhs: MetadataValue?, _ rhs: MetadataValue?) -> Int {
        switch (lhs, rhs) {
        case (nil, nil): return 0
        case (nil, _): return -1
        case (_, nil): return 1
        case let (l?, r?):
            switch (l, r) {
            case let (.string(a), .string(b)): return a == b ? 0 : (a < b ? -1 : 1)
            case let (.date(a), .date(b)): return a == b ? 0 : (a < b ? -1 : 1)
            case let (.bool(a), .bool(b)): return a == b ? 0 : (!a ? -1 : 1)
            default:
                guard let a = l.numericValue, let b = r.numericValue else { return 0 }
                return a == b ? 0 : (a < b ? -1 : 1)
            }
        }
    }

    var numericValue: Double? {
        switch self {
        case .integer(let value): Double(value)
        case .double(let value): value
        case .bool(let value): value ? 1 : 0
        case .date(let value): value.timeIntervalSince1970
        default: nil
        }
    }
}
