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
        commandName: "serve",
        abstract: "Run the records server (CloudKit Web Services compatible).",
        discussion: """
            Serves /database/1/{container}/{development|production}/{public|private|shared}/… \
            as CloudKit Web Services does, so CloudKit clients need only a different base URL. \
            Stores in embedded SQLite under --data (the default) or in PostgreSQL with --database; \
            several servers on one PostgreSQL behave as one (give them one --blobs for asset \
            content: a shared folder, or an S3-compatible bucket as s3://BUCKET/PREFIX; with --data \
            it is DATA/blobs). Prints 'listening on URL' when ready \
            (and writes the URL to --ready-file); finishes requests in flight on SIGTERM/SIGINT. \
            /healthz answers ok; /metrics gives Prometheus metrics; /auth/signin is the sign-in \
            page that AUTHENTICATION_REQUIRED errors point to. Create containers, users and keys \
            with `ubiq admin`.

            Examples:
              ubiq serve --data ~/ubiquity-server --port 8080
              ubiq serve --port 0 --ready-file /tmp/url      # a free port; URL in /tmp/url
              ubiq serve --database postgres://ubiq@db.example.org/ubiquity --blobs /srv/ubiquity-blobs \\
                  --host 0.0.0.0 --tls-cert cert.pem --tls-key key.pem
              AWS_ACCESS_KEY_ID=… AWS_SECRET_ACCESS_KEY=… ubiq serve --database postgres://ubiq@db/ubiquity \\
                  --blobs s3://ubiquity/blobs --s3-endpoint http://minio.internal:9000
              ubiq serve --data ~/ubiquity-server --private-quota 20G --public-quota 1T --gc-interval 12
              ubiq serve --port 8080 --install-service    # a systemd user unit, started at login
              ubiq serve --max-connections 2000 --idle-timeout 120 --max-body-memory 1G   # with LimitNOFILE=8192
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

    @Option(help: "Requests per second per caller (user, key, or API token and address), as N or N/s; 0 disables. Over it: 429 THROTTLED with retryAfter.")
    var rateLimit: String = "100/s"

    @Option(help: "Requests a caller may make at once before --rate-limit applies.")
    var burst: Int = 200

    @Option(help: "Bytes each user's private database may hold (records and distinct assets); suffixes K, M, G, T; 0 for no limit.")
    var privateQuota: String = "5G"

    @Option(help: "Bytes each container's public database may hold; suffixes K, M, G, T; 0 for no limit.")
    var publicQuota: String = "100G"

    @Option(help: "Hours between deletions of asset content no record refers to; 0 never.")
    var gcInterval: Double = 6

    @Option(help: "Unreferenced asset content younger than this many hours is kept (uploads not saved yet).")
    var gcOlderThan: Double = 48

    @Option(help: "Days deleted documents stay in Recently Deleted (ubiq trash, the web's Drive) before they are gone for good.")
    var trashDays: Int = 30

    @Option(help: "The largest asset (file) accepted; suffixes K, M, G, T (CloudKit's own limit is 50 MB; synced documents may be large).")
    var maxAssetSize: String = "16G"

    @Option(help: "On SIGTERM/SIGINT, seconds to let requests in flight finish before their connections are closed.")
    var shutdownGrace: Double = 30

    @Option(help: "Connections served at once; one more is answered 503 TRY_AGAIN_LATER and closed; 0 for no limit. Keep it well under the open-file limit (ulimit -n, LimitNOFILE).")
    var maxConnections: Int = 512

    @Option(help: "Seconds a connection may stay idle (between requests, or a client that stopped sending) before it is closed; 0 never.")
    var idleTimeout: Double = 60

    @Option(help: "Seconds a request's head (request line and headers) may take to arrive, from the connection's start or the next request's first byte; 0 no limit.")
    var headerTimeout: Double = 30

    @Option(help: "Request bodies held in memory at once, over all requests; suffixes K, M, G, T; over it: 503 TRY_AGAIN_LATER; 0 for no limit.")
    var maxBodyMemory: String = "256M"

    @Option(help: "A file holding the token /metrics asks for (Authorization: Bearer TOKEN), for scraping from other machines; without it, /metrics answers this machine's clients only.")
    var metricsTokenFile: String?

    @OptionGroup var service: ServiceInstallOptions

    @Flag(help: "With --install-service or --uninstall-service: print the result as JSON.")
    var json = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        guard (0...65535).contains(port) else { throw ValidationError("--port \(port): expected 0 to 65535") }
        if (tlsCert == nil) != (tlsKey == nil) { throw ValidationError("--tls-cert and --tls-key go together") }
        _ = try Serve.requestsPerSecond(rateLimit)
        guard burst >= 1 else { throw ValidationError("--burst \(burst): expected at least 1") }
        do {
            _ = try store.blobLocation()
        } catch let error as UbiquityError {
            throw ValidationError(error.message)
        }
        guard gcInterval >= 0, gcInterval.isFinite else { throw ValidationError("--gc-interval \(gcInterval): expected a number of hours, 0 or more") }
        guard shutdownGrace >= 0, shutdownGrace.isFinite else { throw ValidationError("--shutdown-grace \(shutdownGrace): expected a number of seconds, 0 or more") }
        guard maxConnections >= 0 else { throw ValidationError("--max-connections \(maxConnections): expected a number of connections, 0 or more") }
        guard idleTimeout >= 0, idleTimeout.isFinite else { throw ValidationError("--idle-timeout \(idleTimeout): expected a number of seconds, 0 or more") }
        guard headerTimeout >= 0, headerTimeout.isFinite else { throw ValidationError("--header-timeout \(headerTimeout): expected a number of seconds, 0 or more") }
        guard trashDays >= 1, trashDays <= 3650 else { throw ValidationError("--trash-days \(trashDays): expected a number of days from 1 to 3650") }
        guard gcOlderThan >= 0, gcOlderThan.isFinite else { throw ValidationError("--gc-older-than \(gcOlderThan): expected a number of hours, 0 or more") }
        do {
            _ = try StorageQuotas.parseBytes(privateQuota, argument: "--private-quota")
            guard try StorageQuotas.parseBytes(maxAssetSize, argument: "--max-asset-size") > 0 else {
                throw ValidationError("--max-asset-size \(maxAssetSize): expected a size above 0, e.g. 16G")
            }
            _ = try StorageQuotas.parseBytes(publicQuota, argument: "--public-quota")
            let bodyMemory = try StorageQuotas.parseBytes(maxBodyMemory, argument: "--max-body-memory")
            // the largest body a route collects (a records request) must fit, or it is never accepted
            guard bodyMemory == 0 || bodyMemory >= Int64(RecordsServerConfiguration().maximumBodySize) else {
                throw ValidationError("--max-body-memory \(maxBodyMemory): expected 0 or at least 32M (the largest request body)")
            }
        } catch let error as UbiquityError {
            throw ValidationError(error.message)
        }
    }

    /// The metrics token in `file` (its first line, without surrounding spaces).
    /// - Throws: `invalidArgument` naming `--metrics-token-file` when the file cannot be read or
    ///   holds no token.
    static func metricsToken(file: String) throws -> String {
        guard let text = try? String(contentsOfFile: file, encoding: .utf8) else {
            throw UbiquityError(.invalidArgument, "--metrics-token-file \(file): cannot read it")
        }
        let token = text.split(whereSeparator: \.isNewline).first.map { $0.trimmingCharacters(in: .whitespaces) } ?? ""
        guard token.utf8.count >= 16, !token.contains(where: \.isWhitespace) else {
            throw UbiquityError(.invalidArgument, "--metrics-token-file \(file): expected a token of at least 16 characters without spaces on its first line")
        }
        return token
    }

    /// `N` or `N/s` (N ≥ 0, may have a fraction) as requests per second.
    static func requestsPerSecond(_ text: String) throws -> Double {
        let number = text.hasSuffix("/s") ? String(text.dropLast(2)) : text
        guard let value = Double(number), value.isFinite, value >= 0 else {
            throw ValidationError("--rate-limit \(text): expected requests per second as N or N/s, e.g. 100/s (0 disables)")
        }
        return value
    }

    func run() async throws {
        if service.requested {
            do { try SystemdUnit.serve.perform(service, subcommand: "serve", json: json) } catch { throw CLI.report(error, command: "serve") }
            return
        }
        CLI.bootstrapLogging(level: logging.level)
        let registry = PrometheusCollectorRegistry()
        MetricsSystem.bootstrap(PrometheusMetricsFactory(registry: registry))
        let logger = Logger(label: "ubiq.serve")
        let server: RecordsServer
        do {
            let privateBytes = try StorageQuotas.parseBytes(privateQuota, argument: "--private-quota")
            let publicBytes = try StorageQuotas.parseBytes(publicQuota, argument: "--public-quota")
            var configuration = RecordsServerConfiguration(
                host: host, port: port, tlsCertificatePath: try tlsCert.map(CLI.absolutePath), tlsKeyPath: try tlsKey.map(CLI.absolutePath),
                publicURL: publicURL, rateLimit: try Serve.requestsPerSecond(rateLimit), rateLimitBurst: burst, blobsDirectory: nil,
                privateQuotaBytes: privateBytes == 0 ? nil : privateBytes, publicQuotaBytes: publicBytes == 0 ? nil : publicBytes,
                assetGarbageCollectionInterval: gcInterval * 3600, assetGarbageMinimumAge: gcOlderThan * 3600,
                shutdownGracePeriod: shutdownGrace,
                maximumBodyBytesInFlight: Int(try StorageQuotas.parseBytes(maxBodyMemory, argument: "--max-body-memory")),
                maximumConnections: maxConnections, idleTimeout: idleTimeout, requestHeaderTimeout: headerTimeout)
            configuration.blobs = try store.blobLocation()
            configuration.assets.maximumAssetSize = try StorageQuotas.parseBytes(maxAssetSize, argument: "--max-asset-size")
            configuration.metricsToken = try metricsTokenFile.map(Serve.metricsToken(file:))
            configuration.trashDays = trashDays
            server = try await RecordsServer.open(store: try await store.open(logger: logger), configuration: configuration, logger: logger,
                                                  registry: registry)
        } catch {
            throw CLI.report(error, command: "serve")
        }
        let readyFile = try readyFile.map(CLI.absolutePath)
        do {
            try await server.run { url in
                // the file first: whoever waits for the line may read the file at once
                if let readyFile { try? Data((url + "\n").utf8).write(to: URL(fileURLWithPath: readyFile), options: .atomic) }
                CLI.printLine("listening on \(url)")
            }
        } catch {
            throw CLI.report(error, command: "serve")
        }
    }
}
