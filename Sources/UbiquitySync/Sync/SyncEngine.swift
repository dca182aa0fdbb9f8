// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityIndex
import UbiquityCloudKit

/// Syncs one folder with the private database of a container: every item is a `UbiquityItem`
/// record in the reserved zone `_ubiquityDocuments`, a file's content an asset (`docs/sync.md`).
///
/// One worker task runs passes: fetch the zone's changes since the saved change token and
/// apply them (download under a coordinated write, conflicts kept as versions), then scan the
/// folder against the journal and upload what changed (read under a coordinated read, renames
/// as path updates, deletes as record deletes). Passes are started by the index's change feed
/// (the device's one watcher and walker: ``IndexHost``), by push notifications of the zone
/// subscription, and every `pollInterval` as a backstop. The journal (``SyncJournal``, in the
/// device database) makes every step restartable, and carries each item's sync state to its
/// index row in the same transaction.
package actor SyncEngine {
    /// Makes the container for an identifier (the account's credentials are the caller's).
    package typealias ContainerFactory = @Sendable (String) -> CloudContainer
    /// Hears of uploads, downloads, conflicts and failed uploads (the daemon's hooks).
    package typealias EventHandler = @Sendable (SyncEvent) -> Void

    /// The synced folder (absolute, symbolic links resolved).
    package nonisolated let folder: String
    /// The container.
    package nonisolated let containerIdentifier: String
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
    /// The device's index: its database holds the journal, and its change feed says what
    /// changed in the folder (the engine has no watcher of its own).
    nonisolated let localIndex: IndexHost
    nonisolated let wakeStream: AsyncStream<Void>
    nonisolated let wakeContinuation: AsyncStream<Void>.Continuation
    nonisolated let tasks = Mutex<[Task<Void, Never>]>([])
    nonisolated let passes = Atomic<Int>(0)
    /// Whether the passes succeed, and the last error while they do not (``healthReport()``).
    var health = SyncHealth()
    /// What the engine remembers from pass to pass (in memory: a restart starts afresh).
    var memory = SyncPassMemory()
    /// What tests put between the engine's steps.
    var hooks = SyncTestHooks()
    /// What the next pass's local part looks at (the watcher's paths, or everything).
    nonisolated let scope = Mutex<LocalScope>(LocalScope())
    /// Whether the next pass fetches the zone's changes: set by push, the poll, start, failures
    /// and follow-ups; a pass started by the watcher alone only sends (a stale base is caught by
    /// the server's change tags, and the next push fetches).
    nonisolated let remoteDirty = Atomic<Bool>(true)
    /// Whether the engine follows the index's change feed (``start()``): without it, or while
    /// the index does not watch the folder, every pass scans the whole folder.
    nonisolated let watching = Atomic<Bool>(false)
    /// Items some process added versions to since the last pass (absolute paths): looked at for
    /// conflict versions to share (SyncEngine+AppConflictVersions.swift).
    nonisolated let versionCandidates = Mutex<Set<String>>([])
    /// The share of the synced items that one pass may delete without confirmation (with more
    /// than ``massDeleteMinimum`` items); more pauses the deletes (``confirmDeletes()``).
    package nonisolated let massDeleteShare: Double
    /// The number of deletes a pass always may send, whatever their share.
    package nonisolated let massDeleteMinimum: Int
    let onEvent: EventHandler?
    nonisolated let progressThrottle = ProgressThrottle()
    /// Who hears an item's download progress besides the index (`ubiq download`), by path.
    nonisolated let progressListeners = Mutex<[String: @Sendable (Double) -> Void]>([:])
    /// On-demand downloads whose bytes readers follow as they arrive (SyncEngine+Streaming.swift).
    nonisolated let arrivals = DownloadArrivals()
    /// The most downloaded content (bytes) kept before the least recently used files are
    /// evicted; nil: no limit (`ubiq daemon --evict-budget`).
    package nonisolated let evictionBudget: Int64?
    /// A pass, an eviction and an on-demand download take turns (``exclusively(_:)``).
    nonisolated let turns = AsyncTurns()
    /// The app containers' links at the top of the folder, which this engine neither syncs nor
    /// follows (``AppFolderLinks``); nil for none.
    package nonisolated let appLinks: AppFolderLinks?
    /// What chunk-level downloads cost so far (``deltaStatistics``, SyncEngine+Delta.swift).
    nonisolated let deltaCounters = Mutex(SyncDeltaStatistics())
    /// Where new records' IDs and conflict names' suffixes come from (seeded in the simulator).
    nonisolated let randomness: RandomSource

    /// An engine for `folder` (created if missing) with its journal `journalName` in the device
    /// database of `index` (the daemon's index: the journal's states reach the index's rows in
    /// the same transactions, and its change feed tells the engine what changed in the folder,
    /// which the index must cover: `IndexHost.addPermanentRoot`); a journal file an earlier
    /// version kept for the folder
    /// (`legacyJournal`) is brought in first. A pass that would delete more than
    /// `massDeleteShare` of the synced items and more than `massDeleteMinimum` of them pauses
    /// the deletes until ``confirmDeletes()``. `appLinks` are the app containers' links in the
    /// folder, left alone. `randomness` makes record IDs and conflict names (the kernel's; a
    /// seeded one makes a simulated run repeatable).
    /// - Throws: `alreadyExists` when another engine syncs the folder; I/O errors opening the
    ///   journal.
    package init(containerIdentifier: String = SyncRecord.defaultContainer, makeContainer: ContainerFactory, folder: String,
                index: IndexHost, journalName: String, legacyJournal: String? = nil, deviceName: String? = nil,
                pollInterval: Duration = .seconds(30), massDeleteShare: Double = 0.5, massDeleteMinimum: Int = 50, logger: Logger,
                onEvent: EventHandler? = nil, evictionBudget: Int64? = nil, appLinks: AppFolderLinks? = nil,
                randomness: RandomSource = .system) throws {
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        let canonical = try CanonicalPath.canonicalize(folder, resolveLast: true)
        self.folder = canonical
        self.containerIdentifier = containerIdentifier
        lock = try FolderLock(path: canonical + "/.ubiquity-sync.lock")
        // temporaries of new files left by a killed engine (NewFilesFolder.swift): ours now
        let leftovers = NewFilesFolder.clear(root: canonical)
        if leftovers > 0 { logger.debug("removed temporaries of new files left by an earlier run", metadata: ["ubiquity.count": "\(leftovers)"]) }
        localIndex = index
        let journal = try SyncJournal(database: index.index, name: journalName, folder: canonical)
        self.journal = journal
        if let previous = journal.previousFolder {
            logger.warning("the journal was made for another folder: it is used for this one",
                           metadata: ["ubiquity.journal": "\(journalName)", "ubiquity.previous": "\(previous)"])
        }
        if let legacyJournal { journal.importLegacyFile(legacyJournal, logger: logger) }
        container = makeContainer(containerIdentifier)
        database = container.privateCloudDatabase
        rules = IgnoreRules.load(root: canonical)
        self.pollInterval = pollInterval
        self.massDeleteShare = massDeleteShare
        self.massDeleteMinimum = massDeleteMinimum
        self.deviceName = deviceName ?? "this device"
        var logger = logger
        logger[metadataKey: "ubiquity.device"] = "\(self.deviceName)"
        self.logger = logger
        // temporaries beside their targets left by a killed engine (SyncEngine+Temporaries.swift)
        do {
            let swept = try Self.sweepTemporaries(journal: journal, root: canonical)
            if swept > 0 { logger.notice("removed temporaries left by an earlier run", metadata: ["ubiquity.count": "\(swept)"]) }
        } catch {
            logger.warning("could not look for temporaries left by an earlier run", metadata: ["ubiquity.error": "\(error)"])
        }
        stagingDirectory = Self.stagingFolder(database: index.index, journalName: journalName)
        try? FileManager.default.removeItem(atPath: stagingDirectory)
        try FileManager.default.createDirectory(atPath: stagingDirectory, withIntermediateDirectories: true)
        self.onEvent = onEvent
        self.evictionBudget = evictionBudget
        self.appLinks = appLinks
        self.randomness = randomness
        try journal.resetRunningTransfers()
        (wakeStream, wakeContinuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
    }

    /// The default journal name for `folder`: `<container>-<hash of the folder>` (the name an
    /// earlier version gave its journal file, `$XDG_STATE_HOME/ubiquity/sync/NAME.sqlite`).
    package static func defaultJournalName(folder: String, containerIdentifier: String) -> String {
        let canonical = (try? CanonicalPath.canonicalize(folder, resolveLast: true)) ?? folder
        return "\(containerIdentifier)-\(SyncFiles.hash(Data(canonical.utf8)).prefix(16))"
    }

    /// Where the engine of journal `journalName` keeps its staging files: `sync/NAME.staging`
    /// beside the device database (the system's temporary folder for one in memory).
    static func stagingFolder(database: MetadataIndex, journalName: String) -> String {
        let base = database.path.map { ($0 as NSString).deletingLastPathComponent } ?? NSTemporaryDirectory()
        return base + "/sync/" + journalName + ".staging"
    }

    /// How often a followed folder is scanned whole anyway (the poll fetches changes every
    /// `pollInterval`; a folder the index does not watch is scanned at every poll).
    static let fullScanInterval: Duration = .seconds(600)

    /// Starts following the index's change feed for the folder, listening for pushes and
    /// syncing (the first pass scans the whole folder).
    package nonisolated func start() {
        // subscribed before the first pass: nothing the index sees from now on is missed
        let changes = localIndex.index.fileChanges()
        watching.store(true, ordering: .relaxed)
        let feed = Task { [self, wakeContinuation, folder] in
            for await delta in changes where scope.withLock({ $0.add(delta, root: folder) }) {
                wakeContinuation.yield()
            }
        }
        let pushes = Task { [self, container, logger, wakeContinuation] in
            while !Task.isCancelled {
                do {
                    // a fetch once connected: a change pushed before (just after start, or
                    // while reconnecting) is not delivered on this stream
                    for try await _ in container.notifications(onConnect: { [self] in wake() }) {
                        remoteDirty.store(true, ordering: .relaxed)
                        wakeContinuation.yield()
                    }
                } catch {
                    logger.debug("notifications ended; reconnecting", metadata: ["ubiquity.error": "\(error)"])
                }
                try? await Task.sleep(for: .seconds(2))
                // pushes sent while disconnected are lost: fetch once reconnected
                remoteDirty.store(true, ordering: .relaxed)
                wakeContinuation.yield()
            }
        }
        let poll = Task { [self, pollInterval, wakeContinuation] in
            let clock = ContinuousClock()
            var scanned = clock.now
            while !Task.isCancelled {
                try? await Task.sleep(for: pollInterval)
                // the correctness backstop, a whole scan: every poll while the index does not
                // watch the folder, else every `fullScanInterval` (the index's feed names what
                // changes, and rescans itself after an overflow or a lost watch; 100,000 items
                // cost ~1.6 CPU-s a scan)
                if !followsChanges || clock.now - scanned >= Self.fullScanInterval {
                    scope.withLock { $0.full = true }
                    scanned = clock.now
                }
                remoteDirty.store(true, ordering: .relaxed)
                wakeContinuation.yield()
            }
        }
        let worker = Task { await self.run() }
        wakeContinuation.yield()
        tasks.withLock { $0 += [feed, pushes, poll, worker] }
    }

    /// Stops syncing (a pass in flight is cancelled; the journal keeps what was done).
    package nonisolated func stop() {
        for task in tasks.withLock({ $0 }) { task.cancel() }
        wakeContinuation.finish()
    }

    /// Stops syncing and waits until the engine's tasks (a pass in flight among them) have
    /// ended, then gives up the folder's lock: another engine may sync the folder at once
    /// (tasks that only wake the engine later may still hold it in memory for a moment).
    package func stopAndRelease() async {
        stop()
        for task in tasks.withLock({ $0 }) { await task.value }
        lock.release()
    }

    /// How long the first pass waits for the index to watch the folder.
    static let indexWait: Duration = .seconds(60)

    /// Whether a narrowed pass may trust the index's change feed: the engine follows it and the
    /// index watches the folder (a root indexed and watched holds it).
    nonisolated var followsChanges: Bool {
        watching.load(ordering: .relaxed) && localIndex.covers(folder)
    }

    /// Asks for a pass soon (one that fetches the zone's changes too).
    package nonisolated func wake() {
        remoteDirty.store(true, ordering: .relaxed)
        wakeContinuation.yield()
    }

    /// The number of passes completed (for tests and status).
    package nonisolated var completedPasses: Int { passes.load(ordering: .relaxed) }

    func run() async {
        let clock = ContinuousClock()
        var notBefore = clock.now
        // the first pass reads the index's rows too: it waits for the index's first scan of the
        // folder (a minute at most; then passes walk the folder themselves until the index
        // watches it), so the folder is not walked twice at start
        _ = await localIndex.waitUntilCovered(folder, timeout: Self.indexWait)
        for await _ in wakeStream {
            if Task.isCancelled { return }
            // after a failed pass, wake-ups (the index's feed, pushes) wait out the back-off: a pass that
            // fails at once (a full disk) must not run in a loop
            if clock.now < notBefore { try? await Task.sleep(until: notBefore, clock: clock) }
            if Task.isCancelled { return }
            // no settle delay: the index's deltas come from settled watcher batches, and wakes that come
            // while a pass runs are folded into one (the stream keeps the newest only)
            do {
                try await pass(pullingRemote: remoteDirty.exchange(false, ordering: .relaxed))
                health.passSucceeded(at: Date())
                passes.add(1, ordering: .relaxed)
            } catch is CancellationError {
                return
            } catch {
                health.passFailed(Self.describe(error), at: Date())
                scope.withLock { $0.full = true }  // what the failed pass took is looked at again
                remoteDirty.store(true, ordering: .relaxed)
                let delay = min(30.0, 0.5 * pow(2.0, Double(min(health.consecutiveFailures, 6))))
                notBefore = clock.now + .milliseconds(Int64(delay * 1000))
                logger.warning("sync pass failed; retrying in \(delay) s", metadata: ["ubiquity.error": "\(error)"])
                Task { [wakeContinuation] in
                    try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
                    wakeContinuation.yield()
                }
            }
        }
    }

    /// Whether the passes succeed, and the last error while they do not (for `ubiq doctor`).
    package func healthReport() -> SyncHealthReport {
        health.report(folder: folder)
    }

    /// An error as the health report shows it: a CloudKit error's reason, else its description.
    static func describe(_ error: any Error) -> String {
        (error as? CloudKitError)?.reason ?? "\(error)"
    }

    /// One pass: remote changes first, then local ones.
    package func pass() async throws {
        try await pass(pullingRemote: true)
    }

    /// One pass, the remote part only when `pullingRemote`; never interleaved with an eviction
    /// or an on-demand download.
    func pass(pullingRemote: Bool) async throws {
        try await exclusively { try await passSteps(pullingRemote: pullingRemote) }
    }

    /// Runs `body` when no pass, eviction or on-demand download runs, so they never interleave
    /// (the actor alone would let them, across their awaits).
    func exclusively<T: Sendable>(_ body: () async throws -> T) async throws -> T {
        try await turns.run(body)
    }

    func passSteps(pullingRemote: Bool) async throws {
        if !memory.subscribed { await subscribe() }
        loadConflictedItems()  // followed through renames from the first pass (SyncEngine+ConflictMoves.swift)
        // downloads renamed into place and not journaled (SyncJournal+Landings.swift): before a
        // remote delete is judged, and before the local pass could take them for new files
        try await settleLandings()
        // a remote change that cannot be applied must not hold back local changes
        var remoteFailure: (any Error)?
        if pullingRemote {
            do { try await pullRemote() } catch is CancellationError { throw CancellationError() } catch { remoteFailure = error }
        }
        try Task.checkCancellation()
        try await settleLandings()  // (the remote part may have failed between a landing and its journal write)
        try await pushLocal(pulled: pullingRemote && remoteFailure == nil)
        await adoptAppConflictVersions()  // conflict versions a Document kept (SyncEngine+AppConflictVersions.swift)
        await followConflictedItems()  // the in-conflict flag follows renames (SyncEngine+ConflictMoves.swift)
        await shareConflictVersions()  // conflict versions on every device (SyncEngine+ConflictVersions.swift)
        await noteResolvedConflicts()
        await enforceEvictionBudget()
        if let remoteFailure { throw remoteFailure }
    }

    /// Saves the zone subscription that makes the server push a notification on every change.
    func subscribe() async {
        do {
            _ = try await database.save(RecordZoneSubscription(zoneID: SyncRecord.zoneID, subscriptionID: "ubiquity-documents"))
            memory.subscribed = true
        } catch {
            logger.warning("cannot subscribe to the documents zone; relying on the periodic fetch", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    func absolute(_ relative: String) -> String { folder + "/" + relative }

    /// The state an item in `status` is recorded in: one with unresolved conflict versions
    /// stays "in conflict" when uploaded.
    func state(_ relative: String, _ status: SyncItemStatus) -> SyncItemStatus {
        status == .uploaded && isConflicted(relative) ? .inConflict : status
    }

    /// Records the sync state of items whose journal rows are not being written now (the
    /// journal keeps it, their index rows get it in the same transaction).
    func report(_ paths: [String], _ status: SyncItemStatus) {
        guard !paths.isEmpty else { return }
        do {
            if status == .uploaded {
                let inConflict = paths.filter(isConflicted)
                try journal.setStatus(.inConflict, paths: inConflict)
                try journal.setStatus(.uploaded, paths: paths.filter { !inConflict.contains($0) })
            } else {
                try journal.setStatus(status, paths: paths)
            }
        } catch {
            logger.warning("sync state not recorded", metadata: ["ubiquity.count": "\(paths.count)", "ubiquity.error": "\(error)"])
        }
        if status == .uploaded { noteUploaded(paths) }
    }

    /// ``report(_:_:)`` of one item.
    func report(_ relative: String, _ status: SyncItemStatus) {
        report([relative], status)
    }

    /// Journals `entries` in one transaction, each in its sync state (`status`, in conflict for
    /// an item with unresolved conflict versions); an upload's progress or error is cleared.
    func journalSynced(_ entries: [JournalEntry], status: SyncItemStatus = .uploaded, forgettingSent: Set<String> = [],
                       forgettingLanding landing: String? = nil) throws {
        try journal.putAll(entries, forgettingSent: forgettingSent, forgettingLanding: landing) { state($0.path, status) }
        if status == .uploaded { noteUploaded(entries.map(\.path)) }
    }

    /// Items whose conflicts were resolved (`ubiq resolve`, the API) are reported uploaded again.
    func noteResolvedConflicts() async {
        guard !memory.conflicted.isEmpty else { return }
        let folder = self.folder
        for (id, path) in memory.conflicted {
            let url = URL(fileURLWithPath: folder + "/" + path)
            let unresolved = (try? await BlockingWork.run { FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0 }) ?? 0
            if unresolved == 0 {
                memory.conflicted[id] = nil
                report(path, .uploaded)
            }
        }
    }

    static func depth(_ path: String) -> Int { path.utf8.reduce(0) { $0 + ($1 == UInt8(ascii: "/") ? 1 : 0) } }
}
