import CInotifyTools
import Foundation
import Glibc
import Logging
import Synchronization
import UbiquityCore

/// The process-wide owner of libinotifytools' single inotify instance.
///
/// libinotifytools keeps global state, so there is one hub per process: one lock serialises
/// every call into the library, and one dedicated reader thread (never the cooperative pool)
/// polls the inotify descriptor, drains events through `inotifytools_next_events`, applies them
/// and delivers the settled batches of each ``FileWatcher``. The thread starts with the first
/// watched root and ends (closing the instance) when nothing is watched any more.
final class InotifyHub: Sendable {
    /// The hub of this process.
    static let shared = InotifyHub()

    /// Events applied per lock hold, so callers of `watch` are not starved during a burst.
    private static let drainChunk = 4096
    /// The numbers of sync markers put in feeds.
    private static let markers = Atomic<UInt64>(1)

    private let state = Mutex(HubState())
    private let wakeRead: Int32
    private let wakeWrite: Int32

    private init() {
        var descriptors: [Int32] = [-1, -1]
        if pipe(&descriptors) != 0 {
            fatalError("pipe failed: \(String(cString: strerror(errno)))")
        }
        for descriptor in descriptors {
            _ = fcntl(descriptor, F_SETFL, fcntl(descriptor, F_GETFL) | O_NONBLOCK)
            _ = fcntl(descriptor, F_SETFD, FD_CLOEXEC)
        }
        wakeRead = descriptors[0]
        wakeWrite = descriptors[1]
    }

    // MARK: API (any thread)

    /// Registers a watcher; it receives batches once it watches a root.
    func register(_ id: UInt64, configuration: FileWatcher.Configuration,
                  continuation: AsyncStream<WatchBatch>.Continuation, logger: Logger) {
        state.withLock {
            $0.watchers[id] = HubWatcher(
                coalescer: WatchCoalescer(settle: configuration.settle, maximumLatency: configuration.maximumLatency,
                                           quickSettle: configuration.quickSettle),
                continuation: continuation, failAddWatch: configuration.failAddWatch, logger: logger)
        }
    }

    /// Watches `root` (a canonical folder path) and every folder below it for `id`: with
    /// inotify, or, when a ``FolderChangeFeed`` tells the changes of a folder that is or holds
    /// `root` (the mounted folder), from that feed alone.
    func watch(_ id: UInt64, root: String, rules: IgnoreRules) throws {
        let feed = FolderChangeFeed.shared.feed(containing: root)
        let startReader = try state.withLock { state -> Bool in
            guard state.watchers[id] != nil else {
                throw UbiquityError(.invalidArgument, "the file watcher was stopped")
            }
            try state.initializeLibrary()
            state.watchers[id]!.roots[root] = HubWatcher.Root(rules: rules, feed: feed)
            state.watchers[id]!.coalescer.addRoot(root, rules: rules)
            if let feed { state.fedOwners[feed, default: []].insert(RootKey(watcher: id, root: root)) }
            guard !state.readerRunning else { return false }
            state.readerRunning = true
            return true
        }
        if startReader { startReaderThread() }
        if let feed {
            FolderChangeFeed.shared.subscribe(feed) { [self] in wake() }
            wake()  // what was posted before
            return
        }

        let owner = RootKey(watcher: id, root: root)
        let result = FolderWalk.run(start: root, root: root, rules: rules) { folder in
            state.withLock { $0.addWatch(folder, owner: owner) }
        }
        switch result.start {
        case .added, .limit:
            break
        case .skipped, .failed:
            unwatch(id, root: root)
            let code: Int32 = if case .failed(let code) = result.start { code } else { ENOENT }
            throw UbiquityError.posix("inotify_add_watch", path: root, errno: code)
        }
        if let limit = result.limit {
            state.withLock { $0.reportLimit(owner, path: limit.path, errno: limit.errno, now: WatchPaths.now()) }
            wake()
        }
    }

    /// Stops watching `root` for `id`.
    func unwatch(_ id: UInt64, root: String) {
        state.withLock { $0.removeRoot(root, of: id, keepPending: false) }
        wake()
    }

    /// Unregisters `id`: its watches go, its stream ends, its sync calls fail.
    func stop(_ id: UInt64) {
        let outbox = state.withLock { state -> HubOutbox in
            var outbox = HubOutbox()
            guard let watcher = state.watchers[id] else { return outbox }
            for root in watcher.roots.keys { state.removeRoot(root, of: id, keepPending: false) }
            state.watchers[id] = nil
            outbox.finishes.append(watcher.continuation)
            for (path, waiter) in state.cookies where waiter.watcher == id {
                state.cookies[path] = nil
                state.cookiesToCreate.removeAll { $0 == path }
                if waiter.created { state.pendingUnlinks.append(path) }
                outbox.resumes.append((waiter.continuation, UbiquityError(.cancelled, "the file watcher was stopped")))
            }
            return outbox
        }
        outbox.deliver()
        wake()
    }

    /// Watches held for `id`.
    /// How many batches `id` has been handed.
    func deliveredCount(_ id: UInt64) -> UInt64 {
        state.withLock { $0.watchers[id]?.delivered ?? 0 }
    }

    func watchCount(_ id: UInt64) -> Int {
        state.withLock { $0.watchCount(of: id) }
    }

    /// Whether `id` watches `root`.
    func isWatching(_ id: UInt64, root: String) -> Bool {
        state.withLock { $0.watchers[id]?.roots[root] != nil }
    }

    /// Waits until the reader has seen a new cookie file in `root` (and delivered what preceded
    /// it); in a fed root, a marker put in its feed's queue instead of a file.
    func sync(_ id: UInt64, root: String, timeout: Duration) async throws {
        let feed = state.withLock { $0.watchers[id]?.roots[root]?.feed }
        let number = Self.markers.wrappingAdd(1, ordering: .relaxed).oldValue
        let key = feed.map { HubState.markerKey($0, number) } ?? WatchPaths.join(root, WatchPaths.cookiePrefix + UUID().uuidString.lowercased())
        try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Void, any Error>) in
                let error = state.withLock { state -> UbiquityError? in
                    guard state.watchers[id]?.roots[root] != nil else {
                        return UbiquityError(.invalidArgument, "\(root) is not watched by this file watcher")
                    }
                    state.cookies[key] = CookieWaiter(watcher: id, deadline: WatchPaths.now() &+ timeout.watchNanoseconds,
                                                      continuation: continuation)
                    if feed == nil { state.cookiesToCreate.append(key) }
                    return nil
                }
                if let error { return continuation.resume(throwing: error) }
                // in the feed's own queue: seen once everything posted before it is in
                if let feed { FolderChangeFeed.shared.post(FolderChangeFeed.Change(.marker(number), feed), in: feed) }
                wake()
            }
        } onCancel: {
            cancelCookie(key)
        }
    }

    private func cancelCookie(_ path: String) {
        let waiter = state.withLock { state -> CookieWaiter? in
            guard let waiter = state.cookies.removeValue(forKey: path) else { return nil }
            state.cookiesToCreate.removeAll { $0 == path }
            if waiter.created { state.pendingUnlinks.append(path) }
            return waiter
        }
        waiter?.continuation.resume(throwing: UbiquityError(.cancelled, "sync was cancelled"))
        wake()
    }

    /// Test hook: queues the rescans an `IN_Q_OVERFLOW` would cause, for `id`'s roots only.
    func simulateOverflow(_ id: UInt64) {
        state.withLock { state in
            let now = WatchPaths.now()
            for root in state.watchers[id]?.roots.keys.sorted() ?? [] {
                state.watchers[id]?.coalescer.request(
                    RescanRequest(path: root, reason: .overflow, message: WatchMessages.overflow(root: root)), at: now)
            }
        }
        wake()
    }

    // MARK: Reader thread

    private func wake() {
        var byte: UInt8 = 1
        _ = write(wakeWrite, &byte, 1)
    }

    private func startReaderThread() {
        let thread = Thread { [self] in run() }
        thread.name = "ubiquity.inotify-reader"
        thread.stackSize = 1 << 20
        thread.start()
    }

    private struct Plan {
        var fd: Int32 = -1
        var timeout: Int32 = -1
        var create: [String] = []
        var unlinks: [String] = []
        var outbox = HubOutbox()
        var exit = false
    }

    private func run() {
        while true {
            let plan = state.withLock { state in makePlan(&state, now: WatchPaths.now()) }
            var failed: [(String, Int32)] = []
            for path in plan.create {
                let descriptor = open(path, O_CREAT | O_EXCL | O_WRONLY | O_CLOEXEC, 0o600)
                if descriptor >= 0 { close(descriptor) } else { failed.append((path, errno)) }
            }
            for path in plan.unlinks { unlink(path) }
            plan.outbox.deliver()
            if !failed.isEmpty { failCookies(failed) }
            if plan.exit { return }

            var descriptors = [pollfd(fd: plan.fd, events: Int16(POLLIN), revents: 0),
                               pollfd(fd: wakeRead, events: Int16(POLLIN), revents: 0)]
            _ = poll(&descriptors, 2, plan.timeout)
            if descriptors[1].revents != 0 {
                var buffer = [UInt8](repeating: 0, count: 64)
                while read(wakeRead, &buffer, buffer.count) > 0 {}
            }
            let outbox = state.withLock { state -> HubOutbox in
                var outbox = HubOutbox()
                state.drain(now: WatchPaths.now(), limit: Self.drainChunk, outbox: &outbox)
                state.drainFeeds(now: WatchPaths.now(), outbox: &outbox)
                state.flushDue(now: WatchPaths.now(), outbox: &outbox)
                return outbox
            }
            outbox.deliver()
        }
    }

    private func makePlan(_ state: inout HubState, now: UInt64) -> Plan {
        var plan = Plan()
        for (path, waiter) in state.cookies where waiter.deadline <= now {
            state.cookies[path] = nil
            state.cookiesToCreate.removeAll { $0 == path }
            if waiter.created { plan.unlinks.append(path) }
            plan.outbox.resumes.append((waiter.continuation, UbiquityError(
                .timedOut, "the file watcher did not see its sync cookie \(path) in time")))
        }
        plan.create = state.cookiesToCreate
        for path in plan.create { state.cookies[path]?.created = true }
        state.cookiesToCreate = []
        plan.unlinks += state.pendingUnlinks
        state.pendingUnlinks = []

        if !state.needsReader && state.drainedToEmpty {
            state.shutdownLibrary()
            state.readerRunning = false
            plan.exit = true
            return plan
        }
        plan.fd = state.fd
        if !state.drainedToEmpty || !plan.create.isEmpty {
            plan.timeout = 0
            return plan
        }
        var deadline: UInt64?
        for watcher in state.watchers.values {
            if let due = watcher.coalescer.deadline { deadline = min(deadline ?? due, due) }
        }
        for waiter in state.cookies.values { deadline = min(deadline ?? waiter.deadline, waiter.deadline) }
        if let deadline {
            plan.timeout = deadline <= now ? 0 : Int32(clamping: (deadline - now + 999_999) / 1_000_000)
        }
        return plan
    }

    private func failCookies(_ failures: [(String, Int32)]) {
        let waiters = state.withLock { state in
            failures.compactMap { path, code in
                state.cookies.removeValue(forKey: path).map { ($0, UbiquityError.posix("open", path: path, errno: code)) }
            }
        }
        for (waiter, error) in waiters { waiter.continuation.resume(throwing: error) }
    }
}
