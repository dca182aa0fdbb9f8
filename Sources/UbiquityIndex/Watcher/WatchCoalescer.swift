import UbiquityCore

/// The watcher's batching state machine, free of I/O so it can be tested with synthetic events.
///
/// Events for one path within a batch collapse to its final state; `IN_MOVED_FROM`/`IN_MOVED_TO`
/// pairs (by cookie) become one move, and editor save patterns collapse to one change of the
/// document:
/// - a move from an ignored name (a temporary file) is a change of the destination;
/// - a move to an ignored name (`file~` backups of vim and Emacs) is a change of the source if it
///   exists again when the batch settles, else its removal;
/// - a move of an item that appeared in the same batch is a change of the destination.
///
/// A batch is due when no event arrived for `settle`, or `maximumLatency` after its first event.
/// Output order: moves (in order), then removals, then changes (each in first-seen order).
struct WatchCoalescer: Sendable {
    private enum Change: Sendable { case changed, removed, removedUnlessExists }

    private struct PathState: Sendable {
        var change: Change
        /// The path did not exist before this batch (its first event was `IN_CREATE`).
        var appeared: Bool
        var isDirectory: Bool
        var firstSequence: Int
        var lastSequence: Int
        /// The last event was `IN_CLOSE_WRITE`: a complete write of an existing name.
        var complete = false

        /// A completed write of a file (what ``quickSettle`` allows).
        var isCompletedWrite: Bool { complete && change == .changed && !isDirectory }
    }

    /// The pending states by path, counting those that are not completed writes as they change
    /// (the settle time is asked after every drained chunk of events: no walk over all of them).
    private struct PathStates: Sendable, Sequence {
        private var entries: [String: PathState] = [:]
        /// How many states are not a completed write of a file.
        private(set) var notCompletedWrites = 0

        subscript(path: String) -> PathState? {
            get { entries[path] }
            set {
                if let old = entries[path], !old.isCompletedWrite { notCompletedWrites -= 1 }
                if let newValue, !newValue.isCompletedWrite { notCompletedWrites += 1 }
                entries[path] = newValue
            }
        }

        var isEmpty: Bool { entries.isEmpty }

        mutating func removeValue(forKey path: String) -> PathState? {
            let old = entries[path]
            self[path] = nil
            return old
        }

        /// Drops the states whose path passes `remove`.
        mutating func removeAll(where remove: (String) -> Bool) {
            for path in entries.keys.filter(remove) { self[path] = nil }
        }

        mutating func removeAll() {
            entries = [:]
            notCompletedWrites = 0
        }

        func makeIterator() -> Dictionary<String, PathState>.Iterator { entries.makeIterator() }
    }

    private struct PendingFrom: Sendable {
        var cookie: UInt32
        var path: String
        var isDirectory: Bool
    }

    private struct Move: Sendable {
        var from: String
        var to: String
    }

    /// Quiet time after which a batch is emitted, in nanoseconds.
    let settle: UInt64
    /// Longest time a pending event waits, in nanoseconds.
    let maximumLatency: UInt64
    /// Quiet time that suffices when the batch is only completed writes (every pending path was
    /// closed after writing; no moves, removals or rescans that an editor's save pattern might
    /// still be in the middle of), in nanoseconds.
    let quickSettle: UInt64
    /// The watched roots and their rules.
    private(set) var roots: [String: IgnoreRules] = [:]

    private var states = PathStates()
    private var moves: [Move] = []
    private var pendingFrom: [PendingFrom] = []
    private var rescans: [RescanRequest] = []
    private var rescanSet: Set<RescanRequest> = []
    private var firstEventAt: UInt64?
    private var lastEventAt: UInt64 = 0
    private var sequence = 0

    /// A coalescer with the given timing.
    init(settle: Duration, maximumLatency: Duration, quickSettle: Duration? = nil) {
        self.settle = settle.watchNanoseconds
        self.maximumLatency = max(maximumLatency.watchNanoseconds, settle.watchNanoseconds)
        self.quickSettle = min(quickSettle?.watchNanoseconds ?? self.settle, self.settle)
    }

    /// The quiet time the pending batch needs: ``quickSettle`` when it holds only completed
    /// writes, ``settle`` otherwise.
    private var currentSettle: UInt64 {
        guard quickSettle < settle, moves.isEmpty, pendingFrom.isEmpty, rescans.isEmpty,
              states.notCompletedWrites == 0 else { return settle }
        return quickSettle
    }

    /// Starts accepting events below `root`.
    mutating func addRoot(_ root: String, rules: IgnoreRules) {
        roots[root] = rules
    }

    /// Stops accepting events below `root` and drops what is pending for it.
    mutating func removeRoot(_ root: String) {
        roots[root] = nil
        let remaining = Array(roots.keys)
        let isOrphan = { (path: String) in !remaining.contains { WatchPaths.isWithin(path, root: $0) } }
        states.removeAll { isOrphan($0) }
        moves.removeAll { isOrphan($0.to) }
        pendingFrom.removeAll { isOrphan($0.path) }
        rescans.removeAll { WatchPaths.isWithin($0.path, root: root) && $0.reason != .rootChanged }
        rescanSet = Set(rescans)
    }

    /// The innermost root containing `path`.
    func root(containing path: String) -> String? {
        var best: String?
        for root in roots.keys where WatchPaths.isWithin(path, root: root) {
            if best == nil || root.utf8.count > best!.utf8.count { best = root }
        }
        return best
    }

    /// Whether the item at `path` is hidden (ignored, a cookie, or outside every root).
    func isIgnored(_ path: String, isDirectory: Bool) -> Bool {
        guard let root = root(containing: path), let rules = roots[root] else { return true }
        return WatchPaths.isIgnored(path, root: root, rules: rules, isDirectory: isDirectory)
    }

    /// Whether anything waits to be emitted.
    var hasPending: Bool {
        !states.isEmpty || !moves.isEmpty || !pendingFrom.isEmpty || !rescans.isEmpty
    }

    /// When the pending batch becomes due, if anything is pending.
    var deadline: UInt64? {
        guard hasPending, let first = firstEventAt else { return nil }
        return min(lastEventAt &+ currentSettle, first &+ maximumLatency)
    }

    private mutating func touch(_ now: UInt64) {
        if firstEventAt == nil { firstEventAt = now }
        lastEventAt = max(lastEventAt, now)
    }

    /// Adds a rescan request to the pending batch.
    mutating func request(_ rescan: RescanRequest, at now: UInt64) {
        touch(now)
        if rescanSet.insert(rescan).inserted { rescans.append(rescan) }
    }

    /// Feeds one event.
    mutating func ingest(_ event: WatchEvent, at now: UInt64) {
        guard let root = root(containing: event.path), event.path != root else { return }
        switch event.kind {
        case .movedFrom(let cookie):
            touch(now)
            resolvePendingFrom()
            pendingFrom.append(PendingFrom(cookie: cookie, path: event.path, isDirectory: event.isDirectory))
        case .movedTo(let cookie):
            touch(now)
            if let index = pendingFrom.firstIndex(where: { $0.cookie == cookie }) {
                let from = pendingFrom.remove(at: index)
                resolvePendingFrom()
                pair(from, to: event.path, isDirectory: event.isDirectory)
            } else {
                resolvePendingFrom()
                if !isIgnored(event.path, isDirectory: event.isDirectory) {
                    replace(event.path, isDirectory: event.isDirectory)
                    set(event.path, .changed, appeared: false, isDirectory: event.isDirectory)
                }
            }
        case .created, .modified, .closedAfterWriting, .deleted:
            resolvePendingFrom()
            // a path pending in this batch was judged visible at its first event: a new file's
            // create, write, attribute changes and close ask the ignore rules once, not each time
            guard isPendingVisible(event) || !isIgnored(event.path, isDirectory: event.isDirectory) else { return }
            touch(now)
            switch event.kind {
            case .created: set(event.path, .changed, appeared: true, isDirectory: event.isDirectory)
            case .deleted: set(event.path, .removed, appeared: false, isDirectory: event.isDirectory)
            case .closedAfterWriting:
                set(event.path, .changed, appeared: false, isDirectory: event.isDirectory)
                states[event.path]?.complete = true
            default: set(event.path, .changed, appeared: false, isDirectory: event.isDirectory)
            }
        }
    }

    /// Whether the event's path is pending as the same kind of item (so not ignored: only paths
    /// that passed ``isIgnored(_:isDirectory:)`` get a state, and the rules do not change while
    /// the root is watched).
    private func isPendingVisible(_ event: WatchEvent) -> Bool {
        guard let state = states[event.path] else { return false }
        return state.isDirectory == event.isDirectory
    }

    private mutating func set(_ path: String, _ change: Change, appeared: Bool, isDirectory: Bool) {
        sequence += 1
        if var state = states[path] {
            state.change = change
            state.complete = false
            state.isDirectory = isDirectory
            state.lastSequence = sequence
            states[path] = state
        } else {
            states[path] = PathState(change: change, appeared: appeared, isDirectory: isDirectory,
                                     firstSequence: sequence, lastSequence: sequence)
        }
    }

    /// Unpaired `IN_MOVED_FROM`s: the item left the roots.
    private mutating func resolvePendingFrom() {
        guard !pendingFrom.isEmpty else { return }
        let pending = pendingFrom
        pendingFrom = []
        for from in pending where !isIgnored(from.path, isDirectory: from.isDirectory) {
            set(from.path, .removed, appeared: false, isDirectory: from.isDirectory)
        }
    }

    /// Forgets pending state at `path` (and below it for a folder): the item was replaced.
    private mutating func replace(_ path: String, isDirectory: Bool) {
        states[path] = nil
        if isDirectory, !states.isEmpty {
            states.removeAll { WatchPaths.isDescendant($0, of: path) }
        }
    }

    /// Moves pending state (and rescans) from `source` to `destination`.
    private mutating func rekey(_ source: String, to destination: String, isDirectory: Bool) {
        if let state = states.removeValue(forKey: source) { states[destination] = state }
        if isDirectory, !states.isEmpty {
            var moved: [(String, PathState)] = []
            for (path, state) in states where WatchPaths.isDescendant(path, of: source) {
                moved.append((WatchPaths.rebase(path, from: source, to: destination), state))
                states[path] = nil
            }
            for (path, state) in moved { states[path] = state }
        }
        if isDirectory, !rescans.isEmpty {
            rescans = rescans.map { request in
                guard WatchPaths.isWithin(request.path, root: source) else { return request }
                var copy = request
                copy.path = WatchPaths.rebase(request.path, from: source, to: destination)
                return copy
            }
            rescanSet = Set(rescans)
        }
    }

    private mutating func pair(_ from: PendingFrom, to destination: String, isDirectory: Bool) {
        let source = from.path
        let sourceIgnored = isIgnored(source, isDirectory: isDirectory)
        let destinationIgnored = isIgnored(destination, isDirectory: isDirectory)
        switch (sourceIgnored, destinationIgnored) {
        case (true, true):
            return
        case (true, false):
            // Write-to-temporary-then-rename: the destination's content changed.
            replace(destination, isDirectory: isDirectory)
            set(destination, .changed, appeared: false, isDirectory: isDirectory)
        case (false, true):
            // Rename to a backup name (vim, Emacs): the source usually comes back at once.
            replace(source, isDirectory: isDirectory)
            set(source, .removedUnlessExists, appeared: false, isDirectory: isDirectory)
        case (false, false):
            if states[source]?.appeared == true {
                // Created in this batch, then renamed: the consumer never saw the source.
                replace(destination, isDirectory: isDirectory)
                rekey(source, to: destination, isDirectory: isDirectory)
                set(destination, .changed, appeared: false, isDirectory: isDirectory)
                states[destination]?.appeared = false
                return
            }
            if let index = moves.lastIndex(where: { $0.to == source }) {
                if moves[index].from == destination {
                    moves.remove(at: index)
                } else {
                    moves[index].to = destination
                }
            } else {
                moves.append(Move(from: source, to: destination))
            }
            replace(destination, isDirectory: isDirectory)
            rekey(source, to: destination, isDirectory: isDirectory)
        }
    }

    /// Emits the pending batch if it is due at `now` (or at once with `force`).
    ///
    /// `exists` decides the fate of items renamed to an ignored backup name. A batch emitted only
    /// because of `maximumLatency` keeps an `IN_MOVED_FROM` whose `IN_MOVED_TO` may still come.
    mutating func flush(at now: UInt64, force: Bool = false, exists: (String) -> Bool) -> WatchBatch? {
        guard hasPending, let first = firstEventAt else { return nil }
        let settled = force || now >= lastEventAt &+ currentSettle
        guard settled || now >= first &+ maximumLatency else { return nil }
        if settled { resolvePendingFrom() }

        // A removed folder covers what happened inside it before its removal.
        var removedFolders: [String: Int] = [:]
        for (path, state) in states where state.isDirectory && state.change == .removed {
            removedFolders[path] = state.lastSequence
        }
        var removed: [(Int, String)] = []
        var changed: [(Int, String)] = []
        for (path, state) in states {
            if !removedFolders.isEmpty, isCovered(path, sequence: state.lastSequence, by: removedFolders) { continue }
            switch state.change {
            case .changed: changed.append((state.firstSequence, path))
            case .removed: removed.append((state.firstSequence, path))
            case .removedUnlessExists:
                if exists(path) { changed.append((state.firstSequence, path)) } else { removed.append((state.firstSequence, path)) }
            }
        }
        removed.sort { $0.0 < $1.0 }
        changed.sort { $0.0 < $1.0 }
        var batch = WatchBatch()
        batch.changes.reserveCapacity(moves.count + removed.count + changed.count)
        batch.changes += moves.map { WatchChange.moved(from: $0.from, to: $0.to) }
        batch.changes += removed.map { WatchChange.removed($0.1) }
        batch.changes += changed.map { WatchChange.changed($0.1) }
        batch.rescans = rescans

        states.removeAll()
        moves = []
        rescans = []
        rescanSet = []
        firstEventAt = pendingFrom.isEmpty ? nil : now
        lastEventAt = now
        return batch.isEmpty ? nil : batch
    }

    private func isCovered(_ path: String, sequence: Int, by removedFolders: [String: Int]) -> Bool {
        var ancestor = Substring(path)
        while let slash = ancestor.lastIndex(of: "/"), slash > ancestor.startIndex {
            ancestor = ancestor[..<slash]
            if let removal = removedFolders[String(ancestor)], sequence < removal { return true }
        }
        return false
    }
}
