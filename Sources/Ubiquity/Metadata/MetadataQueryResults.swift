// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// A query's results, kept for live updates in time proportional to the update, not to the
/// results: items sit in slots of fixed-size chunks, a removal leaves a hole, an addition takes
/// the next slot, a change replaces its slot in place. The ordered array the API hands out
/// (without holes, sorted by the sort descriptors) is made only when asked for, and kept until
/// the next update. A snapshot shares the chunks (copy on write, chunk by chunk), so handing
/// one out with every update costs a few references, not a copy of 100,000 results. A value
/// with no I/O.
struct MetadataQueryResults: Sendable {
    /// Slots per chunk: a removal or change copies at most one chunk that a snapshot shares.
    static let chunkSize = 1024

    /// The sort keys (attribute, ascending) of the query's sort descriptors; empty: the order in
    /// which items arrived.
    var sortKeys: [(attribute: MetadataAttribute, ascending: Bool)] = [] {
        didSet { cache = nil }
    }
    private var chunks: [[MetadataItem?]] = []
    /// Slots used so far (holes included).
    private var used = 0
    /// Each result's slot, by path.
    private var slots: [String: Int] = [:]
    /// The results in order, made by ``ordered()``; nil after any change.
    private var cache: [MetadataItem]?
    /// Where each result of ``cache`` is, by path (made with it, for ``position(of:)``).
    private var cachePositions: [String: Int]?

    /// How many results there are.
    var count: Int { slots.count }

    /// Forgets every result.
    mutating func removeAll() {
        chunks = []
        used = 0
        slots = [:]
        cache = nil
        cachePositions = nil
    }

    /// Applies a live query's update: removed items leave, added ones come (or replace the item
    /// at their path), changed ones replace theirs.
    mutating func apply(_ update: QueryUpdate) {
        let stillThere = Set(update.added.map(\.path))
        for record in update.removed where !stillThere.contains(record.path) { remove(record.path) }
        for record in update.changed { replace(MetadataItem(record: record)) }
        for record in update.added { put(MetadataItem(record: record)) }
    }

    /// Adds `item`, or replaces the result at its path.
    mutating func put(_ item: MetadataItem) {
        if !replace(item) { append(item) }
    }

    /// Replaces the result at `item`'s path; false when there is none.
    @discardableResult
    mutating func replace(_ item: MetadataItem) -> Bool {
        guard let slot = slots[item.record.path] else { return false }
        chunks[slot / Self.chunkSize][slot % Self.chunkSize] = item
        cache = nil
        return true
    }

    private mutating func append(_ item: MetadataItem) {
        if used % Self.chunkSize == 0 {
            var chunk: [MetadataItem?] = []
            chunk.reserveCapacity(Self.chunkSize)
            chunks.append(chunk)
        }
        chunks[chunks.count - 1].append(item)
        slots[item.record.path] = used
        used += 1
        cache = nil
    }

    private mutating func remove(_ path: String) {
        guard let slot = slots.removeValue(forKey: path) else { return }
        chunks[slot / Self.chunkSize][slot % Self.chunkSize] = nil
        cache = nil
        // mostly holes: packed again (amortized over the removals that made them)
        if used > Self.chunkSize && slots.count < used / 2 { pack() }
    }

    /// Moves the results into the first slots, in their order.
    private mutating func pack() {
        let items = chunks.lazy.joined().compactMap { $0 }
        removeAll()
        for item in items { append(item) }
    }

    /// The results in order (sorted by ``sortKeys`` when given), without holes.
    mutating func ordered() -> [MetadataItem] {
        if let cache { return cache }
        let made = Self.ordered(chunks, sortKeys: sortKeys)
        cache = made
        cachePositions = nil
        return made
    }

    /// The position of the result at `path` in ``ordered()``, or nil.
    mutating func position(of path: String) -> Int? {
        guard slots[path] != nil else { return nil }
        if cachePositions == nil || cache == nil {
            cachePositions = Dictionary(ordered().enumerated().map { ($1.record.path, $0) }, uniquingKeysWith: { _, last in last })
        }
        return cachePositions?[path]
    }

    /// The results as they are now, for a snapshot: the chunks are shared, the ordered array is
    /// made only if the snapshot's results are read.
    var frozen: Frozen { Frozen(chunks: chunks, sortKeys: sortKeys, ordered: cache) }

    /// The results at one moment (``frozen``).
    struct Frozen: @unchecked Sendable {
        // (`@unchecked`: the sort keys' attributes are immutable values; the chunks are values)
        fileprivate let chunks: [[MetadataItem?]]
        fileprivate let sortKeys: [(attribute: MetadataAttribute, ascending: Bool)]
        fileprivate let ordered: [MetadataItem]?

        /// The results in order.
        var items: [MetadataItem] { ordered ?? MetadataQueryResults.ordered(chunks, sortKeys: sortKeys) }
    }

    /// The items of `chunks` without holes, sorted by `sortKeys` (ties by path) when given.
    fileprivate static func ordered(_ chunks: [[MetadataItem?]], sortKeys: [(attribute: MetadataAttribute, ascending: Bool)]) -> [MetadataItem] {
        var items = Array(chunks.lazy.joined().compactMap { $0 })
        guard !sortKeys.isEmpty else { return items }
        items.sort { lhs, rhs in
            for (key, ascending) in sortKeys {
                let order = MetadataValue.order(lhs.record.metadataValue(for: key), rhs.record.metadataValue(for: key))
                if order != 0 { return ascending ? order < 0 : order > 0 }
            }
            return lhs.record.path < rhs.record.path
        }
        return items
    }
}
