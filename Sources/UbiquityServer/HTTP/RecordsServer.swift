// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdTLS
import Logging
import NIOCore
import NIOSSL
import Prometheus
import ServiceLifecycle
import UbiquityCore

/// `ubiq serve`: the CloudKit Web Services compatible HTTP server over a `RecordStore`.
///
/// Routes: `/database/1/…` (the API), `/auth/signin` (the sign-in page that replaces Apple's),
/// `/healthz`, `/metrics` (Prometheus text, when a registry is given). CORS is open to browser
/// clients (CloudKit JS) and exposes CloudKit's response headers.
public struct RecordsServer: Sendable {
    /// The storage.
    public let store: any RecordStore
    /// Listening and limits.
    public let configuration: RecordsServerConfiguration
    let logger: Logger
    let registry: PrometheusCollectorRegistry?
    let engine: RecordsEngine
    let admin: RecordsAdmin

    /// Makes a server. `registry` is rendered at `/metrics` (the executable bootstraps the
    /// metrics system with it; libraries never do).
    public init(store: any RecordStore, configuration: RecordsServerConfiguration, logger: Logger, registry: PrometheusCollectorRegistry? = nil) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        self.registry = registry
        self.engine = RecordsEngine(store: store, logger: logger)
        self.admin = RecordsAdmin(store: store, configuration: configuration)
    }

    /// Builds the Hummingbird application. `onListening` gets the base URL once the socket is
    /// bound (`http://127.0.0.1:PORT`).
    public func application(onListening: @escaping @Sendable (String) async -> Void = { _ in }) throws -> some ApplicationProtocol {
        let router = Router(context: BasicRequestContext.self)
        router.add(middleware: CORSMiddleware(
            allowOrigin: .originBased,
            allowHeaders: [.accept, .contentType, .origin, .authorization,
                           HTTPField.Name(CloudKitAuthHeaders.keyID)!, HTTPField.Name(CloudKitAuthHeaders.iso8601Date)!,
                           HTTPField.Name(CloudKitAuthHeaders.signatureV1)!],
            allowMethods: [.get, .post, .options],
            allowCredentials: true,
            exposedHeaders: [CloudKitAuthHeaders.requestUUID, CloudKitAuthHeaders.webAuthToken, CloudKitAuthHeaders.cloudKitVersion],
            maxAge: .seconds(3600)))
        router.add(middleware: MetricsMiddleware())
        let api = RecordsAPI(engine: engine, authenticator: RecordsAuthenticator(store: store, configuration: configuration, logger: logger),
                             configuration: configuration, logger: logger)
        router.get("/database/**") { request, context in await api.respond(to: request, context: context) }
        router.post("/database/**") { request, context in await api.respond(to: request, context: context) }
        let store = self.store
        router.get("/healthz") { _, _ -> Response in
            do {
                _ = try await store.read { tx in try tx.containers().count }
                return Response(status: .ok, headers: [.contentType: "text/plain"], body: .init(byteBuffer: ByteBuffer(string: "ok\n")))
            } catch {
                return Response(status: .serviceUnavailable, headers: [.contentType: "text/plain"],
                                body: .init(byteBuffer: ByteBuffer(string: "storage unavailable: \(error)\n")))
            }
        }
        let registry = self.registry
        router.get("/metrics") { _, _ -> Response in
            var buffer: [UInt8] = []
            registry?.emit(into: &buffer)
            return Response(status: .ok, headers: [.contentType: "text/plain; version=0.0.4"], body: .init(byteBuffer: ByteBuffer(bytes: buffer)))
        }
        SignInRoutes(admin: admin, store: store, configuration: configuration).register(on: router)

        let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
        let host = configuration.host
        let server: HTTPServerBuilder
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
            let tls = TLSConfiguration.makeServerConfiguration(certificateChain: chain.map { .certificate($0) }, privateKey: .privateKey(key))
            server = try .tls(.http1(), tlsConfiguration: tls)
        } else {
            server = .http1()
        }
        return Application(
            router: router,
            server: server,
            configuration: .init(address: .hostname(host, port: configuration.port), serverName: "ubiquity"),
            onServerRunning: { channel in
                let port = channel.localAddress?.port ?? 0
                let shownHost = host.contains(":") ? "[\(host)]" : host
                await onListening("\(scheme)://\(shownHost):\(port)")
            },
            logger: logger)
    }

    /// Runs until SIGTERM or SIGINT (or cancellation), finishing requests in flight, then closes
    /// the store.
    public func run(onListening: @escaping @Sendable (String) async -> Void = { _ in }) async throws {
        let app = try application(onListening: onListening)
        do {
            try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])
        } catch {
            try? await store.close()
            throw error
        }
        try await store.close()
    }
}
