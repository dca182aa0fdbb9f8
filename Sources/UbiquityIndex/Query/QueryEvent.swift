import UbiquityCore
import UbiquityStore

/// What a running query reports, in order: gathering progress (zero or more), the end of
/// gathering, then updates (only while watching). The same events travel over the daemon's
/// control socket.
package enum QueryEvent: Sendable {
    /// Some of the initial results (sent in batches while the index is read).
    case gatheringProgress([IndexRecord])
    /// The initial results are complete; `count` items matched.
    case finishGathering(count: Int)
    /// Items entered, changed within, or left the result set.
    case update(QueryUpdate)
    /// The query failed and stopped.
    case failed(UbiquityError)
}

/// A change of a query's result set. Removed items carry their last known attributes; a
/// renamed item is removed under its old path and added under its new one.
package struct QueryUpdate: Sendable, Hashable {
    /// Items that now match.
    package var added: [IndexRecord]
    /// Matching items whose attributes changed.
    package var changed: [IndexRecord]
    /// Items that no longer match (or no longer exist).
    package var removed: [IndexRecord]

    /// An update of the given items.
    package init(added: [IndexRecord] = [], changed: [IndexRecord] = [], removed: [IndexRecord] = []) {
        self.added = added
        self.changed = changed
        self.removed = removed
    }

    /// Whether nothing changed.
    package var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty }

    /// Appends `other`, keeping one entry per path with the latest state winning.
    package mutating func merge(_ other: QueryUpdate) {
        var state: [String: (kind: Int, record: IndexRecord)] = [:]
        var order: [String] = []
        func note(_ record: IndexRecord, _ kind: Int) {
            if let previous = state[record.path] {
                // added then changed stays added; added then removed disappears; removed then added is changed.
                switch (previous.kind, kind) {
                case (0, 1): state[record.path] = (0, record)
                case (0, 2): state[record.path] = nil
                case (2, 0): state[record.path] = (1, record)
                default: state[record.path] = (kind, record)
                }
            } else {
                order.append(record.path)
                state[record.path] = (kind, record)
            }
        }
        for (kind, list) in [(0, added), (1, changed), (2, removed), (0, other.added), (1, other.changed), (2, other.removed)] {
            for record in list { note(record, kind) }
        }
        added = []; changed = []; removed = []
        for path in order {
            guard let entry = state[path] else { continue }
            switch entry.kind {
            case 0: added.append(entry.record)
            case 1: changed.append(entry.record)
            default: removed.append(entry.record)
            }
        }
    }
}
