// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityServer

/// `ubiq daemon --local-server`: the first run's one-machine set-up. The daemon runs the records
/// server in its own process (embedded SQLite in `$XDG_DATA_HOME/ubiquity/server`, the folder
/// `ubiq serve` and `ubiq admin` use by default, listening on loopback only) and, when no account
/// is signed in, creates a local account on it and signs this device in.
struct LocalServerOptions: ParsableArguments {
    @Flag(help: "Run a records server inside the daemon (SQLite in $XDG_DATA_HOME/ubiquity/server, 127.0.0.1 only) and, when no account is signed in, sign in a local account on it: the first run.")
    var localServer = false

    @Option(help: "With --local-server: its port (default: the signed-in local account's, else 8080, else a free one).")
    var localServerPort: Int?

    @Option(help: "With --local-server: the local account's name when one is created (default $USER).")
    var localUser: String?

    func validate() throws {
        if let localServerPort, !(0...65535).contains(localServerPort) {
            throw ValidationError("--local-server-port \(localServerPort): expected 0 to 65535")
        }
        if !localServer, localServerPort != nil || localUser != nil {
            throw ValidationError("--local-server-port and --local-user go with --local-server")
        }
        if let localUser {
            do { try RecordsAdmin.validate(userName: localUser) } catch let error as UbiquityError {
                throw ValidationError("--local-user: \(error.message)")
            }
        }
    }

    /// The account name a first run creates: `--local-user`, else `$USER` with the characters
    /// an account name cannot have dropped, else `me`.
    var accountName: String {
        if let localUser { return localUser }
        let login = ProcessInfo.processInfo.environment["USER"] ?? ""
        let kept = String(login.unicodeScalars.filter { CharacterSet.alphanumerics.contains($0) && $0.isASCII || "._-@".unicodeScalars.contains($0) }
            .map(Character.init)).prefix(64)
        return kept.isEmpty ? "me" : String(kept)
    }

    /// The port to try first, and whether another may be taken when it is busy.
    func preferredPort(account: UbiquityAccountFile.Account?) -> (port: Int, fallback: Bool) {
        if let localServerPort { return (localServerPort, false) }
        if let account, let url = URL(string: account.server), LocalServer.isLoopback(url), let port = url.port { return (port, false) }
        return (8080, true)
    }
}

/// A records server running inside the daemon (``LocalServerOptions``).
struct LocalServer {
    /// The server's URL (`http://127.0.0.1:PORT`).
    let url: String
    /// The data folder.
    let dataDirectory: String
    /// The account this run created, if it made one.
    let createdAccount: String?
    let task: Task<Void, any Error>

    static func isLoopback(_ url: URL) -> Bool { ["127.0.0.1", "localhost", "[::1]", "::1"].contains(url.host ?? "") }

    /// Opens the store, starts the server (falling back to a free port when the preferred one is
    /// taken and that is allowed) and, when no account is signed in, creates one and signs in.
    static func start(_ options: LocalServerOptions, paths: UbiquityPaths, logger: Logger) async throws -> LocalServer {
        let data = ProcessInfo.processInfo.environment["UBIQUITY_SERVER_DATA"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? paths.dataDirectory.appendingPathComponent("server").path
        let accountFile = UbiquityAccountFile(paths: paths)
        let account = try accountFile.read()
        let (port, fallback) = options.preferredPort(account: account)
        var server: (url: String, task: Task<Void, any Error>, store: SQLiteRecordStore)
        do {
            server = try await run(data: data, port: port, logger: logger)
        } catch where fallback {
            logger.notice("port \(port) is taken; the local server takes a free one", metadata: ["ubiquity.error": "\(error)"])
            server = try await run(data: data, port: 0, logger: logger)
        } catch {
            throw UbiquityError(.serviceUnavailable, "the local server cannot listen on 127.0.0.1:\(port) (is another `ubiq serve` running there?); "
                                + "give --local-server-port PORT, 0 for any free one", underlying: error)
        }
        var created: String?
        if account == nil || account?.deviceToken == nil {
            do {
                created = try await signInLocalAccount(options.accountName, store: server.store, url: server.url, file: accountFile, logger: logger)
            } catch {
                server.task.cancel()
                _ = await server.task.result
                throw error
            }
        } else if let account, account.server != server.url, let known = URL(string: account.server), isLoopback(known) {
            logger.warning("the signed-in account is on \(account.server), not on this local server (\(server.url)); it syncs there")
        }
        return LocalServer(url: server.url, dataDirectory: data, createdAccount: created, task: server.task)
    }

    /// Starts a server on `port` and returns once it listens (or throws when it cannot), with its
    /// store (open until the server stops).
    static func run(data: String, port: Int, logger: Logger) async throws -> (url: String, task: Task<Void, any Error>, store: SQLiteRecordStore) {
        let store = try SQLiteRecordStore(directory: URL(fileURLWithPath: data), logger: logger)
        // one user's own server: no throttling, no quota
        var configuration = RecordsServerConfiguration(host: "127.0.0.1", port: port, rateLimit: 0,
                                                       blobsDirectory: URL(fileURLWithPath: data).appendingPathComponent("blobs").path,
                                                       privateQuotaBytes: nil)
        configuration.assets.maximumAssetSize = 16 << 30
        configuration.shutdownGracePeriod = 5
        let server: RecordsServer
        do {
            server = try await RecordsServer.open(store: store, configuration: configuration, logger: logger)
        } catch {
            try? await store.close()
            throw error
        }
        let (listening, continuation) = AsyncStream<String>.makeStream()
        let task = Task {
            defer { continuation.finish() }
            try await server.run(handlingSignals: false) { url in continuation.yield(url) }
        }
        for await url in listening { return (url, task, store) }
        // the server ended before listening: its error says why
        try await task.value
        throw UbiquityError(.serviceUnavailable, "the local server stopped before it listened")
    }

    /// Creates the account (when new) on the running server's store and signs this device in
    /// with a device token.
    static func signInLocalAccount(_ name: String, store: SQLiteRecordStore, url: String, file: UbiquityAccountFile, logger: Logger) async throws -> String {
        let admin = RecordsAdmin(store: store)
        let token: String
        do {
            token = try await admin.issueToken(forUser: name, device: true)
        } catch let error as UbiquityError where error.code == .notFound {
            _ = try await admin.addUser(name, email: nil, password: nil)
            token = try await admin.issueToken(forUser: name, device: true)
        }
        try file.write(UbiquityAccountFile.Account(server: url, user: name, deviceToken: token, deviceName: AccountCommand.hostName(),
                                                   signedInAt: Int64(Date().timeIntervalSince1970 * 1000)))
        logger.notice("signed in a local account", metadata: ["ubiquity.user": "\(name)", "ubiquity.server": "\(url)"])
        return name
    }

    /// What to do next, printed once the daemon is ready.
    func nextSteps(folder: String, account: String?) -> String {
        let user = account ?? "USER"
        return """
            Ubiquity is running: the folder \(folder) syncs through the server at \(url) (this machine only; data in \(dataDirectory)).
            Next:
              echo hello > '\(folder)/hello.txt' && ubiq status '\(folder)/hello.txt'
              ubiq doctor                                   # checks the set-up
              ubiq daemon --local-server --install-service  # start it at login (systemd user units)
            Another device (another user or XDG directories on this machine):
              ubiq admin user token \(user) --device        # here: prints a device token
              ubiq account login --server \(url) --token=TOKEN && ubiq daemon
            """
    }

    /// Stops the server (after the daemon stopped syncing) and waits for its store to close.
    func stop() async {
        task.cancel()
        _ = await task.result
    }
}
