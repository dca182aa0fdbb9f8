// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityCore
import UbiquityIndex

/// Syncs one folder with the private database of a container: every item is a `UbiquityItem`
/// record in the reserved zone `_ubiquityDocuments`, a file's content an asset (`docs/sync.md`).
///
/// One worker task runs passes: fetch the zone's changes since the saved change token and
/// apply them (download under a coordinated write, conflicts kept as versions), then scan the
/// folder against the journal and upload what changed (read under a coordinated read, renames
/// as path updates, deletes as record deletes). Passes are started by the folder's watcher, by
/// push notifications of the zone subscription, and every `pollInterval` as a backstop. The
/// journal (``SyncJournal``) makes every step restartable.
public actor SyncEngine {
    /// Makes the container for an identifier (the account's credentials are the caller's).
    public typealias ContainerFactory = @Sendable (String) -> CloudContainer
    /// Told of an item's new sync state (absolute path): the daemon keeps the index's
    /// ubiquitous attributes with it.
    public typealias StatusHandler = @Sendable (_ path: String, _ status: SyncItemStatus) -> Void
    /// Hears of uploads, downloads, conflicts and failed uploads (the daemon's hooks).
    public typealias EventHandler = @Sendable (SyncEvent) -> Void
    /// Told of an item's transfer state (absolute path): downloading status, progress.
    public typealias TransferHandler = @Sendable (_ path: String, _ state: ItemSyncState) -> Void

    /// The synced folder (absolute, symbolic links resolved).
    public nonisolated let folder: String
    /// The journal file.
    public nonisolated let journalPath: String
    /// The container.
    public nonisolated let containerIdentifier: String
    let journal: SyncJournal
    let container: CloudContainer
    let database: CloudDatabase
    let logger: Logger
    let lock: FolderLock
    let rules: IgnoreRules
    let pollInterval: Duration
    let deviceName: String
    let stagingDirectory: String
    let coordinator = FileCoordinator()
    nonisolated let watcher: FileWatcher
    nonisolated let wakeStream: AsyncStream<Void>
    nonisolated let wakeContinuation: AsyncStream<Void>.Continuation
    nonisolated let tasks = Mutex<[Task<Void, Never>]>([])
    nonisolated let passes = Atomic<Int>(0)
    var subscribed = false
    /// Items this engine kept conflict versions of, until they are resolved (for the index).
    var conflicted = Set<String>()
    /// Uploads the server refused for good (too large, over quota), by path, with the stat they
    /// had: not tried again until the item changes (or the daemon restarts).
    var refusedUploads: [String: SyncStat] = [:]
    let onStatus: StatusHandler?
    let onEvent: EventHandler?
    nonisolated let onTransfer: TransferHandler?
    nonisolated let progressThrottle = ProgressThrottle()
    /// Who hears an item's download progress besides the index (`ubiq download`), by path.
    nonisolated let progressListeners = Mutex<[String: @Sendable (Double) -> Void]>([:])
    /// The most downloaded content (bytes) kept before the least recently used files are
    /// evicted; nil: no limit (`ubiq daemon --evict-budget`).
    public nonisolated let evictionBudget: Int64?
    /// Whether a pass, an eviction or an on-demand download runs (they take turns).
    var exclusiveHeld = false
    var exclusiveWaiters: [CheckedContinuation<Void, Never>] = []

    /// An engine for `folder` (created if missing) with its journal at `journalPath`.
    /// - Throws: `alreadyExists` when another engine syncs the folder; I/O errors opening the
    ///   journal.
    public init(containerIdentifier: String = SyncRecord.defaultContainer, makeContainer: ContainerFactory, folder: String,
                journalPath: String, deviceName: String? = nil, pollInterval: Duration = .seconds(30), logger: Logger,
                onStatus: StatusHandler? = nil, onEvent: EventHandler? = nil, onTransfer: TransferHandler? = nil,
                evictionBudget: Int64? = nil) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let canonical = try CanonicalPath.canonicalize(folder, resolveLast: true)
        self.folder = canonical
        self.journalPath = journalPath
        self.containerIdentifier = containerIdentifier
        lock = try FolderLock(path: canonical + "/.ubiquity-sync.lock")
        journal = try SyncJournal.openRecovering(path: journalPath, logger: logger).journal
        if let recorded = try journal.value("folder"), recorded != canonical {
            logger.warning("the journal was made for another folder: it is used for this one", metadata: ["ubiquity.journal": "\(journalPath)"])
        }
        try journal.setValue(canonical, "folder")
        container = makeContainer(containerIdentifier)
        database = container.privateCloudDatabase
        rules = IgnoreRules.load(root: canonical)
        self.pollInterval = pollInterval
        self.deviceName = deviceName ?? ProcessInfo.processInfo.environment["UBIQUITY_DEVICE_NAME"] ?? "this device"
        var logger = logger
        logger[metadataKey: "ubiquity.device"] = "\(self.deviceName)"
        self.logger = logger
        stagingDirectory = journalPath + ".staging"
        try? FileManager.default.removeItem(atPath: stagingDirectory)
        try FileManager.default.createDirectory(atPath: stagingDirectory, withIntermediateDirectories: true)
        self.onStatus = onStatus
        self.onEvent = onEvent
        self.onTransfer = onTransfer
        self.evictionBudget = evictionBudget
        try journal.resetRunningTransfers()
        watcher = FileWatcher(logger: logger)
        (wakeStream, wakeContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The journal's default place for `folder`: `$XDG_STATE_HOME/ubiquity/sync/<container>-<hash of the folder>.sqlite`.
    public static func defaultJournalPath(folder: String, containerIdentifier: String, paths: UbiquityPaths = UbiquityPaths()) -> String {
        let canonical = (try? CanonicalPath.canonicalize(folder, resolveLast: true)) ?? folder
        let digest = SyncFiles.hash(Data(canonical.utf8)).prefix(16)
        return paths.stateDirectory.appendingPathComponent("sync/\(containerIdentifier)-\(digest).sqlite").path
    }

    /// Starts watching the folder, listening for pushes and syncing.
    public nonisolated func start() {
        do { try watcher.watch(root: folder, ignoring: rules) } catch {
            logger.error("cannot watch the sync folder; changes are found by the periodic scan only", metadata: ["ubiquity.error": "\(error)"])
        }
        let watching = Task { [watcher, wakeContinuation] in
            for await _ in watcher.batches { wakeContinuation.yield() }
        }
        let pushes = Task { [container, logger, wakeContinuation] in
            while !Task.isCancelled {
                do {
                    for try await _ in container.notifications() { wakeContinuation.yield() }
                } catch {
                    logger.debug("notifications ended; reconnecting", metadata: ["ubiquity.error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(2))
            }
        }
        let poll = Task { [pollInterval, wakeContinuation] in
            while !Task.isCancelled {
                try? await Task.sleep(for: pollInterval)
                wakeContinuation.yield()
            }
        }
        let worker = Task { await self.run() }
        wakeContinuation.yield()
        tasks.withLock { $0 += [watching, pushes, poll, worker] }
    }

    /// Stops syncing (a pass in flight is cancelled; the journal keeps what was done).
    public nonisolated func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        wakeContinuation.finish()
        watcher.stop()
    }

    /// Asks for a pass soon.
    public nonisolated func wake() { wakeContinuation.yield() }

    /// The number of passes completed (for tests and status).
    public nonisolated var completedPasses: Int { passes.load(ordering: .relaxed) }

    func run() async {
        var failures = 0
        let clock = ContinuousClock()
        var notBefore = clock.now
        for await _ in wakeStream {
            if Task.isCancelled { return }
            // after a failed pass, wake-ups (the watcher, pushes) wait out the back-off: a pass that
            // fails at once (a full disk) must not run in a loop
            if clock.now < notBefore { try? await Task.sleep(until: notBefore, clock: clock) }
            if Task.isCancelled { return }
            try? await Task.sleep(for: .milliseconds(30))  // let a burst of events settle
            do {
                try await pass()
                failures = 0
                passes.add(1, ordering: .relaxed)
            } catch is CancellationError {
                return
            } catch {
                failures += 1
                let delay = min(30.0, 0.5 * pow(2.0, Double(min(failures, 6))))
                notBefore = clock.now + .milliseconds(Int64(delay * 1000))
                logger.warning("sync pass failed; retrying in \(delay) s", metadata: ["ubiquity.error": "\(error)"])
                Task { [wakeContinuation] in
                    try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
                    wakeContinuation.yield()
                }
            }
        }
    }

    /// One pass: remote changes first, then local ones.
    public func pass() async throws {
        try await exclusively { try await passSteps() }
    }

    /// Runs `body` when no pass, eviction or on-demand download runs, so they never interleave.
    func exclusively<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        while exclusiveHeld { await withCheckedContinuation { exclusiveWaiters.append($0) } }
        exclusiveHeld = true
        defer {
            exclusiveHeld = false
            if !exclusiveWaiters.isEmpty { exclusiveWaiters.removeFirst().resume() }
        }
        return try await body()
    }

    func passSteps() async throws {
        if !subscribed { await subscribe() }
        // a remote change that cannot be applied must not hold back local changes
        var remoteFailure: (any Error)?
        do { try await pullRemote() } catch is CancellationError { throw CancellationError() } catch { remoteFailure = error }
        try Task.checkCancellation()
        try await pushLocal()
        await noteResolvedConflicts()
        await enforceEvictionBudget()
        if let remoteFailure { throw remoteFailure }
    }

    /// Saves the zone subscription that makes the server push a notification on every change.
    func subscribe() async {
        do {
            _ = try await database.save(RecordZoneSubscription(zoneID: SyncRecord.zoneID, subscriptionID: "ubiquity-documents"))
            subscribed = true
        } catch {
            logger.warning("cannot subscribe to the documents zone; relying on the periodic fetch", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    func absolute(_ relative: String) -> String { folder + "/" + relative }

    /// Reports an item's sync state to the status handler (an item with unresolved conflict
    /// versions stays "in conflict").
    func report(_ relative: String, _ status: SyncItemStatus) {
        onStatus?(absolute(relative), status == .uploaded && conflicted.contains(relative) ? .inConflict : status)
        if status == .uploaded { noteUploaded(relative) }
        // an evicted item stays "not downloaded" in the index (the status resets it)
        if status == .uploaded, let entry = try? journal.entry(path: relative), (try? journal.isEvicted(entry.id)) == true {
            publishTransfer(relative)
        }
    }

    /// Items whose conflicts were resolved (`ubiq resolve`, the API) are reported uploaded again.
    func noteResolvedConflicts() async {
        guard !conflicted.isEmpty, onStatus != nil else { return }
        let folder = self.folder
        for path in conflicted {
            let url = URL(fileURLWithPath: folder + "/" + path)
            let unresolved = (try? await BlockingWork.run { FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0 }) ?? 0
            if unresolved == 0 {
                conflicted.remove(path)
                report(path, .uploaded)
            }
        }
    }

    static func depth(_ path: String) -> Int { path.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) } }
}
