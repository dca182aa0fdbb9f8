// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Glibc
import Logging
import Ubiquity
import UbiquityCore
import UbiquityIndex
import UbiquityStore
import UbiquityCloudKit

/// What the daemon syncs for the signed-in account: the folder (``SyncEngine`` with the drive
/// container's private database), each app container's documents (an engine per container,
/// shown in the folder as a subfolder: ``AppFolderLinks``) and the key-value stores
/// (``KeyValueSync``), all through the
/// account's device token (`ubiq account login`) — or through explicit credentials given on the
/// command line, for a headless daemon without an account file.
///
/// With the account file it follows the account: when the user signs out or switches accounts,
/// the sync stops, the folder's content (the apps' documents as its subfolders) is kept aside
/// as `FOLDER (USER on HOST)` (never mixed
/// with the next account's, never deleted on the server), the key-value stores are emptied
/// with the account-change reason, the `account-changed` hook runs, and the sync starts again
/// for the new account, if any, into an empty folder.
package actor AccountSync {
    /// Credentials given explicitly (`ubiq daemon --server … --api-token …`).
    package struct ExplicitCredentials: Sendable {
        /// The server.
        package var serverURL: URL
        /// How requests authenticate.
        package var credentials: CloudContainer.Credentials
        /// Credentials for a server.
        package init(serverURL: URL, credentials: CloudContainer.Credentials) {
            self.serverURL = serverURL
            self.credentials = credentials
        }
    }

    /// What to sync and where.
    package struct Configuration: Sendable {
        /// The synced folder.
        package var folder: String
        /// Where state lives (journals, key-value files) and the account file.
        package var paths: UbiquityPaths
        /// The container whose private database holds the folder.
        package var containerIdentifier: String
        /// The containers whose key-value stores are synced.
        package var keyValueContainers: [String]
        /// This device's name (default: the account's; the CLI passes `--device-name` or
        /// `UBIQUITY_DEVICE_NAME` here, nothing reads the environment below it).
        package var deviceName: String?
        /// The journal file of an earlier version to bring into the device database (its name
        /// names the journal); default: the one that version kept for the folder, container and
        /// account under `paths.stateDirectory` (`sync/NAME.sqlite`), if any.
        package var journalPath: String?
        /// Fetches of remote changes when no push arrives.
        package var pollInterval: Duration
        /// Credentials that replace the account file's.
        package var explicit: ExplicitCredentials?
        /// The most downloaded content kept before least recently used files are evicted (bytes).
        package var evictionBudget: Int64?
        /// The share of the synced items one pass may delete without confirmation (see
        /// ``SyncEngine/massDeleteShare``).
        package var massDeleteShare: Double = 0.5
        /// The number of deletes a pass may always send (``SyncEngine/massDeleteMinimum``).
        package var massDeleteMinimum: Int = 50
        /// Whether the app containers' documents are synced too, each shown as a subfolder of
        /// the folder (``AppContainerSync``, ``AppFolderLinks``).
        package var appFolders: Bool = true

        /// A configuration.
        package init(folder: String, paths: UbiquityPaths = UbiquityPaths(), containerIdentifier: String = SyncRecord.defaultContainer,
                    keyValueContainers: [String]? = nil, deviceName: String? = nil, journalPath: String? = nil,
                    pollInterval: Duration = .seconds(30), explicit: ExplicitCredentials? = nil) {
            self.folder = folder
            self.paths = paths
            self.containerIdentifier = containerIdentifier
            self.keyValueContainers = keyValueContainers ?? [containerIdentifier]
            self.deviceName = deviceName
            self.journalPath = journalPath
            self.pollInterval = pollInterval
            self.explicit = explicit
        }
    }

    /// The configuration.
    package let configuration: Configuration
    let hooks: HookRunner?
    /// The daemon's index: its database is the device's one database, which holds the journals.
    let index: IndexService
    let logger: Logger
    var engine: SyncEngine?
    var keyValueSyncs: [KeyValueSync] = []
    var active: UbiquityAccountFile.Account?
    var follower: Task<Void, Never>?
    /// Follows rebuilds of the device database (``databaseRebuilt()``).
    var rebuildFollower: Task<Void, Never>?
    var monitor: UbiquityIdentityMonitor?
    /// The app containers' sync and their links in the folder (AccountSync+Apps.swift).
    var apps: AppContainerSync?
    var appLinks: AppFolderLinks?

    /// A sync for `configuration`; `hooks` hears of account changes and sync events; `index`
    /// (the daemon's) indexes the synced folder, and its database holds the journals, whose
    /// sync states reach the index's rows in the same transactions.
    package init(configuration: Configuration, hooks: HookRunner? = nil, index: IndexService, logger: Logger) {
        self.configuration = configuration
        self.hooks = hooks
        self.index = index
        self.logger = logger
    }

    /// The running folder sync, if any.
    package var currentEngine: SyncEngine? { engine }

    /// The folder sync's health (nil when nothing is synced).
    package func healthReport() async -> SyncHealthReport? {
        await engine?.healthReport()
    }

    /// Confirms the local deletes the folder's engine paused (``SyncEngine/confirmDeletes()``)
    /// and says what happened, for `ubiq sync confirm-deletes`.
    package func confirmDeletes() async throws -> String {
        guard let engine else { throw UbiquityError(.unsupported, "nothing is synced: sign in with `ubiq account login`") }
        guard let paused = try await engine.pausedDeletes() else { return "no deletes wait for a confirmation in \(engine.folder)" }
        try await engine.confirmDeletes()
        return "confirmed: \(paused.count) of \(paused.total) items are deleted from the server (\(engine.folder))"
    }

    /// The server synced with and for whom, for the daemon's log line.
    package var serverDescription: String { serverText }
    var serverText = ""

    /// Starts syncing for the signed-in account (or the explicit credentials) and, with the
    /// account file, follows account changes.
    /// - Throws: what starting the folder sync throws for the first account (another daemon
    ///   on the folder, an unreadable journal); later account changes only log.
    package func start() async throws {
        let rebuilds = index.rebuilds()
        rebuildFollower = Task { [weak self] in
            for await _ in rebuilds { await self?.databaseRebuilt() }
        }
        if let explicit = configuration.explicit {
            try startSyncing(serverURL: explicit.serverURL, credentials: explicit.credentials, account: nil)
            return
        }
        let monitor = UbiquityIdentityMonitor(paths: configuration.paths)
        self.monitor = monitor
        let changes = monitor.accountFileRewrites()
        if let account = try? UbiquityAccountFile(paths: configuration.paths).read() {
            try startSyncing(for: account)
        } else {
            logger.notice("not signed in: nothing is synced until `ubiq account login`")
        }
        follower = Task { [weak self] in
            for await _ in changes {
                await self?.accountChanged()
            }
        }
    }

    /// Stops everything (the folder's lock is released once the engine's pass in flight ends).
    package func stop() async {
        follower?.cancel()
        follower = nil
        rebuildFollower?.cancel()
        rebuildFollower = nil
        await stopSyncing()
    }

    func startSyncing(for account: UbiquityAccountFile.Account) throws {
        guard let token = account.deviceToken, let url = URL(string: account.server) else {
            logger.warning("the account file has no device token: sign in again with `ubiq account login`")
            return
        }
        try startSyncing(serverURL: url, credentials: .device(token: token), account: account)
    }

    func startSyncing(serverURL: URL, credentials: CloudContainer.Credentials, account: UbiquityAccountFile.Account?) throws {
        let logger = self.logger
        let deviceName = configuration.deviceName ?? account?.deviceName
        let factory: SyncEngine.ContainerFactory = { identifier in
            CloudContainer(identifier: identifier, serverURL: serverURL, credentials: credentials, logger: logger, deviceName: deviceName)
        }
        let journal = configuration.journalPath ?? Self.journalPath(configuration, account: account)
        var onEvent: SyncEngine.EventHandler?
        if let hooks {
            let folder = (try? CanonicalPath.canonicalize(configuration.folder, resolveLast: true)) ?? configuration.folder
            let container = configuration.containerIdentifier
            onEvent = { event in hooks.post(event.invocation(folder: folder, container: container)) }
        }
        let links = configuration.appFolders ? try AppFolderLinks(folder: configuration.folder, containersDirectory: configuration.paths.containersDirectory.path, logger: logger) : nil
        let engine = try SyncEngine(containerIdentifier: configuration.containerIdentifier, makeContainer: factory, folder: configuration.folder,
                                    index: index.host, journalName: Self.journalName(journal), legacyJournal: journal,
                                    deviceName: deviceName,
                                    pollInterval: configuration.pollInterval, massDeleteShare: configuration.massDeleteShare,
                                    massDeleteMinimum: configuration.massDeleteMinimum, logger: logger,
                                    onEvent: onEvent,
                                    evictionBudget: configuration.evictionBudget, appLinks: links)
        var syncs: [KeyValueSync] = []
        for identifier in configuration.keyValueContainers {
            do {
                syncs.append(try KeyValueSync(container: factory(identifier), paths: configuration.paths, logger: logger))
            } catch {
                logger.error("the key-value store cannot be synced", metadata: ["ubiquity.container": "\(identifier)", "ubiquity.error": "\(error)"])
            }
        }
        engine.start()
        for sync in syncs { sync.start() }
        let folder = engine.folder, index = self.index
        Task { await index.indexSyncedFolder(folder) }
        self.engine = engine
        if let links { startApps(links: links, factory: factory, account: account) }
        keyValueSyncs = syncs
        active = account
        serverText = serverURL.absoluteString + (account.map { " as \($0.user)" } ?? "")
        logger.notice("syncing", metadata: ["ubiquity.folder": "\(engine.folder)", "ubiquity.server": "\(serverURL.absoluteString)",
                                            "ubiquity.user": "\(account?.user ?? "(explicit credentials)")"])
    }

    func stopSyncing() async {
        // No reference to the engine is kept while waiting: its lock goes with its last reference.
        let folder = engine?.folder
        engine?.stop()
        engine = nil
        await stopApps()
        for sync in keyValueSyncs { await sync.stop() }
        keyValueSyncs = []
        if let folder { await Self.waitForLock(folder + "/.ubiquity-sync.lock") }
    }

    /// The device database was rebuilt (its file was deleted, replaced or damaged while the
    /// daemon ran): the journals went with it, so the sync starts again on the new one, which
    /// matches the folder with the server by path and content (nothing is deleted; identical
    /// content is adopted, different content kept as a conflict version).
    func databaseRebuilt() async {
        guard engine != nil else { return }
        logger.warning("the device database was rebuilt: the sync starts again, matching the folder with the server")
        let account = active
        await stopSyncing()
        do {
            if let explicit = configuration.explicit {
                try startSyncing(serverURL: explicit.serverURL, credentials: explicit.credentials, account: nil)
            } else if let account {
                try startSyncing(for: account)
            }
        } catch {
            logger.error("cannot restart the sync on the rebuilt database", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    /// The account file was rewritten: nothing to do when it names the same account with the
    /// same token; a new token for the same account restarts the sync with it; another account
    /// (or none) stops, keeps the old account's data aside and starts for the new one.
    func accountChanged() async {
        let next = try? UbiquityAccountFile(paths: configuration.paths).read()
        if next?.server == active?.server, next?.user == active?.user, next?.deviceToken == active?.deviceToken {
            return
        }
        if let next, let active, next.server == active.server, next.user == active.user {
            // The same account signed in again (a new device token): carry on with it.
            await stopSyncing()
            do { try startSyncing(for: next) } catch { logger.error("cannot restart the sync", metadata: ["ubiquity.error": "\(error)"]) }
            return
        }
        let previous = active
        await stopSyncing()
        if let previous {
            keepAside(previous)
            resetKeyValueStores()
        }
        hooks?.post(HookInvocation(.accountChanged, facts: ["user": next?.user ?? "", "server": next?.server ?? "",
                                                             "previousUser": previous?.user ?? "", "previousServer": previous?.server ?? ""]))
        active = nil
        guard let next else {
            logger.notice("signed out: the sync stopped")
            return
        }
        do {
            try startSyncing(for: next)
        } catch {
            logger.error("cannot start the sync for the new account", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    /// Moves the folder's content aside as `FOLDER (USER on HOST)` and forgets its journal, so
    /// the next account starts from an empty folder and nothing of the old one is uploaded to
    /// it or deleted from the old account's server copy.
    func keepAside(_ account: UbiquityAccountFile.Account) {
        let folder = (try? CanonicalPath.canonicalize(configuration.folder, resolveLast: true)) ?? configuration.folder
        forgetJournal(configuration.journalPath ?? Self.journalPath(configuration, account: account))
        let apps = appsToKeepAside(account)
        let names = ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).filter { $0 != ".ubiquity-sync.lock" }
        guard !names.isEmpty || !apps.isEmpty else { return }
        let target = Self.asideFolder(for: folder, user: account.user, host: URL(string: account.server)?.host ?? account.server)
        do {
            try Self.moveAside(folder, to: target)
            keepAppsAside(apps, in: target, account: account)
            logger.notice("the previous account's documents are kept aside", metadata: ["ubiquity.folder": "\(target)"])
        } catch {
            logger.error("cannot keep the previous account's documents aside", metadata: ["ubiquity.error": "\(error)"])
            keepAppsAside(apps, in: target, account: account)  // the move into TARGET fails: they stay in their containers
        }
    }

    /// Where the content of `folder` is kept aside for `user` of the server on `host`:
    /// `FOLDER (USER on HOST)`, numbered from 2 when that is taken.
    package static func asideFolder(for folder: String, user: String, host: String) -> String {
        let base = "\(folder) (\(user) on \(host))"
        var target = base
        var number = 2
        while FileManager.default.fileExists(atPath: target) {
            target = "\(base) \(number)"
            number += 1
        }
        return target
    }

    /// Moves `folder` (its engine stopped) to `target` and makes it again, empty; the lock
    /// file does not go along. The versions of the items in it go along too: an item an editor
    /// saved by renaming a new file over it has lost its identity attribute, and only the
    /// version store's path index leads to its versions (sync simulator seed 186: a conflict
    /// version kept on this device only was out of reach in the kept-aside folder; seed 309: and
    /// it stayed tied to a path of the new account's folder).
    package static func moveAside(_ folder: String, to target: String) throws {
        try FileManager.default.moveItem(atPath: folder, toPath: target)
        versionsFollow(from: folder, to: target)
        try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
        try? FileManager.default.removeItem(atPath: target + "/.ubiquity-sync.lock")
    }

    /// The version store's path index follows a folder moved aside from `from` to `to` (the
    /// same versions, found at the new paths; none left for what is made at the old ones).
    static func versionsFollow(from: String, to: String) {
        guard let old = try? CanonicalPath.canonicalize(from), let new = try? CanonicalPath.canonicalize(to, resolveLast: true) else { return }
        FileVersion.itemDidMove(from: old, to: new)
        keepConflictVersionsLeft(under: new)
    }

    /// The unresolved conflict versions of items no longer at their paths in a folder kept
    /// aside (a file renamed, then saved by an editor that drops its identity attribute, with
    /// no pass before the switch: to the old account's sync, a deleted file and a new one, whose
    /// versions its next pass would have kept as conflicted copies) are put beside those paths
    /// as conflicted copies: the kept-aside folder is the old account's documents, and nothing
    /// would lead to them any more (sync simulator seed 1086).
    static func keepConflictVersionsLeft(under folder: String) {
        for (path, versions) in FileVersion.unresolvedConflictVersionsLeft(under: folder) {
            for version in versions {
                let device = version.localizedNameOfSavingComputer ?? "unknown"
                let copy = SyncEngine.conflictName(path, device: device, suffix: String(version.persistentIdentifier.suffix(4)))
                try? SyncFiles.makeParents(of: copy)
                _ = try? version.replaceItem(at: URL(fileURLWithPath: copy), options: .byMoving)
            }
        }
    }

    /// Empties the key-value stores (their values belonged to the previous account).
    func resetKeyValueStores() {
        for identifier in configuration.keyValueContainers {
            guard let container = try? ContainerIdentifier(identifier) else { continue }
            let path = configuration.paths.keyValueStoreFile(for: container).path
            guard FileManager.default.fileExists(atPath: path) else { continue }
            do {
                try KeyValueDatabase(path: path, logger: logger).resetForAccountChange(writer: "daemon-\(getpid())")
            } catch {
                logger.error("cannot reset the key-value store for the new account", metadata: ["ubiquity.error": "\(error)"])
            }
        }
    }

    /// The journal for `folder` of `account`: one per folder, container and account, so the
    /// journal of one account is never applied to another's data.
    static func journalPath(_ configuration: Configuration, account: UbiquityAccountFile.Account?) -> String {
        journalPath(folder: configuration.folder, containerIdentifier: configuration.containerIdentifier, paths: configuration.paths, account: account)
    }

    /// The journal of `folder` synced with `containerIdentifier` for `account` (the default
    /// place without one).
    static func journalPath(folder: String, containerIdentifier: String, paths: UbiquityPaths, account: UbiquityAccountFile.Account?) -> String {
        guard let account else {
            let name = SyncEngine.defaultJournalName(folder: folder, containerIdentifier: containerIdentifier)
            return paths.stateDirectory.appendingPathComponent("sync/\(name).sqlite").path
        }
        let canonical = (try? CanonicalPath.canonicalize(folder, resolveLast: true)) ?? folder
        let digest = SHA256.hexHash("\(canonical)\n\(account.server)\n\(account.user)".utf8).prefix(16)
        return paths.stateDirectory.appendingPathComponent("sync/\(containerIdentifier)-\(digest).sqlite").path
    }

    /// The name of the journal whose earlier file is `path` (`sync/NAME.sqlite`).
    static func journalName(_ path: String) -> String {
        let name = (path as NSString).lastPathComponent
        return name.hasSuffix(".sqlite") ? String(name.dropLast(".sqlite".count)) : name
    }

    /// Deletes the journal whose earlier file is `path`: its rows, its staging folder, and that
    /// file if it was never brought in.
    func forgetJournal(_ path: String) {
        let name = Self.journalName(path), database = index.host.index
        do { try database.forgetJournal(name: name) } catch {
            logger.error("cannot forget the previous account's journal", metadata: ["ubiquity.journal": "\(name)", "ubiquity.error": "\(error)"])
        }
        for suffix in ["", "-wal", "-shm"] { try? FileManager.default.removeItem(atPath: path + suffix) }
        try? FileManager.default.removeItem(atPath: SyncEngine.stagingFolder(database: database, journalName: name))
    }

    /// Waits (at most 30 s) until nobody holds the folder's lock: the stopped engine's pass ended.
    static func waitForLock(_ path: String) async {
        for _ in 0..<300 {
            let fd = open(path, O_RDWR | O_CLOEXEC)
            if fd < 0 { return }
            let free = flock(fd, LOCK_EX | LOCK_NB) == 0
            close(fd)
            if free { return }
            try? await Task.sleep(for: .milliseconds(100))
        }
    }
}
