/// What one write to the metadata index changed, for live queries.
///
/// For a removed or moved folder, every descendant row is listed too. Apply the parts in the
/// order `removed`, `moved`, `added`, `changed`.
package struct IndexDelta: Sendable, Hashable {
    /// Rows that did not exist before.
    package var added: [IndexRecord]
    /// Rows whose file-system facts or ubiquitous state changed (same path).
    package var changed: [IndexRecord]
    /// Paths of rows that no longer exist.
    package var removed: [String]
    /// Rows that now live at another path.
    package var moved: [MovedRecord]
    /// Paths the watcher named that cannot be rows: names that are not valid UTF-8 (the bad
    /// bytes read as U+FFFD). Not indexed; sync looks at their folder to report them.
    package var unindexable: [String]

    /// A delta with the given parts (empty by default).
    package init(added: [IndexRecord] = [], changed: [IndexRecord] = [], removed: [String] = [], moved: [MovedRecord] = [],
                 unindexable: [String] = []) {
        self.added = added
        self.changed = changed
        self.removed = removed
        self.moved = moved
        self.unindexable = unindexable
    }

    /// Whether nothing changed.
    package var isEmpty: Bool { added.isEmpty && changed.isEmpty && removed.isEmpty && moved.isEmpty && unindexable.isEmpty }

    /// The number of rows affected.
    package var count: Int { added.count + changed.count + removed.count + moved.count }

    /// Folds `later` (a delta applied after this one) into this one, so that the result, applied
    /// in the documented order, has the same effect as applying both in turn: an item added then
    /// removed disappears, an item removed then added becomes changed, and so on.
    package mutating func merge(_ later: IndexDelta) {
        if isEmpty { self = later; return }
        if later.isEmpty { return }
        let unindexable = self.unindexable + later.unindexable
        var state = Coalescer(self)
        state.fold(later)
        self = state.delta
        self.unindexable = unindexable
    }

    /// The deltas in order folded into one (see ``merge(_:)``), in time linear in their size.
    package static func merging(_ deltas: [IndexDelta]) -> IndexDelta {
        let nonEmpty = deltas.filter { !$0.isEmpty }
        guard let first = nonEmpty.first else { return IndexDelta() }
        if nonEmpty.count == 1 { return first }
        var merged = rowsMerged(nonEmpty)
        merged.unindexable = nonEmpty.flatMap(\.unindexable)
        return merged
    }

    /// ``merging(_:)`` of the rows of at least two non-empty deltas.
    private static func rowsMerged(_ nonEmpty: [IndexDelta]) -> IndexDelta {
        let first = nonEmpty[0]
        // Fast path (a scan's batches): only additions and changes, each path once.
        if nonEmpty.allSatisfy({ $0.removed.isEmpty && $0.moved.isEmpty }) {
            var seen = Set<String>()
            var result = IndexDelta()
            var distinct = true
            for delta in nonEmpty {
                for record in delta.added where !seen.insert(record.path).inserted { distinct = false }
                for record in delta.changed where !seen.insert(record.path).inserted { distinct = false }
                guard distinct else { break }
                result.added += delta.added
                result.changed += delta.changed
            }
            if distinct { return result }
        }
        var state = Coalescer(first)
        for later in nonEmpty.dropFirst() { state.fold(later) }
        return state.delta
    }

    /// This delta followed by `later` (see ``merge(_:)``).
    package func merging(_ later: IndexDelta) -> IndexDelta {
        var copy = self
        copy.merge(later)
        return copy
    }
}

/// A row that was renamed: its old path and the record at its new path.
package struct MovedRecord: Sendable, Hashable {
    /// The path before the move.
    package var from: String
    /// The row after the move.
    package var record: IndexRecord

    /// A moved row.
    package init(from: String, record: IndexRecord) {
        self.from = from
        self.record = record
    }
}

/// The net effect of a sequence of deltas, keyed by path.
private struct Coalescer {
    /// What a path's row did relative to the state before the first delta.
    enum Fate {
        case added(IndexRecord)
        case changed(IndexRecord)
        case movedIn(from: String, IndexRecord)
    }
    /// Final fate of each current path, in first-seen order.
    var fates: [String: Fate] = [:]
    var order: [String] = []
    /// Original paths that are gone (removed or moved away).
    var removed: [String] = []
    var removedSet: Set<String> = []

    init(_ delta: IndexDelta) {
        removed = delta.removed
        removedSet = Set(delta.removed)
        for move in delta.moved { set(move.record.path, .movedIn(from: move.from, move.record)) }
        for record in delta.added { set(record.path, .added(record)) }
        for record in delta.changed {
            if case .added = fates[record.path] { set(record.path, .added(record)) } else { set(record.path, .changed(record)) }
        }
    }

    /// Applies `later` (in the documented order) on top of the state so far.
    mutating func fold(_ later: IndexDelta) {
        for move in later.moved { self.move(move) }
        for path in later.removed { remove(path) }
        for record in later.added { upsert(record, isNew: true) }
        for record in later.changed { upsert(record, isNew: false) }
    }

    mutating func set(_ path: String, _ fate: Fate?) {
        if fates[path] == nil, fate != nil { order.append(path) }
        fates[path] = fate
    }

    mutating func markRemoved(_ path: String) {
        if removedSet.insert(path).inserted { removed.append(path) }
    }

    mutating func remove(_ path: String) {
        switch fates[path] {
        case .added?: set(path, nil)
        case .changed?: set(path, nil); markRemoved(path)
        case .movedIn(let from, _)?: set(path, nil); markRemoved(from)
        case nil: markRemoved(path)
        }
    }

    mutating func upsert(_ record: IndexRecord, isNew: Bool) {
        let path = record.path
        switch fates[path] {
        case .added?: set(path, .added(record))
        case .changed?: set(path, .changed(record))
        case .movedIn(let from, _)?: set(path, .movedIn(from: from, record))
        case nil:
            if removedSet.contains(path) {
                removedSet.remove(path)
                removed.removeAll { $0 == path }
                set(path, .changed(record))
            } else {
                set(path, isNew ? .added(record) : .changed(record))
            }
        }
    }

    mutating func move(_ move: MovedRecord) {
        let newPath = move.record.path
        if fates[newPath] != nil { remove(newPath) }
        switch fates[move.from] {
        case .added?: set(move.from, nil); set(newPath, .added(move.record))
        case .changed?: set(move.from, nil); set(newPath, .movedIn(from: move.from, move.record))
        case .movedIn(let original, _)?:
            set(move.from, nil)
            set(newPath, .movedIn(from: original, move.record))
        case nil: set(newPath, .movedIn(from: move.from, move.record))
        }
    }

    var delta: IndexDelta {
        var result = IndexDelta(removed: removed)
        for path in order {
            switch fates[path] {
            case .added(let record)?: result.added.append(record)
            case .changed(let record)?: result.changed.append(record)
            case .movedIn(let from, let record)?:
                if from == record.path { result.changed.append(record) } else { result.moved.append(MovedRecord(from: from, record: record)) }
            case nil: break
            }
        }
        return result
    }
}
