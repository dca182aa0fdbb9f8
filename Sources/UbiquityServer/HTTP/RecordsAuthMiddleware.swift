// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import UbiquityCore
import UbiquityWire

/// The middleware of the `/database/1/…` routes: parses the path, authenticates the caller
/// (before the body is read, except for a signature, which covers the body), applies the
/// per-caller rate limit, collects the body within the server-wide budget, notes the user, and
/// puts the call (``RecordsCall``) in the request context for the operation's route. Every
/// answer gets CloudKit's headers (`X-Apple-Request-UUID`, the protocol version, a rotated web
/// token); every error becomes CloudKit's JSON error (``WireError`` as `HTTPResponseError`) with
/// the request's ID, and each request is counted and timed per operation (`/metrics`) and added
/// to the Console's request log (``RequestLog``).
struct RecordsAuthMiddleware: RouterMiddleware {
    typealias Context = RecordsRequestContext

    let authenticator: RecordsAuthenticator
    let configuration: RecordsServerConfiguration
    let logger: Logger
    /// Users: notes each caller, creating their user record (`UserDirectory.ensure`).
    let users: UserDirectory
    /// Per-caller request limits (nil: unlimited).
    let limiter: RateLimiter?
    /// The server-wide limit on request bodies in memory.
    let bodyBudget: RequestBodyBudget
    /// The Console's request log and telemetry.
    let requestLog: RequestLog

    func handle(_ request: Request, context: Context, next: (Request, Context) async throws -> Response) async throws -> Response {
        let requestID = UUID().uuidString.lowercased()
        let started = DispatchTime.now().uptimeNanoseconds
        var operation = "unknown"
        var rotated: String?
        var response: Response
        var logged: DatabasePath?
        var errorCode: WireServerErrorCode?
        do {
            let rawPath = request.uri.path
            let path = try DatabasePath(rawPath: rawPath)
            logged = path
            operation = RecordsOperation(rawValue: path.operation)?.rawValue ?? "unsupported"
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            let rawPathWithQuery = request.uri.query.map { "\(rawPath)?\($0)" } ?? rawPath
            // authenticated before the body is read (issue 24, finding 4): a bad token is refused
            // with nothing collected; a signature covers the body, so only a registered key with
            // a current date gets its body (at most maximumBodySize, within the budget) read
            let stage = try await authenticator.authenticateBeforeBody(
                path: path, query: query, header: { name in HTTPField.Name(name).flatMap { request.headers[$0] } })
            if case .authenticated(let outcome) = stage {
                rotated = outcome.rotatedToken
                try throttle(outcome.caller, container: path.container, apiToken: query["ckAPIToken"], context: context)
            }
            let maximum = configuration.maximumBodySize
            do {
                response = try await bodyBudget.collect(request, upTo: maximum, tooLarge: {
                    WireError(.badRequest, "limit exceeded: the request body is larger than \(maximum) bytes")
                }) { buffer in
                    let outcome: RecordsAuthenticator.Outcome
                    switch stage {
                    case .authenticated(let authenticated):
                        outcome = authenticated
                    case .signature(let pending):
                        outcome = try authenticator.verify(pending, body: Array(buffer.readableBytesView), rawPath: rawPath, rawPathWithQuery: rawPathWithQuery)
                        try throttle(outcome.caller, container: path.container, apiToken: query["ckAPIToken"], context: context)
                    }
                    let base = baseURL(request: request)
                    let engineContext = RecordsEngine.Context(container: path.container, environment: path.environment, scope: path.scope,
                                                              caller: outcome.caller, baseURL: base)
                    do {
                        try await users.ensure(caller: outcome.caller, container: path.container, environment: path.environment)
                    } catch {
                        logger.warning("could not note the user or create their user record", metadata: ["error": "\(error)", "request": "\(requestID)"])
                    }
                    var context = context
                    context.call = RecordsCall(path: path, context: engineContext, baseURL: base)
                    // the route decodes its request from the body collected here
                    var request = request
                    request.body = RequestBody(buffer: buffer)
                    return try await next(request, context)
                }
            } catch let error as RequestBodyBudget.Exhausted {
                throw error.wire
            } catch let error as RequestBodyBudget.BrokenBody {
                throw error.wire
            }
        } catch {
            var wire = wireError(error, operation: operation, requestID: requestID)
            wire.uuid = requestID
            errorCode = wire.code
            // every 421 says where to sign in (CloudKit JS-style clients follow it), whichever
            // layer refused the caller: made here only, when a 421 is answered
            if wire.code == .authenticationRequired, wire.redirectURL == nil, let path = try? DatabasePath(rawPath: request.uri.path) {
                wire.redirectURL = signInURL(request: request, path: path, apiToken: request.uri.queryParameters["ckAPIToken"].map(String.init))
            }
            response = try wire.response(from: request, context: context)
        }
        response.headers[HTTPField.Name(CloudKitAuthHeaders.cloudKitVersion)!] = "1.0"
        response.headers[HTTPField.Name(CloudKitAuthHeaders.requestUUID)!] = requestID
        if let rotated { response.headers[HTTPField.Name(CloudKitAuthHeaders.webAuthToken)!] = rotated }
        let elapsed = DispatchTime.now().uptimeNanoseconds - started
        Timer(label: "ubiquity_records_request_duration", dimensions: [("operation", operation)]).recordNanoseconds(Int64(elapsed))
        Counter(label: "ubiquity_records_requests_total", dimensions: [("operation", operation), ("status", String(response.status.code))]).increment()
        if let logged {
            requestLog.record(LoggedRequest(time: RecordsAuthenticator.now, requestID: requestID, container: logged.container, environment: logged.environment,
                                            scope: logged.scope, operation: RecordsOperation(rawValue: logged.operation), status: response.status.code,
                                            nanoseconds: Int64(elapsed), errorCode: errorCode))
        }
        return response
    }

    /// Any error as CloudKit's: an unavailable store is TRY_AGAIN_LATER with `retryAfter`, an
    /// invalid argument BAD_REQUEST, anything else INTERNAL_ERROR (logged with the request ID).
    private func wireError(_ error: any Error, operation: String, requestID: String) -> WireError {
        switch error {
        case let wire as WireError:
            return wire
        case let error as UbiquityError where error.code == .serviceUnavailable:
            logger.warning("the store is unavailable", metadata: ["operation": "\(operation)", "error": "\(error)", "request": "\(requestID)"])
            return WireError(.tryAgainLater, "the server's storage is unavailable for now; try again later", retryAfter: configuration.unavailableRetryAfter)
        case let error as UbiquityError where error.code == .invalidArgument:
            return WireError(.badRequest, error.message)
        default:
            logger.error("request failed", metadata: ["operation": "\(operation)", "error": "\(error)", "request": "\(requestID)"])
            return WireError(.internalError, "the server failed to handle the request; it was logged as \(requestID)")
        }
    }

    /// Takes a token from the caller's bucket; over the limit, THROTTLED with `retryAfter`. The
    /// caller is the signed-in account, the server-to-server key, or else the API token and the
    /// client's address.
    private func throttle(_ caller: RecordsCaller, container: String, apiToken: String?, context: Context) throws {
        guard let limiter else { return }
        let key: String
        switch caller.identity {
        case .user(let accountID, _): key = "user:\(accountID)"
        case .serverKey(let keyID): key = "key:\(container):\(keyID)"
        case .anonymous: key = "api:\(SecretToken.digest(apiToken ?? "").prefix(16)):\(context.remoteAddress?.ipAddress ?? "?")"
        }
        if case .limited(let wait) = limiter.take(key) {
            let seconds = RateLimiter.wholeSeconds(wait)
            Counter(label: "ubiquity_records_throttled_total").increment()
            throw WireError(.throttled, "too many requests: at most \(limiter.rate.formatted()) per second (bursts of \(limiter.burst)); retry after \(seconds) s",
                            retryAfter: seconds)
        }
    }

    /// The server's public base URL (``RecordsServerConfiguration/baseURL(request:)``).
    private func baseURL(request: Request) -> String { configuration.baseURL(request: request) }

    /// The sign-in page for the container, with the app's origin so the page can hand the token
    /// back to it when the container allows it.
    private func signInURL(request: Request, path: DatabasePath, apiToken: String?) -> String {
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "container", value: path.container), URLQueryItem(name: "ckAPIToken", value: apiToken ?? "")]
        if let origin = request.headers[.origin], !origin.isEmpty, origin != "null" {
            components.queryItems?.append(URLQueryItem(name: "origin", value: origin))
        }
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return "\(baseURL(request: request))/auth/signin?\(query)"
    }
}

extension RecordsServerConfiguration {
    /// The server's public base URL: `publicURL`, else the scheme and the request's `Host`.
    func baseURL(request: Request) -> String {
        var base = publicURL ?? {
            let scheme = tlsCertificatePath == nil ? "http" : "https"
            let host = request.head.authority ?? "\(host):\(port)"
            return "\(scheme)://\(host)"
        }()
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }
}
