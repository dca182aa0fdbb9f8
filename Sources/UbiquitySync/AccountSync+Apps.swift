// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Ubiquity
import UbiquityCore

extension AccountSync {
    /// Starts syncing the app containers with the account's credentials (`factory`), each shown
    /// in the folder through `links` (``AppContainerSync``).
    func startApps(links: AppFolderLinks, factory: @escaping SyncEngine.ContainerFactory, account: UbiquityAccountFile.Account?) {
        let configuration = self.configuration, index = self.index, hooks = self.hooks, logger = self.logger
        let deviceName = configuration.deviceName ?? account?.deviceName
        let makeEngine: AppContainerSync.EngineFactory = { identifier, documents in
            var onEvent: SyncEngine.EventHandler?
            if let hooks {
                let folder = (try? CanonicalPath.canonicalize(documents, resolveLast: true)) ?? documents
                onEvent = { event in hooks.post(event.invocation(folder: folder, container: identifier)) }
            }
            let journal = Self.journalPath(folder: documents, containerIdentifier: identifier, paths: configuration.paths, account: account)
            var engineLogger = logger
            engineLogger[metadataKey: "ubiquity.container"] = "\(identifier)"
            return try SyncEngine(containerIdentifier: identifier, makeContainer: factory, folder: documents, index: index.host,
                                  journalName: Self.journalName(journal), legacyJournal: journal,
                                  deviceName: deviceName, pollInterval: configuration.pollInterval,
                                  massDeleteShare: configuration.massDeleteShare, massDeleteMinimum: configuration.massDeleteMinimum,
                                  logger: engineLogger, onEvent: onEvent, evictionBudget: configuration.evictionBudget)
        }
        let registry = AppContainerRegistry(database: factory(configuration.containerIdentifier).privateCloudDatabase)
        let apps = AppContainerSync(paths: configuration.paths, driveContainer: configuration.containerIdentifier, links: links,
                                    registry: registry, interval: configuration.pollInterval, logger: logger,
                                    makeEngine: makeEngine)
        // the index watches the containers folder: a container made on this disk is seen at once
        apps.start(localChanges: index.childFolderChanges(of: configuration.paths.containersDirectory.path,
                                                          infoFile: UbiquityContainers.containerInfoFileName))
        self.apps = apps
        appLinks = links
    }

    /// Stops the app containers' engines (their links stay until ``keepAside(_:)``).
    func stopApps() async {
        let apps = self.apps
        self.apps = nil
        await apps?.stop()
    }

    /// The running app engines, by container.
    package var appEngines: [String: SyncEngine] {
        get async { await apps?.running ?? [:] }
    }

    /// The journal of an app container's documents for `account`.
    func appJournalPath(_ identifier: String, documents: String, account: UbiquityAccountFile.Account) -> String {
        Self.journalPath(folder: documents, containerIdentifier: identifier, paths: configuration.paths, account: account)
    }

    /// Whether a folder holds anything but the sync lock.
    static func hasContent(_ folder: String) -> Bool {
        ((try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? []).contains { $0 != ".ubiquity-sync.lock" }
    }

    /// The account stops: removes the app links from the folder, forgets the app journals, and
    /// says which app containers hold documents to keep aside (every container on this disk,
    /// linked or not yet), with the name each had (or would have had) in the folder.
    func appsToKeepAside(_ account: UbiquityAccountFile.Account) -> [AppFolderLinks.Link] {
        guard configuration.appFolders else { return [] }
        let linked = Dictionary((appLinks?.removeAll() ?? []).map { ($0.identifier, $0) }, uniquingKeysWith: { first, _ in first })
        appLinks = nil
        var result: [AppFolderLinks.Link] = []
        var used = Set(linked.values.map(\.name))
        for identifier in AppContainerSync.localContainers(paths: configuration.paths, driveContainer: configuration.containerIdentifier).sorted() {
            let documents = AppContainerSync.documents(of: identifier, paths: configuration.paths)
            forgetJournal(appJournalPath(identifier, documents: documents, account: account))
            guard Self.hasContent(documents) else { continue }
            if let link = linked[identifier] {
                result.append(link)
                continue
            }
            var displayNames: [String: String] = [:]
            displayNames[identifier] = UbiquityContainers.displayName(ofContainerAt: AppContainerSync.container(of: identifier, paths: configuration.paths))
            let name = AppFolderLinks.names(for: [identifier], current: [:], displayNames: displayNames) { used.contains($0) }[identifier] ?? identifier
            used.insert(name)
            result.append(AppFolderLinks.Link(identifier: identifier, name: name, target: documents))
        }
        return result
    }

    /// Moves each app's documents into the previous account's kept-aside folder `aside`, as a
    /// folder of the link's name (where the user saw them), and leaves an empty `Documents/` in
    /// the container for the next account. When that move fails, the documents stay in the
    /// container as `Documents (USER on HOST)`: never synced with the next account.
    func keepAppsAside(_ links: [AppFolderLinks.Link], in aside: String, account: UbiquityAccountFile.Account) {
        for link in links {
            var destination = aside + "/" + link.name
            do {
                do {
                    guard FileStamp.of(destination) == nil else { throw UbiquityError(.alreadyExists, "'\(destination)' exists") }
                    try FileManager.default.moveItem(atPath: link.target, toPath: destination)
                } catch {
                    let host = URL(string: account.server)?.host ?? account.server
                    destination = "\(link.target) (\(account.user) on \(host)) \(UUID().uuidString.prefix(4))"
                    logger.warning("the previous account's app documents stay in their container", metadata: ["ubiquity.error": "\(error)"])
                    try FileManager.default.moveItem(atPath: link.target, toPath: destination)
                }
                Self.versionsFollow(from: link.target, to: destination)  // their versions too (AccountSync.moveAside)
                try? FileManager.default.removeItem(atPath: destination + "/.ubiquity-sync.lock")
                try FileManager.default.createDirectory(atPath: link.target, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o700])
                logger.notice("the previous account's app documents are kept aside",
                              metadata: ["ubiquity.container": "\(link.identifier)", "ubiquity.folder": "\(destination)"])
            } catch {
                logger.error("cannot keep the previous account's app documents aside",
                             metadata: ["ubiquity.container": "\(link.identifier)", "ubiquity.error": "\(error)"])
            }
        }
    }
}
