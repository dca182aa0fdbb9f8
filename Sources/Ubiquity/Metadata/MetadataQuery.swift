import Foundation
import Logging
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// A live search over the items in ubiquity containers or folders (`NSMetadataQuery`).
///
/// Set a ``predicate`` (``QueryPredicate``, NSPredicate's format strings over `kMDItemFSName`
/// and the other metadata attributes), optionally ``searchScopes``, ``sortDescriptors`` and
/// ``notificationBatchingInterval``, then ``start()``. The query gathers the initial results
/// (posting `.NSMetadataQueryDidStartGathering`, `.NSMetadataQueryGatheringProgress`,
/// `.NSMetadataQueryDidFinishGathering`), then keeps them current, posting
/// `.NSMetadataQueryDidUpdate` with the added, changed and removed items. Notifications are
/// posted on ``operationQueue`` (a private serial queue when it is nil: Linux programs rarely
/// run a main run loop). ``snapshots()`` gives the same as an `AsyncSequence`.
///
/// With `ubiq daemon` running the query is answered from the daemon's index and watcher over
/// its control socket; otherwise this process scans and watches the scopes itself, with the
/// same results.
///
/// `@unchecked Sendable`: every mutable property is guarded by `lock`.
open class MetadataQuery: @unchecked Sendable {
    let lock = NSLock()
    var _predicate: QueryPredicate?
    var _searchScopes: [Any] = []
    var _sortDescriptors: [MetadataSortDescriptor] = []
    var _valueListAttributes: [String] = []
    var _groupingAttributes: [String]?
    var _notificationBatchingInterval: TimeInterval = 0
    var _operationQueue: OperationQueue?
    weak var _delegate: (any MetadataQueryDelegate)?
    var phase: Phase = .idle
    var generation = 0
    var task: Task<Void, Never>?
    /// The results (``MetadataQueryResults``: updates in time proportional to the update).
    var resultSet = MetadataQueryResults()
    var pending = QueryUpdate()
    var pendingIsGathering = false
    var disableCount = 0
    var flushScheduled = false
    var lastPost = ContinuousClock.now
    var lastErrorValue: UbiquityError?
    var snapshotContinuations: [UInt64: AsyncStream<Snapshot>.Continuation] = [:]
    var nextSnapshotID: UInt64 = 1
    let privateQueue: OperationQueue = {
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        queue.name = "ubiquity.metadata-query"
        return queue
    }()

    /// The logger for the query's own diagnostics.
    public let logger: Logger

    enum Phase { case idle, gathering, live, stopped }

    /// A query with no predicate yet.
    public init(logger: Logger = Logger(label: "ubiquity.metadata-query")) {
        self.logger = logger
    }

    deinit { task?.cancel() }

    func locked<T>(_ body: () throws -> T) rethrows -> T {
        lock.lock()
        defer { lock.unlock() }
        return try body()
    }

    /// The predicate results must match. Setting it while the query runs restarts the query.
    public var predicate: QueryPredicate? {
        get { locked { _predicate } }
        set { restartIfRunning { _predicate = newValue } }
    }

    /// Where to search: `NSMetadataQueryUbiquitousDocumentsScope`,
    /// `NSMetadataQueryUbiquitousDataScope`, ``UbiquityMetadataQueryAllUbiquitousScope``,
    /// folder `URL`s or absolute path `String`s. Empty (the default) searches every container
    /// the process declares. Setting it while the query runs restarts the query.
    public var searchScopes: [Any] {
        get { locked { _searchScopes } }
        set { restartIfRunning { _searchScopes = newValue } }
    }

    /// How the results are ordered (by default, in the index's order).
    public var sortDescriptors: [MetadataSortDescriptor] {
        get { locked { _sortDescriptors } }
        set {
            locked {
                _sortDescriptors = newValue
                resortLocked()  // MetadataQuery+Results.swift
            }
        }
    }

    /// Attributes whose distinct values ``valueLists`` counts.
    public var valueListAttributes: [String] {
        get { locked { _valueListAttributes } }
        set { locked { _valueListAttributes = newValue } }
    }

    /// Attributes that ``groupedResults`` groups by, outermost first.
    public var groupingAttributes: [String]? {
        get { locked { _groupingAttributes } }
        set { locked { _groupingAttributes = newValue } }
    }

    /// The shortest time between two update notifications, in seconds. Changes arriving sooner
    /// are merged into the next notification. Apple's default is 1 s; Ubiquity's is 0 (post as
    /// soon as the index has the change: the watcher already merges bursts).
    public var notificationBatchingInterval: TimeInterval {
        get { locked { _notificationBatchingInterval } }
        set { locked { _notificationBatchingInterval = max(0, newValue) } }
    }

    /// The queue notifications and delegate calls are made on (a private serial queue when nil).
    public var operationQueue: OperationQueue? {
        get { locked { _operationQueue } }
        set { locked { _operationQueue = newValue } }
    }

    /// The delegate (held weakly).
    public var delegate: (any MetadataQueryDelegate)? {
        get { locked { _delegate } }
        set { locked { _delegate = newValue } }
    }

    /// Whether the query has been started and not stopped.
    public var isStarted: Bool { locked { phase == .gathering || phase == .live } }
    /// Whether the initial results are still being gathered.
    public var isGathering: Bool { locked { phase == .gathering } }
    /// Whether the query was stopped.
    public var isStopped: Bool { locked { phase == .stopped } }

    /// Why the query stopped on its own (a bad scope, a daemon that went away…), if it did.
    public var lastError: UbiquityError? { locked { lastErrorValue } }

    private func restartIfRunning(_ change: () -> Void) {
        let wasRunning = locked { () -> Bool in
            change()
            return phase == .gathering || phase == .live
        }
        if wasRunning {
            stop()
            _ = start()
        }
    }
}
