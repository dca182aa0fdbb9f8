// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityCore

/// The app containers' documents for the signed-in account: one ``SyncEngine`` per app
/// container, syncing its real `Documents/` (where apps on this machine write through
/// `FileManager.url(forUbiquityContainerIdentifier:)`) with that container's private database,
/// and a link per container at the top of the sync folder (``AppFolderLinks``).
///
/// Which containers: every one on this disk (`$UBIQUITY_HOME/containers/*`) and every one the
/// account registered from another device (``AppContainerRegistry``: a device registers the
/// containers it syncs), whose local container is made. The set is looked at again every
/// `interval`, so a container an app declares while the daemon runs is picked up. A container
/// that cannot be synced (its `Documents` unreadable, or not a folder) is reported once and
/// skipped; the others go on.
///
/// Each link is named after the container's display name: the one an app on this disk declares
/// (``UbiquityContainers/setDisplayName(_:for:)``, registered for the other devices), else the
/// one registered from another device, else the identifier's last component.
actor AppContainerSync {
    /// Makes the engine of an app container (`identifier`, its `documents` folder).
    typealias EngineFactory = @Sendable (_ identifier: String, _ documents: String) throws -> SyncEngine

    let paths: UbiquityPaths
    let driveContainer: String
    let links: AppFolderLinks
    let registry: AppContainerRegistry
    let makeEngine: EngineFactory
    let interval: Duration
    let logger: Logger
    var engines: [String: SyncEngine] = [:]
    /// The last problem reported per container (each is reported once, until it changes).
    var problems: [String: String] = [:]
    /// The containers this device registered, with the display name it registered (nil: none).
    var registered: [String: String?] = [:]
    var prepared = false
    /// Set by ``stop()``: a look in flight (suspended at a request) starts nothing afterwards.
    var stopped = false
    /// The account's containers as last listed, and when (the list is fetched every `interval`;
    /// this disk is looked at when the index says the containers folder changed, or every
    /// `localInterval` without an index).
    var remote: [String: String?] = [:]
    var listed: ContinuousClock.Instant?
    let localInterval: Duration
    /// The look loop, its timer and the relay of the folder's changes.
    nonisolated let loop = Mutex<[Task<Void, Never>]>([])

    init(paths: UbiquityPaths, driveContainer: String, links: AppFolderLinks, registry: AppContainerRegistry,
         interval: Duration, logger: Logger, makeEngine: @escaping EngineFactory) {
        self.paths = paths
        self.driveContainer = driveContainer
        self.links = links
        self.registry = registry
        self.interval = interval
        localInterval = min(interval, .seconds(5))
        self.logger = logger
        self.makeEngine = makeEngine
    }

    /// Starts looking for containers now, then on this disk whenever `localChanges` (the index's
    /// word that a folder in the containers folder came or went) has an element, and on the
    /// server every `interval`; without `localChanges`, on this disk every 5 s (or `interval`
    /// when shorter).
    nonisolated func start(localChanges: AsyncStream<Void>? = nil) {
        let (wakes, wake) = AsyncStream.makeStream(of: Void.self, bufferingPolicy: .bufferingNewest(1))
        let period = localChanges == nil ? localInterval : interval
        let timer = Task {
            while !Task.isCancelled {
                wake.yield()
                try? await Task.sleep(for: period)
            }
            wake.finish()
        }
        var tasks = [timer]
        if let localChanges { tasks.append(Task { for await _ in localChanges { wake.yield() } }) }
        tasks.append(Task { [self] in
            for await _ in wakes {
                if Task.isCancelled { return }
                await refresh()
            }
        })
        loop.withLock { $0 = tasks }
    }

    /// Stops every app engine and waits until their folders' locks are free. The links stay
    /// (the same account may carry on); ``AppFolderLinks/removeAll()`` takes them away.
    func stop() async {
        stopped = true
        for task in loop.withLock({ tasks in defer { tasks = [] }; return tasks }) { task.cancel() }
        let stopped = engines.values.map(\.folder)
        for engine in engines.values { engine.stop() }
        engines = [:]
        for folder in stopped { await AccountSync.waitForLock(folder + "/.ubiquity-sync.lock") }
    }

    /// The running engines, by container (for tests and status).
    var running: [String: SyncEngine] { engines }

    /// The containers on this disk (valid identifiers; the drive container left out).
    func localContainers() -> Set<String> { Self.localContainers(paths: paths, driveContainer: driveContainer) }

    /// The containers in `paths`' containers folder (valid identifiers; `driveContainer` left out).
    static func localContainers(paths: UbiquityPaths, driveContainer: String) -> Set<String> {
        let names = (try? FileManager.default.contentsOfDirectory(atPath: paths.containersDirectory.path)) ?? []
        return Set(names.map { $0.replacingOccurrences(of: "~", with: ".") }
            .filter { $0 != driveContainer && (try? ContainerIdentifier($0)) != nil })
    }

    /// The `Documents/` folder of a container.
    func documents(of identifier: String) -> String { Self.documents(of: identifier, paths: paths) }

    /// The `Documents/` folder of a container in `paths`.
    static func documents(of identifier: String, paths: UbiquityPaths) -> String {
        let directory = (try? ContainerIdentifier(identifier).directoryName) ?? identifier
        return paths.containersDirectory.appendingPathComponent(directory).appendingPathComponent(UbiquityContainers.documentsDirectoryName).path
    }

    /// One look: registers this disk's containers, makes the ones registered elsewhere, starts
    /// an engine for each new one, stops those whose container is gone, and places the links.
    func refresh() async {
        var identifiers = localContainers()
        let clock = ContinuousClock()
        if listed.map({ clock.now - $0 >= interval }) ?? true {
            remote = await registeredContainers()
            listed = clock.now
        }
        let remote = self.remote
        for identifier in Set(remote.keys).subtracting(identifiers) where identifier != driveContainer {
            do {
                try FileManager.default.createDirectory(atPath: documents(of: identifier), withIntermediateDirectories: true,
                                                        attributes: [.posixPermissions: 0o700])
                identifiers.insert(identifier)
                logger.notice("an app container of the account is made on this device", metadata: ["ubiquity.container": "\(identifier)"])
            } catch {
                report(identifier, "cannot make the app container of the account", error)
            }
        }
        var declared: [String: String] = [:]
        for identifier in identifiers {
            declared[identifier] = UbiquityContainers.displayName(ofContainerAt: container(of: identifier))
        }
        for identifier in identifiers.sorted() {
            let name = declared[identifier]
            // registered already (here or elsewhere) with this name, or this device declares none
            if let known = registered[identifier] ?? remote[identifier], name == nil || known == name { continue }
            do {
                try await registry.register(identifier, displayName: name)
                registered[identifier] = .some(name)
                if let name { self.remote[identifier] = .some(name) }
            } catch {
                logger.debug("cannot register the app container yet", metadata: ["ubiquity.container": "\(identifier)", "ubiquity.error": "\(error)"])
            }
        }
        for (identifier, name) in remote where registered[identifier] == nil { registered[identifier] = .some(name) }
        // from here on nothing suspends, so a stop either came before (and nothing starts) or
        // comes after (and stops what started)
        guard !stopped else { return }
        for (identifier, engine) in engines where !identifiers.contains(identifier) {
            engine.stop()
            engines[identifier] = nil
        }
        for identifier in identifiers.sorted() where engines[identifier] == nil {
            do {
                let engine = try makeEngine(identifier, documents(of: identifier))
                engine.start()
                engines[identifier] = engine
                problems[identifier] = nil
                logger.info("syncing an app container", metadata: ["ubiquity.container": "\(identifier)", "ubiquity.folder": "\(engine.folder)"])
            } catch {
                report(identifier, "an app container cannot be synced; it is skipped", error)
            }
        }
        var targets: [String: String] = [:]
        var names: [String: String] = [:]
        for (identifier, engine) in engines {
            targets[identifier] = engine.folder
            names[identifier] = declared[identifier] ?? self.remote[identifier] ?? nil
        }
        links.place(targets, displayNames: names)
    }

    /// A container's directory (holding `Documents/` and its declarations).
    func container(of identifier: String) -> URL { Self.container(of: identifier, paths: paths) }

    /// A container's directory in `paths`.
    static func container(of identifier: String, paths: UbiquityPaths) -> URL {
        URL(fileURLWithPath: documents(of: identifier, paths: paths)).deletingLastPathComponent()
    }

    /// The containers registered for the account, with their display names (none when the
    /// server cannot say now).
    func registeredContainers() async -> [String: String?] {
        do {
            if !prepared {
                try await registry.prepare()
                prepared = true
            }
            return try await registry.containers()
        } catch {
            logger.debug("cannot list the account's app containers now", metadata: ["ubiquity.error": "\(error)"])
            return [:]
        }
    }

    /// Logs a container's problem once (again only when it changes).
    func report(_ identifier: String, _ message: String, _ error: any Error) {
        let text = "\(error)"
        guard problems[identifier] != text else { return }
        problems[identifier] = text
        logger.error("\(message)", metadata: ["ubiquity.container": "\(identifier)", "ubiquity.folder": "\(documents(of: identifier))",
                                              "ubiquity.error": "\(text)"])
    }
}
