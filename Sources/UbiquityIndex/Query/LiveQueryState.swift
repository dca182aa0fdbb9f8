import UbiquityCore
import UbiquityStore

/// The result set of one live query, kept up to date from index deltas. A value type with no
/// I/O: the daemon and the library's local mode both drive it.
package struct LiveQueryState: Sendable {
    /// The predicate.
    package let predicate: QueryPredicate
    /// The scopes (absolute folder paths; empty means everything indexed).
    package let scopes: [String]
    /// Folders inside the scopes whose contents are left out.
    package let excluding: [String]
    /// The matching items by path.
    package private(set) var matches: [String: IndexRecord] = [:]

    /// An empty result set for `predicate` within `scopes`.
    package init(predicate: QueryPredicate, scopes: [String], excluding: [String] = []) {
        func trimmed(_ path: String) -> String { path.count > 1 && path.hasSuffix("/") ? String(path.dropLast()) : path }
        self.predicate = predicate
        self.scopes = scopes.map(trimmed)
        self.excluding = excluding.map(trimmed)
    }

    /// Whether `path` lies inside one of the scopes (the scope folder itself is not a result)
    /// and not inside an excluded folder (nor is one).
    package func isInScope(_ path: String) -> Bool {
        if excluding.contains(where: { path == $0 || Self.isInside(path, $0) }) { return false }
        if scopes.isEmpty { return true }
        return scopes.contains { Self.isInside(path, $0) }
    }

    static func isInside(_ path: String, _ folder: String) -> Bool {
        if folder == "/" { return path != "/" && path.hasPrefix("/") }
        let p = path.utf8, f = folder.utf8
        guard p.count > f.count, p.starts(with: f) else { return false }
        return p[p.index(p.startIndex, offsetBy: f.count)] == UInt8(ascii: "/")
    }

    /// Whether `record` belongs in the results.
    package func matches(_ record: IndexRecord) -> Bool {
        isInScope(record.path) && predicate.evaluate(with: record)
    }

    /// Adds initial results, which the index has already matched against the predicate (its SQL
    /// and the evaluator agree); only the scope is checked here. Returns the records kept.
    @discardableResult
    package mutating func gather(_ records: [IndexRecord]) -> [IndexRecord] {
        let kept = excluding.isEmpty && scopes.isEmpty ? records : records.filter { isInScope($0.path) }
        for record in kept { matches[record.path] = record }
        return kept
    }

    /// Applies an index delta and returns how the result set changed.
    package mutating func apply(_ delta: IndexDelta) -> QueryUpdate {
        var update = QueryUpdate()
        for path in delta.removed {
            if let old = matches.removeValue(forKey: path) { update.removed.append(old) }
        }
        for move in delta.moved {
            if let old = matches.removeValue(forKey: move.from) { update.removed.append(old) }
            if matches(move.record) {
                matches[move.record.path] = move.record
                update.added.append(move.record)
            }
        }
        for record in delta.added + delta.changed {
            let wasMatching = matches[record.path] != nil
            if matches(record) {
                matches[record.path] = record
                if wasMatching { update.changed.append(record) } else { update.added.append(record) }
            } else if let old = matches.removeValue(forKey: record.path) {
                update.removed.append(old)
            }
        }
        var merged = QueryUpdate()
        merged.merge(update)
        return merged
    }
}
