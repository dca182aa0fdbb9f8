// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquityIndex
import UbiquitySync
import UbiquityCloudKit

/// `ubiq daemon`: the per-user daemon: the coordination service, the metadata index of the
/// containers with live queries on its control socket, and, given a server, the sync of a folder
/// with the private database of a container (`docs/sync.md`).
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "daemon",
        abstract: "Run the per-user daemon (file coordination, the metadata index, live queries, and sync for the signed-in account).",
        discussion: """
            Hosts the coordination service on a Unix socket (default \
            $XDG_RUNTIME_DIR/ubiquity/coordination.sock, or $UBIQUITY_COORDINATION_SOCKET) and the \
            metadata index of every container ($UBIQUITY_HOME/containers, watched with inotify, \
            stored in --index, default $XDG_STATE_HOME/ubiquity/index.sqlite or \
            $UBIQUITY_INDEX_DATABASE) with metadata queries on the control socket (default \
            $XDG_RUNTIME_DIR/ubiquity/control.sock, or $UBIQUITY_CONTROL_SOCKET), until SIGTERM or \
            SIGINT. Prints 'control service listening on PATH' and then 'coordination service \
            listening on PATH' when ready.

            For the signed-in account (`ubiq account login`) it also syncs --folder (default \
            ~/Ubiquity, or $UBIQUITY_FOLDER) with the container's private database on the \
            account's server (items are records of the reserved zone _ubiquityDocuments, contents \
            are assets) and the key-value stores, printing 'syncing FOLDER with SERVER' before the \
            ready line; it follows sign-outs and account switches (the old account's documents are \
            kept aside as 'FOLDER (USER on HOST)'). --server with --api-token/--web-auth-token (or \
            $UBIQUITY_SERVER, $UBIQUITY_API_TOKEN, $UBIQUITY_WEB_AUTH_TOKEN) syncs with those \
            credentials instead. The sync journals live in the index file, the device's one \
            database, with each item's sync state beside its index row (a journal file of an \
            earlier version, $XDG_STATE_HOME/ubiquity/sync/CONTAINER-HASH.sqlite or --journal, \
            is brought in once and kept as ….imported). A second daemon on the same \
            folder is refused. --local-server runs a records server inside the daemon (SQLite in \
            $XDG_DATA_HOME/ubiquity/server, 127.0.0.1 only, port 8080 or a free one) and, when no \
            account is signed in, creates one (--local-user, default $USER) and signs this device \
            in: the first run (`scripts/run`); it prints 'local server listening on URL' first and \
            what to do next after the ready line. --install-service writes a systemd user unit \
            running `ubiq daemon` with the other flags given, enables and starts it. Hooks in $XDG_CONFIG_HOME/ubiquity/hooks run on sync events \
            (`ubiq hooks list`). With --evict-budget SIZE, the least recently used uploaded files \
            are evicted (kept as placeholders, `ubiq download` brings them back) while the downloaded \
            content exceeds SIZE. With --mount, the folder is served through FUSE, mounted over itself \
            (fuse3): evicted files are listed under their names with their sizes and downloaded when \
            a program opens them; a stale mount left by a killed daemon is cleared first. Every root is rescanned every --rescan-interval seconds; \
            a deleted or corrupt index file is rebuilt from a full scan (and `ubiq index status` \
            says so). Each app container's documents (every container in $UBIQUITY_HOME/containers, and \
            those the account has from other devices) are synced with that container's private \
            database and shown as a subfolder of the sync folder: a link FOLDER/NAME to the \
            container's Documents, NAME the identifier's last part (or 'Notes (com.example.Notes)' \
            when the name is taken); --no-app-folders (or UBIQUITY_APP_FOLDERS=0) turns that off.

            Examples:
              ubiq daemon
              XDG_RUNTIME_DIR=/tmp/dev-a ubiq daemon --log-level debug
              ubiq account login --server http://127.0.0.1:8080 --user mei && ubiq daemon
              ubiq daemon --server http://127.0.0.1:8080 --api-token T --web-auth-token W --folder ~/Ubiquity
              ubiq daemon --local-server                      # first run: a server here, a local account, ~/Ubiquity
              ubiq daemon --local-server --install-service    # the same as a systemd user unit, started at login
              ubiq daemon --evict-budget 10G
              ubiq daemon --mount --evict-budget 10G         # evicted files download when opened
            """
    )

    @Option(help: "The coordination socket (overrides $UBIQUITY_COORDINATION_SOCKET and $XDG_RUNTIME_DIR).")
    var socket: String?

    @Option(help: "The control socket for queries and the CLI (overrides $UBIQUITY_CONTROL_SOCKET).")
    var controlSocket: String?

    @Option(help: "The index file (overrides $UBIQUITY_INDEX_DATABASE; default $XDG_STATE_HOME/ubiquity/index.sqlite).")
    var index: String?

    @Option(help: "Seconds between full rescans of every indexed folder (the correctness backstop).")
    var rescanInterval: Double = 3600

    @Option(help: "Write the socket path to this file once ready.")
    var readyFile: String?

    @Option(help: "The folder to sync (overrides $UBIQUITY_FOLDER; default ~/Ubiquity). Synced only with --server.")
    var folder: String?

    @Option(help: "The records server to sync with (overrides $UBIQUITY_SERVER); without it nothing is synced.")
    var server: String?

    @Option(help: "The container's API token (overrides $UBIQUITY_API_TOKEN).")
    var apiToken: String?

    @Option(help: "The user's web-auth token (overrides $UBIQUITY_WEB_AUTH_TOKEN).")
    var webAuthToken: String?

    @Option(help: "The container synced (default \(SyncRecord.defaultContainer)).")
    var container: String = SyncRecord.defaultContainer

    @Option(help: "This device's name, recorded with the conflict versions it keeps (overrides $UBIQUITY_DEVICE_NAME).")
    var deviceName: String?

    @Option(help: "A sync journal file of an earlier version to bring into the index file, naming the journal (default $XDG_STATE_HOME/ubiquity/sync/CONTAINER-HASH.sqlite, if there is one).")
    var journal: String?

    @Option(help: "Seconds between fetches of remote changes when no push arrives (the backstop).")
    var syncPollInterval: Double = 30

    @OptionGroup var local: LocalServerOptions

    @OptionGroup var service: ServiceInstallOptions

    @Flag(help: "With --install-service or --uninstall-service: print the result as JSON.")
    var json = false
    @Option(help: ArgumentHelp("Keep at most this much downloaded content: the least recently used uploaded files are evicted beyond it (e.g. 10G, 500M).",
                               valueName: "size"))
    var evictBudget: String?

    @Option(help: "The share of the synced items (0 to 1) one pass may delete without confirmation; more pauses the deletes until `ubiq sync confirm-deletes`.")
    var massDeleteShare: Double = 0.5

    @Option(help: "The number of deletes a pass always may send, whatever their share.")
    var massDeleteMinimum: Int = 50

    @Flag(inversion: .prefixedNo,
          help: "Sync the app containers' documents too, each shown as a subfolder (a link) of the sync folder (overrides $UBIQUITY_APP_FOLDERS=0|1).")
    var appFolders: Bool?

    @Flag(help: "Serve the folder through FUSE (libfuse3, fusermount3): evicted files keep their names and sizes, and their content arrives when a program opens them (docs/folder.md).")
    var mount = false

    @Option(help: "With --mount: the seconds an open of an evicted file waits for its content before failing with EIO (offline, say).")
    var mountFetchTimeout: Double = 60

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        if service.requested {
            do { try SystemdUnit.daemon.perform(service, subcommand: "daemon", json: json) } catch { throw CLI.report(error, command: "daemon") }
            return
        }
        CLI.bootstrapLogging(level: logging.level)
        let logger = Logger(label: "ubiq.daemon")
        // caught from here: a SIGTERM during start-up stops the daemon once it is up, cleanly
        let termination = TerminationSignals()
        var embedded: LocalServer?
        if local.localServer {
            do { embedded = try await LocalServer.start(local, paths: UbiquityPaths(), logger: logger) } catch { throw CLI.report(error, command: "daemon") }
            CLI.printLine("local server listening on \(embedded?.url ?? "")")
        }
        let coordinationService: CoordinationService
        let indexService: IndexService
        let path: String
        let sync: AccountSync
        let hooks = HookRunner(logger: logger)
        var mounted: FolderMount?
        do {
            guard rescanInterval > 0, rescanInterval.isFinite else {
                throw UbiquityError(.invalidArgument, "--rescan-interval \(rescanInterval): expected a number of seconds > 0")
            }
            let paths = UbiquityPaths()
            let environment = ProcessInfo.processInfo.environment
            let database = try index.map(CLI.absolutePath) ?? environment["UBIQUITY_INDEX_DATABASE"].flatMap { $0.hasPrefix("/") ? $0 : nil }
                ?? paths.stateDirectory.appendingPathComponent("index.sqlite").path
            try UbiquityPaths.ensureDirectory(paths.containersDirectory)
            // the daemon's own state and configuration (journals, index, account): 0700 whatever
            // the umask (issue 24, finding 8)
            try PrivateFolder.ensure(paths.stateDirectory.path)
            try PrivateFolder.ensure(paths.configDirectory.path)
            let configuration = try syncConfiguration(environment: environment, paths: paths)
            indexService = try IndexService(
                databasePath: database,
                controlSocket: try controlSocket.map(CLI.absolutePath) ?? ControlWire.socketPath(),
                permanentRoots: [paths.containersDirectory.path],
                logger: logger
            )
            // the synced folder is indexed too (once sync starts), with sync's ubiquitous attributes
            sync = AccountSync(configuration: configuration, hooks: hooks, index: indexService, logger: logger)
            // `ubiq evict`, `ubiq download`, the library's evict and download go to the folder sync
            indexService.setSyncRequests { [sync] request, send in try await sync.handle(request, send: send) }
            // `ubiq doctor` hears whether the sync's passes keep failing, and why
            indexService.setSyncHealth { [sync] in await sync.healthReport() }
            path = try socket.map(CLI.absolutePath) ?? CoordinationConfiguration().socketPath
            // this process coordinates in-process, with the engine the socket serves to every
            // other process: the sync's own writes never go through its own socket
            var coordination = CoordinationConfiguration()
            coordination.socketPath = path
            coordination.usesDaemon = false
            FileCoordinator.configure(coordination)
            coordinationService = try CoordinationService(socketPath: path, logger: logger)
            // a conflict resolved by any process (`ubiq resolve`, an app) reaches the other devices at once
            coordinationService.observeSettledVersions { [sync] path in Task { await sync.currentEngine?.versionSettled(at: path) } }
            if mount {
                guard mountFetchTimeout > 0, mountFetchTimeout.isFinite else {
                    throw UbiquityError(.invalidArgument, "--mount-fetch-timeout \(mountFetchTimeout): expected a number of seconds > 0")
                }
                // before sync and the index look at the folder: they see it through the mount
                mounted = try FolderMount.mount(folder: configuration.folder, sync: sync,
                                                fetchTimeout: .milliseconds(Int64(mountFetchTimeout * 1000)), logger: logger)
            }
        } catch {
            mounted?.unmount()
            await embedded?.stop()
            throw CLI.report(error, command: "daemon")
        }
        indexService.start(rescanInterval: .milliseconds(Int64(rescanInterval * 1000)))
        CLI.printLine("control service listening on \(indexService.controlSocket)")
        coordinationService.start()
        do {
            try await sync.start()
        } catch {
            coordinationService.stop()
            indexService.stop()
            mounted?.unmount()
            await embedded?.stop()
            throw CLI.report(error, command: "daemon")
        }
        if let engine = await sync.currentEngine {
            CLI.printLine("syncing \(engine.folder) with \(await sync.serverDescription)")
        }
        if let mounted { CLI.printLine("serving \(mounted.fileSystem.folder) through FUSE") }
        if let readyFile, let file = try? CLI.absolutePath(readyFile) { try? Data(path.utf8).write(to: URL(fileURLWithPath: file)) }
        CLI.printLine("coordination service listening on \(path)")
        logger.notice("daemon ready", metadata: ["ubiquity.socket": "\(path)"])
        if let embedded, let engine = await sync.currentEngine {
            CLI.printLine(embedded.nextSteps(folder: engine.folder, account: (try? UbiquityAccountFile().read())?.user))
        }
        await termination.wait {
            coordinationService.stop()
            indexService.stop()
        }
        await sync.stop()
        mounted?.unmount()
        await hooks.stop()
        await embedded?.stop()
        logger.notice("daemon stopped")
    }

    /// `UBIQUITY_APP_FOLDERS`: unset or empty means yes; `1`/`yes`/`true`, `0`/`no`/`false`.
    static func appFoldersSetting(_ value: String?) throws -> Bool {
        guard let value, !value.isEmpty else { return true }
        switch value.lowercased() {
        case "1", "yes", "true", "on": return true
        case "0", "no", "false", "off": return false
        default: throw UbiquityError(.invalidArgument, "UBIQUITY_APP_FOLDERS='\(value)': expected 1 or 0 (yes or no)")
        }
    }

    /// What to sync: the folder and containers, with the signed-in account (`ubiq account
    /// login`), or with the credentials of --server/--api-token/--web-auth-token (or their
    /// environment variables) when given.
    func syncConfiguration(environment: [String: String], paths: UbiquityPaths) throws -> AccountSync.Configuration {
        guard syncPollInterval > 0, syncPollInterval.isFinite else {
            throw UbiquityError(.invalidArgument, "--sync-poll-interval \(syncPollInterval): expected a number of seconds > 0")
        }
        guard massDeleteShare >= 0, massDeleteShare <= 1 else {
            throw UbiquityError(.invalidArgument, "--mass-delete-share \(massDeleteShare): expected a share from 0 to 1 (0.5: half of the synced items)")
        }
        guard massDeleteMinimum >= 0 else {
            throw UbiquityError(.invalidArgument, "--mass-delete-minimum \(massDeleteMinimum): expected a number of items ≥ 0")
        }
        do { _ = try ContainerIdentifier(container) } catch {
            throw UbiquityError(.invalidArgument, "--container '\(container)': expected an identifier such as \(SyncRecord.defaultContainer)", underlying: error)
        }
        let folderPath = try folder.map(CLI.absolutePath) ?? environment["UBIQUITY_FOLDER"].flatMap { $0.isEmpty ? nil : try? CLI.absolutePath($0) }
            ?? paths.home.appendingPathComponent("Ubiquity").path
        let device = deviceName ?? environment["UBIQUITY_DEVICE_NAME"]
        // The key-value stores of the synced container and of every app container on this disk.
        let local = ((try? FileManager.default.contentsOfDirectory(atPath: paths.containersDirectory.path)) ?? [])
            .map { $0.replacingOccurrences(of: "~", with: ".") }.filter { (try? ContainerIdentifier($0)) != nil }
        var configuration = AccountSync.Configuration(
            folder: folderPath, paths: paths, containerIdentifier: container, keyValueContainers: [container] + local.filter { $0 != container }.sorted(),
            deviceName: device, journalPath: try journal.map(CLI.absolutePath), pollInterval: .milliseconds(Int64(syncPollInterval * 1000)))
        if let evictBudget {
            do { configuration.evictionBudget = try EvictionPolicy.parseSize(evictBudget) } catch {
                throw UbiquityError(.invalidArgument, "--evict-budget '\(evictBudget)': expected a size such as 10G, 500M or 4096 (bytes)")
            }
        }
        configuration.massDeleteShare = massDeleteShare
        configuration.massDeleteMinimum = massDeleteMinimum
        configuration.appFolders = try appFolders ?? Self.appFoldersSetting(environment["UBIQUITY_APP_FOLDERS"])
        if let serverText = server ?? environment["UBIQUITY_SERVER"].flatMap({ $0.isEmpty ? nil : $0 }) {
            guard let url = URL(string: serverText), ["http", "https"].contains(url.scheme ?? ""), url.host != nil else {
                throw UbiquityError(.invalidArgument, "--server '\(serverText)': expected an http or https URL such as http://127.0.0.1:8080")
            }
            if let api = apiToken ?? environment["UBIQUITY_API_TOKEN"], !api.isEmpty {
                configuration.explicit = .init(serverURL: url, credentials: .apiToken(api, webAuthToken: webAuthToken ?? environment["UBIQUITY_WEB_AUTH_TOKEN"]))
            } else if let account = try? UbiquityAccountFile(paths: paths).read(), let token = account.deviceToken,
                      AccountSignIn.canonical(url) == account.server {
                configuration.explicit = .init(serverURL: url, credentials: .device(token: token))
            } else {
                throw UbiquityError(.invalidArgument, "--server needs --api-token (or UBIQUITY_API_TOKEN), or an account signed in to that server (`ubiq account login --server \(serverText)`)")
            }
        }
        return configuration
    }
}
