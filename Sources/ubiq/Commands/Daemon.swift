// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquitySync

/// `ubiq daemon`: the per-user daemon. Today it hosts the coordination service; indexing and
/// sync join it in later issues. It needs no account and no server.
struct Daemon: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the per-user daemon (the cross-process file coordination service).",
        discussion: """
            Listens on a Unix socket (default $XDG_RUNTIME_DIR/ubiquity/coordination.sock, or \
            $UBIQUITY_COORDINATION_SOCKET) until SIGTERM or SIGINT. Prints \
            'coordination service listening on PATH' when ready.

            Examples:
              ubiq daemon
              XDG_RUNTIME_DIR=/tmp/dev-a ubiq daemon --log-level debug
            """
    )

    @Option(help: "The coordination socket (overrides $UBIQUITY_COORDINATION_SOCKET and $XDG_RUNTIME_DIR).")
    var socket: String?

    @Option(help: "Write the socket path to this file once ready.")
    var readyFile: String?

    @OptionGroup var logging: LoggingOptions

    func run() async throws {
        CLI.bootstrapLogging(level: logging.level)
        let logger = Logger(label: "ubiq.daemon")
        let service: CoordinationService
        let path: String
        do {
            path = try socket.map(CLI.absolutePath) ?? CoordinationConfiguration().socketPath
            service = try CoordinationService(socketPath: path, logger: logger)
        } catch {
            throw CLI.report(error, command: "daemon")
        }
        service.start()
        if let readyFile, let file = try? CLI.absolutePath(readyFile) { try? Data(path.utf8).write(to: URL(fileURLWithPath: file)) }
        CLI.printLine("coordination service listening on \(path)")
        logger.notice("daemon ready", metadata: ["ubiquity.socket": "\(path)"])
        await CLI.waitForTermination { service.stop() }
        logger.notice("daemon stopped")
    }
}
