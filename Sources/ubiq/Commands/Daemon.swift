// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquityIndex
import UbiquitySync

/// `ubiq daemon`: the per-user daemon: the coordination service, and the metadata index of the
/// containers with live queries on its control socket. Sync joins it in a later issue. It needs
/// no account and no server.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the per-user daemon (file coordination, the metadata index and live queries).",
        discussion: """
            Hosts the coordination service on a Unix socket (default \
            $XDG_RUNTIME_DIR/ubiquity/coordination.sock, or $UBIQUITY_COORDINATION_SOCKET) and the \
            metadata index of every container ($UBIQUITY_HOME/containers, watched with inotify, \
            stored in --index, default $XDG_STATE_HOME/ubiquity/index.sqlite or \
            $UBIQUITY_INDEX_DATABASE) with metadata queries on the control socket (default \
            $XDG_RUNTIME_DIR/ubiquity/control.sock, or $UBIQUITY_CONTROL_SOCKET), until SIGTERM or \
            SIGINT. Prints 'control service listening on PATH' and then 'coordination service \
            listening on PATH' when ready. Every root is rescanned every --rescan-interval seconds; \
            a deleted or corrupt index file is rebuilt from a full scan (and `ubiq index status` \
            says so).

            Examples:
              ubiq daemon
              XDG_RUNTIME_DIR=/tmp/dev-a ubiq daemon --log-level debug
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

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        CLI.bootstrapLogging(level: logging.level)
        let logger = Logger(label: "ubiq.daemon")
        let service: CoordinationService
        let indexService: IndexService
        let path: String
        do {
            guard rescanInterval > 0, rescanInterval.isFinite else {
                throw UbiquityError(.invalidArgument, "--rescan-interval \(rescanInterval): expected a number of seconds > 0")
            }
            let paths = UbiquityPaths()
            let environment = ProcessInfo.processInfo.environment
            let database = try index.map(CLI.absolutePath) ?? environment["UBIQUITY_INDEX_DATABASE"].flatMap { $0.hasPrefix("/") ? $0 : nil }
                ?? paths.stateDirectory.appendingPathComponent("index.sqlite").path
            try UbiquityPaths.ensureDirectory(paths.containersDirectory)
            indexService = try IndexService(
                databasePath: database,
                controlSocket: try controlSocket.map(CLI.absolutePath) ?? ControlWire.socketPath(),
                permanentRoots: [paths.containersDirectory.path],
                logger: logger
            )
            path = try socket.map(CLI.absolutePath) ?? CoordinationConfiguration().socketPath
            service = try CoordinationService(socketPath: path, logger: logger)
        } catch {
            throw CLI.report(error, command: "daemon")
        }
        indexService.start(rescanInterval: .milliseconds(Int64(rescanInterval * 1000)))
        CLI.printLine("control service listening on \(indexService.controlSocket)")
        service.start()
        if let readyFile, let file = try? CLI.absolutePath(readyFile) { try? Data(path.utf8).write(to: URL(fileURLWithPath: file)) }
        CLI.printLine("coordination service listening on \(path)")
        logger.notice("daemon ready", metadata: ["ubiquity.socket": "\(path)"])
        await CLI.waitForTermination {
            service.stop()
            indexService.stop()
        }
        logger.notice("daemon stopped")
    }
}
