// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityWire
import UbiquityCore

/// A CloudKit container on a server that speaks CloudKit Web Services (`CKContainer`): a
/// self-hosted `ubiq serve`, or any compatible server.
///
/// ```swift
/// let container = CloudContainer(identifier: "iCloud.com.example.notes",
///                                serverURL: URL(string: "https://cloud.example.com")!,
///                                credentials: .apiToken(apiToken, webAuthToken: webAuthToken))
/// let database = container.privateCloudDatabase
/// ```
///
/// With an API token and a web-auth token the server rotates the web-auth token on every
/// response (`X-Apple-CloudKit-Web-Auth-Token`); the container keeps the newest one and sends
/// it next (``currentWebAuthToken``, to persist between runs). Server-to-server keys sign
/// every request and reach the public database.
public final class CloudContainer: Sendable {
    /// How requests prove who sends them.
    public enum Credentials: Sendable {
        /// A container API token, and the signed-in user's web-auth token (needed for the
        /// private and shared databases and for writes).
        case apiToken(String, webAuthToken: String? = nil)
        /// A server-to-server key: its ID and the P-256 private key in PEM form.
        case serverToServer(keyID: String, privateKeyPEM: String)
        /// A Ubiquity device token (`ubiq account login`; ``UbiquityAccountFile/Account/deviceToken``):
        /// the signed-in user in any container of that server, with no API token. Ubiquity's
        /// extension; CloudKit's servers do not know it.
        case device(token: String)
    }

    /// The container's identifier (`iCloud.com.example.app`).
    public let containerIdentifier: String
    /// The server's base URL; a path in it is a prefix to every request path.
    public let serverURL: URL
    /// Development or production data.
    public let environment: CloudKitEnvironment
    /// Where the container logs its requests (at debug level, without credentials).
    public let logger: Logger
    let transport: any CloudKitTransport
    let apiToken: String?
    let signer: Result<ServerToServerSigner, CloudKitError>?
    let webAuthToken: Mutex<String?>
    let now: @Sendable () -> Date
    /// How requests refused with `THROTTLED`/`TRY_AGAIN_LATER` (HTTP 429/503) are retried.
    public let retryPolicy: RetryPolicy
    /// The name of the device the requests come from (a Ubiquity extension, sent as
    /// `X-Ubiquity-Device-ID`): the server stamps the records this device changes with it, and
    /// Recently Deleted and version history show it. nil sends none.
    public let deviceName: String?

    /// A container on the server at `serverURL`. Requests go through `transport`
    /// (``HTTPClientTransport`` over its shared client when nil). Requests the server throttles
    /// are retried after the wait it asks for, as `retryPolicy` allows.
    public convenience init(identifier: String, serverURL: URL, environment: CloudKitEnvironment = .development,
                            credentials: Credentials, transport: (any CloudKitTransport)? = nil,
                            logger: Logger = Logger(label: "ubiquity.cloudkit"), retryPolicy: RetryPolicy = RetryPolicy(),
                            deviceName: String? = nil) {
        self.init(identifier: identifier, serverURL: serverURL, environment: environment, credentials: credentials,
                  transport: transport, logger: logger, retryPolicy: retryPolicy, deviceName: deviceName, now: { Date() })
    }

    init(identifier: String, serverURL: URL, environment: CloudKitEnvironment, credentials: Credentials,
         transport: (any CloudKitTransport)?, logger: Logger, retryPolicy: RetryPolicy = RetryPolicy(), deviceName: String? = nil,
         now: @escaping @Sendable () -> Date) {
        containerIdentifier = identifier
        // a header value is printable ASCII: other names travel percent-encoded
        self.deviceName = deviceName.flatMap { $0.isEmpty ? nil : $0 }.map { name in
            name.unicodeScalars.allSatisfy { $0.value >= 0x20 && $0.value < 0x7f && $0 != "%" } ? name : CloudKitHTTPRequest.percentEncode(name)
        }
        self.retryPolicy = retryPolicy
        self.serverURL = serverURL
        self.environment = environment
        self.logger = logger
        self.transport = transport ?? HTTPClientTransport()
        self.now = now
        switch credentials {
        case .apiToken(let token, let webAuth):
            apiToken = token
            webAuthToken = Mutex(webAuth)
            signer = nil
        case .device(let token):
            apiToken = nil
            webAuthToken = Mutex(token)
            signer = nil
        case .serverToServer(let keyID, let pem):
            apiToken = nil
            webAuthToken = Mutex(nil)
            do {
                signer = .success(try ServerToServerSigner(keyID: keyID, privateKeyPEM: pem))
            } catch {
                signer = .failure(CloudKitError.wrap(error))
            }
        }
    }

    /// The public database: readable with the API token alone.
    public var publicCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .public) }
    /// The signed-in user's private database.
    public var privateCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .private) }
    /// The zones other users shared with the signed-in user.
    public var sharedCloudDatabase: CloudDatabase { CloudDatabase(container: self, scope: .shared) }

    /// The database with the given scope (`database(with:)`).
    public func database(with scope: CloudDatabase.Scope) -> CloudDatabase { CloudDatabase(container: self, scope: scope) }

    /// The newest web-auth token: the one given at creation, or the last one the server sent.
    public var currentWebAuthToken: String? { webAuthToken.withLock { $0 } }

    /// The signed-in user's record ID (`users/current`).
    public func userRecordID() async throws -> Record.ID {
        let response = try await send(.public, "users/current", method: "GET", body: nil)
        let reader = try Self.reader(response, "users/current")
        guard let name = try? reader.requiredString("userRecordName") else {
            throw CloudKitError(.internalError, "the server's users/current answer has no userRecordName")
        }
        return Record.ID(recordName: name)
    }

    /// ``userRecordID()`` with a completion handler.
    public func fetchUserRecordID(completionHandler: @escaping @Sendable (Record.ID?, (any Error)?) -> Void) {
        Task {
            do { completionHandler(try await userRecordID(), nil) } catch { completionHandler(nil, error) }
        }
    }

    // MARK: Requests

    /// The request path for `subpath` in the database `scope`.
    func path(_ scope: CloudDatabase.Scope, _ subpath: String) -> String {
        var prefix = serverURL.path
        while prefix.hasSuffix("/") { prefix.removeLast() }
        let container = CloudKitHTTPRequest.percentEncode(containerIdentifier)
        return "\(prefix)/database/1/\(container)/\(environment.rawValue)/\(scope.rawValue)/\(subpath)"
    }

    /// Sends a request and returns the response's JSON; non-2xx answers throw the server's
    /// error mapped to ``CloudKitError``. Throttled requests are retried (``retryPolicy``).
    func send(_ scope: CloudDatabase.Scope, _ subpath: String, method: String = "POST", body: JSONValue?) async throws -> JSONValue {
        var attempt = 1
        while true {
            do {
                return try await sendOnce(scope, subpath, method: method, body: body)
            } catch let error as CloudKitError {
                guard attempt < retryPolicy.maximumAttempts, let delay = retryPolicy.delay(for: error) else { throw error }
                logger.debug("CloudKit request throttled; retrying", metadata: ["path": "\(subpath)", "attempt": "\(attempt)", "delay": "\(delay)"])
                do {
                    try await Task.sleep(for: .milliseconds(Int64((delay * 1000).rounded(.up))))
                } catch {
                    throw CloudKitError.cancelled
                }
                attempt += 1
            }
        }
    }

    /// Sends one request (no retry).
    func sendOnce(_ scope: CloudDatabase.Scope, _ subpath: String, method: String, body: JSONValue?) async throws -> JSONValue {
        if Task.isCancelled { throw CloudKitError.cancelled }
        let bodyData = body?.serialized() ?? Data()
        var request = CloudKitHTTPRequest(serverURL: serverURL, method: method, path: path(scope, subpath), body: bodyData)
        if method != "GET" { request.headers["Content-Type"] = "application/json; charset=utf-8" }
        if let deviceName { request.headers["X-Ubiquity-Device-ID"] = deviceName }
        if let signer {
            request.headers.merge(try signer.get().headers(body: bodyData, path: request.path, date: now()), uniquingKeysWith: { _, new in new })
        } else {
            if let apiToken { request.query.append(.init(name: "ckAPIToken", value: apiToken)) }
            if let token = currentWebAuthToken { request.query.append(.init(name: "ckWebAuthToken", value: token)) }
        }
        logger.debug("CloudKit request", metadata: ["method": "\(method)", "path": "\(request.path)", "bytes": "\(bodyData.count)"])
        let response: CloudKitHTTPResponse
        do {
            response = try await transport.send(request)
        } catch let error as CloudKitError {
            throw error
        } catch is CancellationError {
            throw CloudKitError.cancelled
        } catch {
            throw CloudKitError(.networkFailure, "the request to \(serverURL.absoluteString) failed: \(error)", underlying: error)
        }
        if let rotated = response.header("X-Apple-CloudKit-Web-Auth-Token"), !rotated.isEmpty, apiToken != nil {
            webAuthToken.withLock { $0 = rotated }
        }
        logger.debug("CloudKit response", metadata: ["path": "\(request.path)", "status": "\(response.status)", "bytes": "\(response.body.count)"])
        guard (200..<300).contains(response.status) else {
            var error: CloudKitError
            if let json = try? JSONValue.parse(response.body), let wire = WireError(json: json) {
                error = CloudKitError(wire: wire, httpStatus: response.status)
            } else {
                error = CloudKitError.http(status: response.status, body: response.body)
            }
            if error.retryAfterSeconds == nil, let header = response.header("Retry-After"), let seconds = Double(header), seconds >= 0 {
                error.retryAfterSeconds = seconds
            }
            throw error
        }
        if JSONValue.isBlank(response.body) { return .object([:]) }
        do {
            return try JSONValue.parse(response.body)
        } catch {
            throw CloudKitError(.internalError, "the server's answer to \(subpath) is not JSON: \(error)", underlying: error)
        }
    }

    /// Wraps a response object for reading; anything else is an unexpected-answer error.
    static func reader(_ json: JSONValue, _ subpath: String) throws -> WireReader {
        do {
            return try WireReader(json, path: "")
        } catch {
            throw CloudKitError(.internalError, "the server's answer to \(subpath) is not a JSON object")
        }
    }

    /// Turns a decoding error of a response into an unexpected-answer error.
    static func unexpected<T>(_ subpath: String, _ body: () throws -> T) throws -> T {
        do {
            return try body()
        } catch let error as CloudKitError {
            throw error
        } catch let error as UbiquityError {
            throw CloudKitError(.internalError, "unexpected answer to \(subpath): \(error.message)", underlying: error)
        }
    }
}
