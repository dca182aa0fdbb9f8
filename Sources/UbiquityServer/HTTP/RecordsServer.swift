// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import HummingbirdWebSocket
import Logging
import NIOCore
import NIOSSL
import Prometheus
import ServiceLifecycle
import UbiquityCore

/// `ubiq serve`: the CloudKit Web Services compatible HTTP server over a `RecordStore`.
///
/// Routes: `/database/1/…` (the API), `/auth/signin` (the sign-in page that replaces Apple's),
/// `/healthz`, `/metrics` (Prometheus text, when a registry is given), the web's Drive at `/` and
/// the developer Console at `/console`. CORS is open to browser
/// clients (CloudKit JS) and exposes CloudKit's response headers.
package struct RecordsServer: Sendable {
    /// The storage.
    package let store: any RecordStore
    /// Listening and limits.
    package let configuration: RecordsServerConfiguration
    let logger: Logger
    let registry: PrometheusCollectorRegistry?
    let engine: RecordsEngine
    let admin: RecordsAdmin
    /// push: subscriptions, notification logs and delivery (Subscriptions/).
    package let push: PushService
    /// The asset endpoints' service (`/assets/1/…`, `assets/upload`, `assets/rereference`);
    /// nil: the server offers no assets and stores asset values as given.
    package let assets: AssetService?
    /// The synced folder's history: versions and Recently Deleted (History/).
    package let history: DocumentHistory
    /// The Console's request log and telemetry (Console/), fed by the records middleware.
    package let requestLog = RequestLog()

    /// Makes a server. `registry` is rendered at `/metrics` (the executable bootstraps the
    /// metrics system with it; libraries never do).
    /// `pushConfiguration` sets the limits of subscriptions and push delivery; `assets` serves
    /// asset content (see ``open(store:configuration:logger:registry:pushConfiguration:blobConfiguration:)``,
    /// which makes it from `configuration.blobs`).
    package init(store: any RecordStore, configuration: RecordsServerConfiguration, logger: Logger, registry: PrometheusCollectorRegistry? = nil,
                pushConfiguration: PushConfiguration = PushConfiguration(), assets: AssetService? = nil) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.registry = registry
        self.assets = assets
        // push: the engine tells the subscription matcher of every change.
        self.push = PushService(store: store, configuration: pushConfiguration, logger: logger)
        // push, the documents' history and the Drive's index are told of every change, in the change's transaction
        let observers = RecordChangeObservers([push.matcher, DocumentHistoryRecorder(quotas: configuration.quotas), DriveIndexer()])
        self.engine = RecordsEngine(store: store, logger: logger, changeObserver: observers, assets: assets, quotas: configuration.quotas)
        self.history = DocumentHistory(engine: engine, trashDays: configuration.trashDays)
        self.admin = RecordsAdmin(store: store, configuration: configuration)
    }

    /// Makes a server with its asset service: a blob store at `configuration.blobs` (none when
    /// nil) signing with the key kept in `store`.
    package static func open(store: any RecordStore, configuration: RecordsServerConfiguration, logger: Logger,
                            registry: PrometheusCollectorRegistry? = nil, pushConfiguration: PushConfiguration = PushConfiguration(),
                            blobConfiguration: FileBlobStore.Configuration = FileBlobStore.Configuration()) async throws -> RecordsServer {
        var assets: AssetService?
        if let blobs = configuration.blobs {
            assets = try await AssetService.open(recordStore: store, blobs: blobs, configuration: configuration.assets,
                                                 blobConfiguration: blobConfiguration, logger: logger)
        }
        return RecordsServer(store: store, configuration: configuration, logger: logger, registry: registry,
                             pushConfiguration: pushConfiguration, assets: assets)
    }

    /// Deletes asset content no record refers to, older than `olderThan` (what the periodic
    /// task does; `ubiq admin gc`). nil without an asset service.
    @discardableResult
    package func collectAssetGarbage(olderThan: Date) async throws -> BlobGarbageReport? {
        try await engine.collectAssetGarbage(olderThan: olderThan)
    }

    /// Builds the Hummingbird application. `onListening` gets the base URL once the socket is
    /// bound (`http://127.0.0.1:PORT`).
    package func application(onListening: @escaping @Sendable (String) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let router = Router(context: RecordsRequestContext.self)
        router.add(middleware: CORSMiddleware(
            allowOrigin: .originBased,
            allowHeaders: [.accept, .contentType, .origin, .authorization, .contentRange, .range, .ifRange,
                           HTTPField.Name(CloudKitAuthHeaders.keyID)!, HTTPField.Name(CloudKitAuthHeaders.iso8601Date)!,
                           HTTPField.Name(CloudKitAuthHeaders.signatureV1)!],
            allowMethods: [.get, .post, .put, .head, .options],
            allowCredentials: true,
            exposedHeaders: [CloudKitAuthHeaders.requestUUID, CloudKitAuthHeaders.webAuthToken, CloudKitAuthHeaders.cloudKitVersion,
                             "Retry-After", "Upload-Offset", "Content-Range", "ETag"],
            maxAge: .seconds(3600)))
        router.add(middleware: MetricsMiddleware())
        let limiter = configuration.rateLimit > 0 ? RateLimiter(rate: configuration.rateLimit, burst: configuration.rateLimitBurst) : nil
        // every collected request body counts against one budget (issue 24, finding 4)
        let bodyBudget = RequestBodyBudget(limit: configuration.maximumBodyBytesInFlight)
        let users = UserDirectory(store: store, engine: engine, logger: logger)
        let middleware = RecordsAuthMiddleware(authenticator: RecordsAuthenticator(store: store, configuration: configuration, logger: logger),
                                               configuration: configuration, logger: logger, users: users, limiter: limiter, bodyBudget: bodyBudget,
                                               requestLog: requestLog)
        // push: long-poll on the HTTP router, WebSocket on the upgrade router.
        let pushRoutes = PushRoutes(push: push, logger: logger)
        pushRoutes.register(on: router)
        if var assetRoutes = assets?.routes {
            assetRoutes.bodyBudget = bodyBudget
            assetRoutes.register(on: router)
        }
        RecordsRoutes(engine: engine, users: users, subscriptions: push.endpoint, history: history, middleware: middleware).register(on: router)
        let store = self.store
        router.get("/healthz") { _, _ -> Response in
            do {
                _ = try await store.read { tx in try await tx.containers().count }
                return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
            } catch {
                return Response(status: .serviceUnavailable, headers: [.contentType: "text/plain"],
                                body: .init(byteBuffer: ByteBuffer(string: "storage unavailable: \(error)\n")))
            }
        }
        let registry = self.registry
        let metricsAccess = MetricsAccess(token: configuration.metricsToken)
        router.get("/metrics") { request, context -> Response in
            guard metricsAccess.allows(address: context.remoteAddress?.ipAddress, authorization: request.headers[.authorization]) else {
                let reason = metricsAccess.token == nil
                    ? "/metrics answers clients on this machine only; set a metrics token (ubiq serve --metrics-token-file) to scrape it from elsewhere\n"
                    : "/metrics needs Authorization: Bearer with the server's metrics token\n"
                return Response(status: .unauthorized, headers: [.contentType: "text/plain", .wwwAuthenticate: "Bearer"],
                                body: .init(byteBuffer: ByteBuffer(string: reason)))
            }
            var buffer: [UInt8] = []
            registry?.emit(into: &buffer)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
        let signInGuard = SignInGuard(store: store)
        SignInRoutes(admin: admin, store: store, configuration: configuration, signInGuard: signInGuard, bodyBudget: bodyBudget).register(on: router)
        DeviceAuthRoutes(admin: admin, signInGuard: signInGuard, bodyBudget: bodyBudget).register(on: router)
        // the web's Drive at `/` (Web/, docs/web.md)
        let drive = DriveRoutes(sessions: DriveSessions(admin: admin, store: store, configuration: configuration, signInGuard: signInGuard),
                                actions: DriveActions(engine: engine, history: history), history: history, assets: assets, bodyBudget: bodyBudget)
        drive.register(on: router)
        ShareRoutes(drive: drive, shares: DriveShares(store: store, admin: admin)).register(on: router)
        // the developer Console at `/console` (Console/, docs/web.md)
        ConsoleRoutes(sessions: drive.sessions, engine: engine, admin: admin, requestLog: requestLog, assets: assets, bodyBudget: bodyBudget)
            .register(on: router)

        var services: [any Service] = [push, HistoryMaintenance(history: history, logger: logger), requestLog]
        if assets != nil, configuration.assetGarbageCollectionInterval > 0 {
            services.append(AssetGarbageCollector(engine: engine, interval: configuration.assetGarbageCollectionInterval,
                                                  minimumAge: configuration.assetGarbageMinimumAge, logger: logger))
        }
        let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
        let host = configuration.host
        // The HTTP/1 channel with the WebSocket upgrade (push), behind TLS when configured, and
        // behind the guard that lets graceful shutdown reach every connection.
        var tls: TLSConfiguration?
        if let certificatePath = configuration.tlsCertificatePath {
            guard let keyPath = configuration.tlsKeyPath else {
                throw UbiquityError(.invalidArgument, "--tls-cert needs --tls-key (the certificate's private key in PEM)")
            }
            let chain: [NIOSSLCertificate]
            let key: NIOSSLPrivateKey
            do {
                chain = try NIOSSLCertificate.fromPEMFile(certificatePath)
                key = try NIOSSLPrivateKey(file: keyPath, format: .pem)
            } catch {
                throw UbiquityError(.invalidArgument, "cannot read the TLS certificate \(certificatePath) or key \(keyPath)", underlying: error)
            }
            tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
        }
        let webSocketResponder = pushRoutes.webSocketRouter().buildResponder()
        let gracePeriod = configuration.shutdownGracePeriod
        // Connection limits (issue 24, finding 5): a cap with a clear refusal, a header-read
        // deadline, Hummingbird's idle timeout, and the handler that closes a connection whose
        // request was answered before its body was read.
        let cap = configuration.maximumConnections > 0 ? ConnectionCap(limit: configuration.maximumConnections, logger: logger) : nil
        let headerTimeout = configuration.requestHeaderTimeout > 0 ? TimeAmount.nanoseconds(Int64(configuration.requestHeaderTimeout * 1e9)) : nil
        let http1 = HTTP1Channel.Configuration(
            additionalChannelHandlers: [HTTPRequestProgressHandler()],
            idleTimeout: configuration.idleTimeout > 0 ? .nanoseconds(Int64(configuration.idleTimeout * 1e9)) : nil)
        let server = HTTPServerBuilder { [tls, logger] responder -> any ServerChildChannel in
            let channel = LimitedChildChannel(
                base: QuiescingChildChannel(
                    base: HTTP1WebSocketUpgradeChannel(responder: responder, webSocketResponder: webSocketResponder, configuration: .init(http1: http1)),
                    gracePeriod: gracePeriod),
                cap: cap, headerTimeout: headerTimeout, logger: logger)
            if let tls { return try TLSChannel(channel, tlsConfiguration: tls) }
            return channel
        }
        if let cap { RecordsServer.warnAboutFileLimit(connections: cap.acceptLimit, logger: logger) }
        return Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "ubiquity",
                                 availableConnectionsDelegate: cap?.availableConnections),
            services: services,
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shownHost = host.contains(":") ? "[\(host)]" : host
                await onListening("\(scheme)://\(shownHost):\(port)")
            },
            logger: logger)
    }

    /// Logs a warning when the process may open fewer files than `connections` connections
    /// need (with room for the stores and logs): raise `ulimit -n` or systemd's `LimitNOFILE`.
    static func warnAboutFileLimit(connections: Int, logger: Logger) {
        var limit = rlimit()
        guard getrlimit(Int32(RLIMIT_NOFILE.rawValue), &limit) == 0, limit.rlim_cur != rlim_t.max else { return }
        let needed = connections + 256
        if Int(limit.rlim_cur) < needed {
            logger.warning("the open-file limit (\(limit.rlim_cur)) is low for \(connections) connections and the stores; raise it (ulimit -n, LimitNOFILE) or lower --max-connections",
                           metadata: ["limit": "\(limit.rlim_cur)", "needed": "\(needed)"])
        }
    }

    /// Runs until SIGTERM or SIGINT (or cancellation), finishing requests in flight, then closes
    /// the store. With `handlingSignals` false it runs until cancelled: for a server inside a
    /// process that handles signals itself (on Linux a signal reaches only one of its listeners).
    package func run(handlingSignals: Bool = true, onListening: @escaping @Sendable (String) async -> Void = { _ in }) async throws {
        let app = try application(onListening: onListening)
        await engine.queryIndexBuilder.resumeUnfinished()
        do {
            if handlingSignals {
                try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
            } else {
                // cancellation shuts down gracefully (requests in flight finish, within the grace period)
                // (the group runs in a task of its own, which the cancellation does not reach)
                let group = ServiceGroup(configuration: .init(services: [app], logger: logger))
                let running = Task { try await group.run() }
                try await withTaskCancellationHandler {
                    try await running.value
                } onCancel: {
                    Task { await group.triggerGracefulShutdown() }
                }
            }
        } catch {
            await push.shutdown()
            try? await store.close()
            throw error
        }
        await push.shutdown()
        try await store.close()
    }
}
