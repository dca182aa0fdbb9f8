import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityStore

/// The watcher, the indexer and the index working together for a set of roots, with live
/// queries on top. The daemon hosts one over its index file; a process without a daemon hosts
/// one over an in-memory index (``IndexHost/local``), so both give the same results.
///
/// Roots are reference-counted: a query whose scope no root covers adds its scope as a root
/// (scanned, then watched) for as long as it runs.
package final class IndexHost: Sendable {
    /// The index.
    package let index: MetadataIndex
    let indexer: Indexer
    let watcher: FileWatcher
    let logger: Logger
    let state = Mutex(HostState())
    private let pump = Mutex<Task<Void, Never>?>(nil)
    /// The sequence number of the last watcher batch applied and published.
    private let applied = ProgressMark()
    /// Raised whenever a root becomes ready or stops being indexed.
    private let rootChanges = ProgressMark()

    struct HostState {
        var roots: [String: RootEntry] = [:]
        var messages: [String] = []
    }

    struct RootEntry {
        var references: Int
        var ready: Bool
        var pinned: Bool
        /// False while the root's folder is gone (deleted or moved away) and not watched again.
        var watched = true
    }

    /// A host over `index`, watching with `watcher` settings.
    package init(index: MetadataIndex, watcher configuration: FileWatcher.Configuration = .init(), logger: Logger) {
        self.index = index
        self.logger = logger
        indexer = Indexer(index: index, logger: logger)
        watcher = FileWatcher(configuration: configuration, logger: logger)
        let batches = watcher.batches
        let task = Task { [indexer, weak self] in
            for await batch in batches {
                do {
                    // Each step's delta is on the index's change feed (``deltas()``) before it returns.
                    _ = try await indexer.apply(batch, keepingDelta: false)
                    self?.noteRescans(batch)
                    await self?.watchAgain(batch.rescans.filter { $0.reason == .rootChanged }.map(\.path))
                } catch {
                    logger.error("index update failed", metadata: ["ubiquity.error": "\(error)"])
                }
                self?.applied.advance(to: batch.sequence)
            }
        }
        pump.withLock { $0 = task }
    }

    /// The host of this process when no daemon runs: an in-memory index, created on first use.
    package static func local(logger: Logger) throws -> IndexHost {
        try localHost.withLock { host in
            if let host { return host }
            let made = IndexHost(index: try MetadataIndex.inMemory(logger: logger), logger: logger)
            host = made
            return made
        }
    }

    private static let localHost = Mutex<IndexHost?>(nil)

    /// Stops watching and ends the subscriptions to the change feed.
    package func shutdown() {
        watcher.stop()
        pump.withLock { $0?.cancel() }
        index.finishChanges()
    }

    // MARK: Roots

    /// Indexes and watches `root` for as long as the host runs (the daemon's containers).
    package func addPermanentRoot(_ root: String) async throws {
        try await acquire(scopes: [root], pinned: true)
    }

    /// Makes sure every scope is indexed and watched, scanning new roots (watch first, then scan,
    /// so nothing in between is missed). Pair with ``release(scopes:)``.
    package func acquire(scopes: [String], pinned: Bool = false) async throws {
        for scope in scopes {
            let root = try Self.normalizedRoot(scope)
            let isNew: Bool = state.withLock { state in
                if let covering = Self.coveringRoot(of: root, in: state.roots) {
                    state.roots[covering]?.references += 1
                    if pinned { state.roots[covering]?.pinned = true }
                    return false
                }
                state.roots[root] = RootEntry(references: 1, ready: false, pinned: pinned)
                return true
            }
            guard isNew else {
                try await waitUntilReady(root)
                // Read-your-writes: changes made before the query started are in its results.
                if let covering = state.withLock({ Self.coveringRoot(of: root, in: $0.roots) }) {
                    try await sync(root: covering)
                }
                continue
            }
            do {
                let rules = IgnoreRules.load(root: root)
                try watcher.watch(root: root, ignoring: rules)
                try await indexer.scanRoot(root, ignoring: rules)
                state.withLock { $0.roots[root]?.ready = true }
                rootChanges.increment()
            } catch {
                state.withLock { _ = $0.roots.removeValue(forKey: root) }
                rootChanges.increment()
                watcher.unwatch(root: root)
                throw error
            }
        }
    }

    /// Releases scopes acquired with ``acquire(scopes:pinned:)``; a root no query needs any more
    /// stops being watched (its rows stay until the next scan of the index).
    package func release(scopes: [String]) {
        for scope in scopes {
            guard let root = try? Self.normalizedRoot(scope) else { continue }
            let drop: String? = state.withLock { state in
                guard let covering = Self.coveringRoot(of: root, in: state.roots) else { return nil }
                state.roots[covering]?.references -= 1
                guard let entry = state.roots[covering], entry.references <= 0, !entry.pinned else { return nil }
                state.roots[covering] = nil
                return covering
            }
            if let drop {
                watcher.unwatch(root: drop)
                rootChanges.increment()
            }
        }
    }

    /// Whether a root indexed and watched now (its first scan done) holds `path`: the host tells
    /// of every change under it.
    package func covers(_ path: String) -> Bool {
        state.withLock { state in
            Self.coveringRoot(of: path, in: state.roots).map { state.roots[$0]?.ready == true && state.roots[$0]?.watched == true } ?? false
        }
    }

    /// The roots indexed now.
    package var roots: [String] { state.withLock { Array($0.roots.keys).sorted() } }

    /// Rescans `path` (a root or a folder inside one) now: the on-demand backstop.
    @discardableResult
    package func rescan(_ path: String) async throws -> IndexDelta {
        try await indexer.rescan(path)
    }

    /// Returns once every change made under `root` before the call is in the index and has been
    /// published (read-your-writes, with a cookie file as watchman does).
    package func sync(root: String) async throws {
        let target = try await watcher.sync(root: root)
        guard await applied.wait(until: target, timeout: .seconds(30)) else {
            try Task.checkCancellation()
            throw UbiquityError(.timedOut, "the index did not catch up with the watcher of '\(root)' in 30 s")
        }
    }

    /// Waits (at most `timeout`) until a root indexed and watched holds `path` (``covers(_:)``);
    /// returns whether one does. Woken when roots become ready, not by polling.
    package func waitUntilCovered(_ path: String, timeout: Duration) async -> Bool {
        let deadline = ContinuousClock.now + timeout
        while true {
            let seen = rootChanges.value
            if covers(path) { return true }
            let left = deadline - ContinuousClock.now
            guard left > .zero, await rootChanges.wait(until: seen + 1, timeout: left) else { return covers(path) }
        }
    }

    /// Waits until the root covering `root` has had its first scan (another query may be
    /// scanning it), woken by ``rootChanges``.
    private func waitUntilReady(_ root: String) async throws {
        let deadline = ContinuousClock.now + .seconds(3600)
        while true {
            let seen = rootChanges.value
            let ready: Bool? = state.withLock { state in
                guard let covering = Self.coveringRoot(of: root, in: state.roots) else { return nil }
                return state.roots[covering]?.ready
            }
            guard let ready else { throw UbiquityError(.notFound, "'\(root)' stopped being indexed") }
            if ready { return }
            guard await rootChanges.wait(until: seen + 1, timeout: deadline - ContinuousClock.now) else {
                try Task.checkCancellation()
                throw UbiquityError(.timedOut, "the first scan of '\(root)' did not finish in an hour")
            }
        }
    }

    /// Roots whose folder was deleted or moved away (the watcher dropped their watches): when a
    /// folder is there again (sync keeps an account's documents aside and makes the folder anew),
    /// it is watched and rescanned; while none is, the root is not ``covers(_:)``'s.
    private func watchAgain(_ roots: [String]) async {
        for root in roots where state.withLock({ $0.roots[root] != nil }) {
            do {
                try watcher.watch(root: root, ignoring: IgnoreRules.load(root: root))
                state.withLock { $0.roots[root]?.watched = true }
                rootChanges.increment()
                _ = try await indexer.rescan(root, keepingDelta: false)
            } catch {
                state.withLock { $0.roots[root]?.watched = false }
                rootChanges.increment()
                logger.warning("a root's folder is gone: it is watched again once it is back", metadata: ["ubiquity.root": "\(root)"])
            }
        }
    }

    /// Brings `root` up to date: watched again first when its folder had gone (a folder made
    /// anew at its path), then rescanned; a root not indexed yet is added for good.
    package func refresh(_ root: String) async throws {
        let normalized = try Self.normalizedRoot(root)
        guard let watched = state.withLock({ $0.roots[normalized]?.watched }) else {
            try await addPermanentRoot(normalized)
            return
        }
        if !watched {
            try watcher.watch(root: normalized, ignoring: IgnoreRules.load(root: normalized))
            state.withLock { $0.roots[normalized]?.watched = true }
            rootChanges.increment()
        }
        _ = try await indexer.rescan(normalized, keepingDelta: false)
    }

    private func noteRescans(_ batch: WatchBatch) {
        for message in batch.rescans.compactMap(\.message) {
            logger.warning("\(message)")
            note(message)
        }
    }

    /// Keeps a message for the user (shown by `ubiq index status`; the last 50 are kept).
    package func note(_ message: String) {
        state.withLock { state in
            state.messages.append(message)
            if state.messages.count > 50 { state.messages.removeFirst(state.messages.count - 50) }
        }
    }

    static func normalizedRoot(_ path: String) throws -> String {
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "search scope '\(path)': expected an absolute folder path")
        }
        var root = CanonicalPath.normalize(path)
        if root.count > 1, root.hasSuffix("/") { root.removeLast() }
        var isDirectory: ObjCBool = false
        guard FileManager.default.fileExists(atPath: root, isDirectory: &isDirectory) else {
            throw UbiquityError(.notFound, "search scope '\(root)' does not exist")
        }
        guard isDirectory.boolValue else {
            throw UbiquityError(.invalidArgument, "search scope '\(root)' is not a folder")
        }
        return root
    }

    static func coveringRoot(of path: String, in roots: [String: RootEntry]) -> String? {
        roots.keys.filter { path == $0 || path.hasPrefix($0 == "/" ? "/" : $0 + "/") }.min { $0.count < $1.count }
    }

    // MARK: Deltas

    /// Every delta committed from now on (scans, rescans, watcher batches and sync's states: the
    /// index's change feed), until the stream is dropped or the host shuts down.
    package func deltas() -> AsyncStream<IndexDelta> {
        index.changes()
    }
}
