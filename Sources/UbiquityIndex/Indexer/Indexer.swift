import Dispatch
import Logging
import UbiquityCore
import UbiquityStore

/// Keeps a ``MetadataIndex`` current for a set of roots: full scans when a root is added or
/// events were lost, and the watcher's batches in between. Every write is published on the
/// index's change feed (``MetadataIndex/changes()``) as it commits.
///
/// Scans and SQLite writes block, so they run one at a time on a dedicated thread, never on the
/// Swift cooperative pool. The thread runs at nice ``niceness``, as the daemon's other threads:
/// sync follows the index's change feed, so the index is not put behind it (at nice 10, a burst
/// of new files waited for the index and reached the server later: workload 2).
package actor Indexer {
    /// The index this indexer writes.
    package nonisolated let index: MetadataIndex
    /// The scanner used for full and subtree scans.
    package nonisolated let scanner: TreeScanner
    private let logger: Logger
    private var roots: [String: IgnoreRules] = [:]
    private var warnings: [String: [ScanWarning]] = [:]
    private let worker = BackgroundThread(name: "ubiquity.indexer", nice: Indexer.niceness)
    /// Where a scan's batches are written while its walk goes on (``PipelinedWrites``).
    private let writer = BackgroundThread(name: "ubiquity.index-writer", nice: Indexer.niceness)

    /// An indexer writing `index` with `scanner`.
    package init(index: MetadataIndex, logger: Logger, scanner: TreeScanner = TreeScanner()) {
        self.index = index
        self.logger = logger
        self.scanner = scanner
    }

    /// How many nice steps the indexer's thread runs below the thread that made the indexer
    /// (none: sync waits for what the index writes).
    package static let niceness: Int32 = 0

    // (the worker's thread ends with the indexer: BackgroundThread.deinit)

    /// The registered roots.
    package var rootPaths: [String] { roots.keys.sorted() }

    /// The problems the last scan of each root worked around (unreadable folders, bad names).
    package var scanWarnings: [String: [ScanWarning]] { warnings }

    /// Registers `path` as a root and brings its rows up to date with a full scan; returns the
    /// merged delta of what it changed (subscribers of the change feed got each step).
    ///
    /// - Throws: ``UbiquityError`` if `path` is not a readable folder or the index fails.
    package func addRoot(_ path: String, ignoring rules: IgnoreRules) async throws -> IndexDelta {
        try await addRoot(path, ignoring: rules, keepingDeltas: true).merged
    }

    /// ``addRoot(_:ignoring:)`` that keeps no delta, only how many rows changed (a first scan
    /// of 100,000 files would otherwise hold 100,000 records for nobody).
    @discardableResult
    package func scanRoot(_ path: String, ignoring rules: IgnoreRules) async throws -> IndexChangeCounts {
        try await addRoot(path, ignoring: rules, keepingDeltas: false).counts
    }

    private func addRoot(_ path: String, ignoring rules: IgnoreRules, keepingDeltas: Bool) async throws -> IndexJobSteps {
        let root = Self.normalize(path)
        roots[root] = rules
        let job = makeJob()
        let (steps, summary) = try await run {
            try job.index.registerRoot(root)
            var total = IndexJobSteps(keepsDeltas: keepingDeltas)
            // an empty index (its first scan) is loaded in bulk: the secondary indexes and the
            // name search are made at the end, in one go
            let bulk = try job.index.isEmpty()
            if bulk { try job.index.beginBulkLoad() }
            defer { if bulk { try? job.index.finishBulkLoad() } }
            let summary = try job.scanSubtree(root, root: root, rules: rules, bulk: bulk, into: &total)
            return (total, summary)
        }
        record(summary, for: root)
        return steps
    }

    /// Forgets the root at `path`, deleting its rows.
    package func removeRoot(_ path: String) async throws -> IndexDelta {
        let root = Self.normalize(path)
        roots[root] = nil
        warnings[root] = nil
        let job = makeJob()
        return try await run {
            try job.index.unregisterRoot(root, removingItems: true)
        }
    }

    /// Scans the subtree at `path` (a root or anything under one) and reconciles the index
    /// with it: used for rescan requests and as the periodic backstop. A path that no longer
    /// exists is removed with its subtree; a missing root is emptied and marked pending. Returns
    /// the merged delta (empty without `keepingDelta`: the change feed had every step).
    package func rescan(_ path: String, keepingDelta: Bool = true) async throws -> IndexDelta {
        let path = Self.normalize(path)
        let job = makeJob()
        let (delta, summaries) = try await run {
            var total = IndexJobSteps(keepsDeltas: keepingDelta)
            var summaries: [String: ScanSummary] = [:]
            try job.rescan(path, into: &total, summaries: &summaries)
            return (total.merged, summaries)
        }
        for (root, summary) in summaries { record(summary, for: root) }
        return delta
    }

    /// Applies one settled watcher batch: changes in order, then the rescans (outermost first,
    /// nested ones skipped). A file or folder changed or removed inside a subtree the batch
    /// rescans is left to the rescan (a new folder's files are read once, not once per event
    /// and again by the scan). Returns the merged delta (empty without
    /// `keepingDelta`); subscribers of the change feed get each step's delta.
    package func apply(_ batch: WatchBatch, keepingDelta: Bool = true) async throws -> IndexDelta {
        guard !batch.isEmpty else { return IndexDelta() }
        let job = makeJob()
        let (delta, summaries) = try await run {
            var total = IndexJobSteps(keepsDeltas: keepingDelta)
            var summaries: [String: ScanSummary] = [:]
            let rescans = Self.outermost(batch.rescans)
            try job.apply(Self.changes(batch.changes, outside: rescans), into: &total)
            for request in rescans {
                if let root = job.root(of: request.path) {
                    switch request.reason {
                    case .overflow, .watchLimit, .rootChanged:
                        try job.index.setRescanPending(root: root.path, true, message: request.message)
                    case .newDirectory:
                        break
                    }
                }
                try job.rescan(request.path, into: &total, summaries: &summaries)
                if request.reason == .watchLimit, request.path != job.root(of: request.path)?.path,
                   let root = job.root(of: request.path) {
                    // The subtree is current, but it is still unwatched: keep telling the user.
                    try job.index.setRescanPending(root: root.path, true, message: request.message)
                }
            }
            return (total.merged, summaries)
        }
        for (root, summary) in summaries { record(summary, for: root) }
        return delta
    }

    /// The index's status (counts, size on disk, roots and their scan state).
    package func status() async throws -> IndexStatus {
        let index = self.index
        return try await withCheckedThrowingContinuation { continuation in
            DispatchQueue.global().async { continuation.resume(with: Result { try index.status() }) }
        }
    }

    // MARK: - Running jobs

    private func makeJob() -> IndexerJob {
        IndexerJob(index: index, scanner: scanner, logger: logger, roots: roots, writer: writer)
    }

    /// Runs `body` on the worker queue (one job at a time, in submission order).
    private func run<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            worker.async { continuation.resume(with: Result { try body() }) }
        }
    }

    private func record(_ summary: ScanSummary, for root: String) {
        warnings[root] = summary.warnings
        for warning in summary.warnings {
            logger.warning("Indexing skipped an item", metadata: ["root": "\(root)", "warning": "\(warning)"])
        }
        if summary.invalidNameCount > summary.warnings.filter({ $0.kind == .invalidName }).count {
            logger.warning("Names that are not valid UTF-8 were not indexed",
                           metadata: ["root": "\(root)", "count": "\(summary.invalidNameCount)"])
        }
    }

    /// Files written per index transaction when a batch names many (tests size their batches by it).
    static var filesPerTransactionForTests: Int { IndexerJob.filesPerTransaction }

    static func normalize(_ path: String) -> String {
        var path = path
        while path.utf8.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// `changes` without the `changed` and `removed` ones at or inside a path of `rescans` (the
    /// rescan that follows reconciles those; moves stay, as their other end may be elsewhere).
    static func changes(_ changes: [WatchChange], outside rescans: [RescanRequest]) -> [WatchChange] {
        guard !rescans.isEmpty else { return changes }
        let scanned = Set(rescans.map { normalize($0.path) })
        func isScanned(_ path: String) -> Bool {
            var path = normalize(path)
            while true {
                if scanned.contains(path) { return true }
                guard let slash = path.utf8.lastIndex(of: UInt8(ascii: "/")) else { return false }
                if slash == path.utf8.startIndex { return scanned.contains("/") }
                path = String(path[..<slash])
            }
        }
        return changes.filter { change in
            switch change {
            case .changed(let path), .removed(let path): !isScanned(path)
            case .moved: true
            }
        }
    }

    /// The requests whose path is not inside another request's path.
    static func outermost(_ requests: [RescanRequest]) -> [RescanRequest] {
        var kept: [RescanRequest] = []
        for request in requests.sorted(by: { $0.path.count < $1.path.count }) {
            let path = normalize(request.path)
            if kept.contains(where: { path == $0.path || path.hasPrefix($0.path == "/" ? "/" : $0.path + "/") }) { continue }
            var normalized = request
            normalized.path = path
            kept.append(normalized)
        }
        return kept
    }
}
