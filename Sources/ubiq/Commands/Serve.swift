// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Metrics
import Prometheus
import Ubiquity
import UbiquityServer

/// `ubiq serve`: the records server, speaking CloudKit Web Services' JSON protocol.
struct Serve: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Run the records server (CloudKit Web Services compatible).",
        discussion: """
            Serves /database/1/{container}/{development|production}/{public|private|shared}/… \
            as CloudKit Web Services does, so CloudKit clients need only a different base URL. \
            Stores in embedded SQLite under --data (the default) or in PostgreSQL with --database; \
            several servers on one PostgreSQL behave as one. Prints 'listening on URL' when ready \
            (and writes the URL to --ready-file); finishes requests in flight on SIGTERM/SIGINT. \
            /healthz answers ok; /metrics gives Prometheus metrics; /auth/signin is the sign-in \
            page that AUTHENTICATION_REQUIRED errors point to. Create containers, users and keys \
            with `ubiq admin`.

            Examples:
              ubiq serve --data ~/ubiquity-server --port 8080
              ubiq serve --port 0 --ready-file /tmp/url      # a free port; URL in /tmp/url
              ubiq serve --database postgres://ubiq@db.example.org/ubiquity --host 0.0.0.0 \\
                  --tls-cert cert.pem --tls-key key.pem
            """
    )

    @OptionGroup var store: ServerStoreOptions

    @Option(help: "The address to listen on (127.0.0.1: this machine only; 0.0.0.0: every interface).")
    var host: String = "127.0.0.1"

    @Option(help: "The port; 0 picks a free one.")
    var port: Int = 8080

    @Option(help: "A PEM certificate (chain) file for HTTPS.")
    var tlsCert: String?

    @Option(help: "The PEM private key of --tls-cert.")
    var tlsKey: String?

    @Option(help: "The URL clients use to reach this server, for sign-in redirects (default: from the request's Host).")
    var publicURL: String?

    @Option(help: "Write the server's URL to this file once it listens.")
    var readyFile: String?

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port): expected 0 to 65535") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
    }

    func run() async throws {
        CLI.bootstrapLogging(level: logging.level)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "ubiq.serve")
        let server: RecordsServer
        do {
            let configuration = RecordsServerConfiguration(
                host: host, port: port, tlsCertificatePath: try tlsCert.map(CLI.absolutePath), tlsKeyPath: try tlsKey.map(CLI.absolutePath),
                publicURL: publicURL)
            server = RecordsServer(store: try await store.open(logger: logger), configuration: configuration, logger: logger, registry: registry)
        } catch {
            throw CLI.report(error, command: "serve")
        }
        let readyFile = try readyFile.map(CLI.absolutePath)
        do {
            try await server.run { url in
                CLI.printLine("listening on \(url)")
                if let readyFile { try? Data((url + "\n").utf8).write(to: URL(fileURLWithPath: readyFile), options: .atomic) }
            }
        } catch {
            throw CLI.report(error, command: "serve")
        }
    }
}
