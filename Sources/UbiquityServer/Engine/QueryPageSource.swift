// SPDX-License-Identifier: Apache-2.0
import UbiquityWire

/// Where a query's page is read from (``RecordsEngine/queryPage(_:source:type:zones:query:conditions:start:limit:)``).
enum QueryPageSource: Sendable {
    /// Off a ready index of one zone's records, with the plan that maps the query onto it:
    /// O(log n + k).
    case index(StoredQueryIndex, QueryIndexPlan, zone: StoredZone, type: RecordTypeSchema)
    /// By a scan of the store's candidates; `wanted` is the index that would answer the query,
    /// when there is none yet (for development to add).
    case scan(wanted: QueryIndexDefinition?)

    /// A query in one zone that a ready index of `indexes` answers (``QueryIndexPlan``), from its
    /// first match or after a position, is read off that index; any other is scanned.
    init(type: RecordTypeSchema?, zones: [StoredZone], query: WireQuery, start: QueryStart, indexes: [StoredQueryIndex]) {
        guard zones.count == 1, let type, let plan = QueryIndexPlan(query: query, fields: type.fields) else {
            self = .scan(wanted: nil)
            return
        }
        guard let index = indexes.first(where: { $0.definition == plan.definition }) else {
            self = .scan(wanted: plan.definition)
            return
        }
        switch start {
        case .first, .after:
            self = index.ready ? .index(index, plan, zone: zones[0], type: type) : .scan(wanted: nil)
        case .offset:
            self = .scan(wanted: nil)
        }
    }
}
