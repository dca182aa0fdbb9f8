import Foundation
import Glibc
import Logging
import Synchronization
import UbiquityCore

/// Watches folder trees with inotify (through libinotifytools) and delivers settled batches of
/// changes: bursts coalesced per path, renames paired into moves, editor save patterns reduced to
/// one change of the document, ignored names left out, and rescan requests where events were or
/// may have been lost (queue overflow, watch limit, new folders, a root that went away).
///
/// All watchers of a process share one inotify instance and one reader thread; each receives only
/// events under its own roots. Paths in batches are absolute and under the root's real path.
package final class FileWatcher: Sendable {
    /// Timing of batches.
    package struct Configuration: Sendable {
        /// Quiet time after the last event before a batch is emitted (watchman's `settle`).
        package var settle: Duration
        /// Longest time an event waits, so a continuous stream of events is still delivered.
        package var maximumLatency: Duration
        /// Quiet time that suffices when a batch holds only completed writes (files closed after
        /// writing, no renames, removals or new folders an editor's save might be in the middle of).
        package var quickSettle: Duration
        /// Test hook: an `errno` to fail adding the watch of a folder with, or `nil`.
        var failAddWatch: (@Sendable (String) -> Int32?)?

        /// A configuration with the given timing.
        package init(settle: Duration = .milliseconds(20), maximumLatency: Duration = .milliseconds(200),
                    quickSettle: Duration = .milliseconds(2)) {
            self.settle = settle
            self.maximumLatency = maximumLatency
            self.quickSettle = quickSettle
        }
    }

    private static let nextID = Atomic<UInt64>(1)

    /// The timing this watcher was made with.
    package let configuration: Configuration
    /// Settled batches for this watcher's roots. One consumer.
    package let batches: AsyncStream<WatchBatch>

    let id: UInt64
    private let logger: Logger
    private let hub: InotifyHub

    /// A watcher that watches nothing until ``watch(root:ignoring:)`` is called.
    package init(configuration: Configuration = .init(), logger: Logger) {
        self.configuration = configuration
        self.logger = logger
        self.hub = InotifyHub.shared
        self.id = Self.nextID.wrappingAdd(1, ordering: .relaxed).oldValue
        let (stream, continuation) = AsyncStream<WatchBatch>.makeStream(bufferingPolicy: .unbounded)
        self.batches = stream
        hub.register(id, configuration: configuration, continuation: continuation, logger: logger)
    }

    deinit {
        hub.stop(id)
    }

    /// Starts watching `root` recursively (every folder, `IN_ONLYDIR` watches on folders only),
    /// skipping ignored names. Blocks while it walks the tree.
    ///
    /// Throws ``UbiquityError`` when `root` is missing or not a folder. A watch limit hit is not
    /// thrown but reported as a ``RescanRequest`` with reason ``RescanRequest/Reason/watchLimit``
    /// and a message saying how to raise `fs.inotify.max_user_watches`.
    package func watch(root: String, ignoring rules: IgnoreRules) throws {
        let path = try Self.canonicalFolder(root)
        try hub.watch(id, root: path, rules: rules)
        logger.debug("watching \(path)")
    }

    /// Stops watching `root` (as given to ``watch(root:ignoring:)``); pending changes under it are dropped.
    package func unwatch(root: String) {
        hub.unwatch(id, root: (try? Self.canonicalFolder(root)) ?? Self.trimmed(root))
    }

    /// Ends ``batches`` and removes this watcher's watches. Pending ``sync(root:timeout:)`` calls
    /// fail with ``UbiquityError/Code/cancelled``.
    package func stop() {
        hub.stop(id)
    }

    /// Read-your-writes, as watchman's cookies: creates a file `.ubiquity-cookie-<random>` in
    /// `root`, waits until the watcher has seen it (and therefore every event before it) and has
    /// delivered every batch that preceded it, then removes it. The cookie never appears in batches.
    ///
    /// Throws ``UbiquityError/Code/timedOut`` after `timeout`, ``UbiquityError/Code/invalidArgument``
    /// when `root` is not watched by this watcher.
    ///
    /// Returns the ``WatchBatch/sequence`` of the last batch delivered by then: a consumer that
    /// has processed that batch has seen every change made before the call.
    @discardableResult
    package func sync(root: String, timeout: Duration = .seconds(5)) async throws -> UInt64 {
        let path = (try? Self.canonicalFolder(root)) ?? Self.trimmed(root)
        try await hub.sync(id, root: path, timeout: timeout)
        return hub.deliveredCount(id)
    }

    /// Watches held for this watcher (one per folder).
    package var watchCount: Int {
        hub.watchCount(id)
    }

    /// Test hook: delivers the rescan requests an `IN_Q_OVERFLOW` causes, for this watcher only.
    func simulateQueueOverflow() {
        hub.simulateOverflow(id)
    }

    private static func trimmed(_ path: String) -> String {
        var path = path
        while path.count > 1 && path.hasSuffix("/") { path.removeLast() }
        return path
    }

    /// The real path of the folder at `path`, or an error if it is missing or not a folder.
    static func canonicalFolder(_ path: String) throws -> String {
        guard path.hasPrefix("/") else {
            throw UbiquityError(.invalidArgument, "the watched root must be an absolute path: '\(path)'")
        }
        var info = stat()
        guard stat(path, &info) == 0 else { throw UbiquityError.posix("stat", path: path) }
        guard (info.st_mode & S_IFMT) == S_IFDIR else {
            throw UbiquityError(.invalidArgument, "the watched root is not a folder: '\(path)'")
        }
        guard let resolved = realpath(path, nil) else { throw UbiquityError.posix("realpath", path: path) }
        defer { free(resolved) }
        return String(cString: resolved)
    }
}
