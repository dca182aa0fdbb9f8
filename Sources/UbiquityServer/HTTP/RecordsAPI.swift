// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import Metrics
import NIOCore
import UbiquityCore
import UbiquityWire

/// The `/database/1/…` endpoints: parses the path, authenticates, decodes the JSON body
/// (whatever its content type), runs the engine and writes CloudKit's response shapes, headers
/// and error statuses.
struct RecordsAPI: Sendable {
    let engine: RecordsEngine
    let authenticator: RecordsAuthenticator
    let configuration: RecordsServerConfiguration
    let logger: Logger
    /// Users: identities, user records and discovery (`users/*`).
    let users: UserDirectory
    /// Per-caller request limits (nil: unlimited).
    let limiter: RateLimiter?
    /// The server-wide limit on request bodies in memory.
    let bodyBudget: RequestBodyBudget
    // push: `subscriptions/*` and `tokens/*` (nil: not offered).
    var subscriptions: SubscriptionsEndpoint? = nil

    /// Operations this server answers (others get BAD_REQUEST naming them).
    static let operations: Set<String> = [
        "records/modify", "records/lookup", "records/query", "records/changes",
        "zones/list", "zones/lookup", "zones/modify", "zones/changes",
        "changes/database", "changes/zone", "users/current", "users/caller",
        "users/discover", "users/lookup/email", "users/lookup/id", "users/lookup/contacts", "users/discoverability",
        "assets/upload", "assets/rereference",
        // push
        "subscriptions/list", "subscriptions/lookup", "subscriptions/modify", "tokens/create", "tokens/register",
    ]

    func respond(to request: Request, context requestContext: some RequestContext) async -> Response {
        let requestID = UUID().uuidString.lowercased()
        let started = DispatchTime.now().uptimeNanoseconds
        var operation = "unknown"
        var rotated: String?
        let response: Response
        do {
            let rawPath = request.uri.path
            let path = try DatabasePath(rawPath: rawPath)
            operation = RecordsAPI.operations.contains(path.operation) ? path.operation : "unsupported"
            var query: [String: String] = [:]
            for (key, value) in request.uri.queryParameters { query[String(key)] = String(value) }
            let rawPathWithQuery = request.uri.query.map { "\(rawPath)?\($0)" } ?? rawPath
            // authenticated before the body is read (issue 24, finding 4): a bad token is refused
            // with nothing collected; a signature covers the body, so only a registered key with
            // a current date gets its body (at most maximumBodySize, within the budget) read
            let stage = try await authenticator.authenticateBeforeBody(
                path: path, query: query, header: { name in HTTPField.Name(name).flatMap { request.headers[$0] } },
                signInURL: signInURL(request: request, path: path, apiToken: query["ckAPIToken"]))
            if case .authenticated(let outcome) = stage {
                rotated = outcome.rotatedToken
                try throttle(outcome.caller, container: path.container, apiToken: query["ckAPIToken"], context: requestContext)
            }
            let maximum = configuration.maximumBodySize
            let reply: [UInt8]
            do {
                reply = try await bodyBudget.collect(request, upTo: maximum, tooLarge: {
                    WireError(.badRequest, "limit exceeded: the request body is larger than \(maximum) bytes")
                }) { buffer in
                    let body = Array(buffer.readableBytesView)
                    let outcome: RecordsAuthenticator.Outcome
                    switch stage {
                    case .authenticated(let authenticated):
                        outcome = authenticated
                    case .signature(let pending):
                        outcome = try authenticator.verify(pending, body: body, rawPath: rawPath, rawPathWithQuery: rawPathWithQuery)
                        try throttle(outcome.caller, container: path.container, apiToken: query["ckAPIToken"], context: requestContext)
                    }
                    return try await handle(path: path, body: body, caller: outcome.caller, request: request, query: query, requestID: requestID)
                }
            } catch let error as RequestBodyBudget.Exhausted {
                throw error.wire
            } catch let error as RequestBodyBudget.BrokenBody {
                throw error.wire
            }
            response = RecordsAPI.json(bytes: reply, status: .ok, requestID: requestID, rotatedToken: rotated)
        } catch var error as WireError {
            error.uuid = requestID
            // every 421 says where to sign in (CloudKit JS-style clients follow it), whichever
            // layer refused the caller
            if error.code == .authenticationRequired, error.redirectURL == nil, let path = try? DatabasePath(rawPath: request.uri.path) {
                error.redirectURL = signInURL(request: request, path: path, apiToken: request.uri.queryParameters["ckAPIToken"].map(String.init))
            }
            response = RecordsAPI.json(error.json(), status: HTTPResponse.Status(code: error.code.httpStatus), requestID: requestID, rotatedToken: rotated,
                                       retryAfter: error.retryAfter)
        } catch let error as UbiquityError where error.code == .serviceUnavailable {
            logger.warning("the store is unavailable", metadata: ["operation": "\(operation)", "error": "\(error)", "request": "\(requestID)"])
            var wire = WireError(.tryAgainLater, "the server's storage is unavailable for now; try again later", retryAfter: configuration.unavailableRetryAfter)
            wire.uuid = requestID
            response = RecordsAPI.json(wire.json(), status: .serviceUnavailable, requestID: requestID, rotatedToken: rotated, retryAfter: wire.retryAfter)
        } catch let error as UbiquityError where error.code == .invalidArgument {
            var wire = WireError(.badRequest, error.message)
            wire.uuid = requestID
            response = RecordsAPI.json(wire.json(), status: .badRequest, requestID: requestID, rotatedToken: rotated)
        } catch {
            logger.error("request failed", metadata: ["operation": "\(operation)", "error": "\(error)", "request": "\(requestID)"])
            var wire = WireError(.internalError, "the server failed to handle the request; it was logged as \(requestID)")
            wire.uuid = requestID
            response = RecordsAPI.json(wire.json(), status: .internalServerError, requestID: requestID, rotatedToken: rotated)
        }
        let elapsed = DispatchTime.now().uptimeNanoseconds - started
        Timer(label: "ubiquity_records_request_duration", dimensions: [("operation", operation)]).recordNanoseconds(Int64(elapsed))
        Counter(label: "ubiquity_records_requests_total", dimensions: [("operation", operation), ("status", String(response.status.code))]).increment()
        return response
    }

    /// Runs an authenticated request whose body is `body`: decodes the JSON, notes the user, runs
    /// the operation and returns the reply's JSON text.
    func handle(path: DatabasePath, body: [UInt8], caller: RecordsCaller, request: Request, query: [String: String], requestID: String) async throws -> [UInt8] {
        let json: JSONValue
        do {
            json = body.allSatisfy({ $0 == 0x20 || $0 == 0x0A || $0 == 0x0D || $0 == 0x09 }) ? .object([:]) : try JSONValue.parse(Data(body))
        } catch {
            throw WireError.badRequest(error)
        }
        let context = RecordsEngine.Context(container: path.container, environment: path.environment, scope: path.scope, caller: caller,
                                            baseURL: baseURL(request: request))
        do {
            try await users.ensure(caller: caller, container: path.container, environment: path.environment)
        } catch {
            logger.warning("could not note the user or create their user record", metadata: ["error": "\(error)", "request": "\(requestID)"])
        }
        // written as bytes: the stored fields go out as they are (RecordsEngine+RecordJSON.swift)
        switch path.operation {
        case "changes/zone":
            return try await engine.zoneChangesBody(WireZoneChangesRequest(json: json), context: context)
        case "records/lookup":
            let request = try WireLookupRecordsRequest(json: json)
            // a lookup of the public database's default zone may name users whose records are made on first use
            if context.scope == .public, (request.zoneID ?? .default).isDefault {
                try await users.ensureUserRecords(named: request.records.map(\.recordName), container: context.container, environment: context.environment)
            }
            return try await engine.lookupRecordsBody(request, context: context)
        case "records/query":
            return try await engine.queryRecordsBody(WireQueryRecordsRequest(json: json), context: context)
        default:
            break
        }
        return try await dispatch(path: path, body: json, context: context,
                                  signInURL: signInURL(request: request, path: path, apiToken: query["ckAPIToken"])).serializedBytes()
    }

    /// Takes a token from the caller's bucket; over the limit, THROTTLED with `retryAfter`. The
    /// caller is the signed-in account, the server-to-server key, or else the API token and the
    /// client's address.
    func throttle(_ caller: RecordsCaller, container: String, apiToken: String?, context requestContext: some RequestContext) throws {
        guard let limiter else { return }
        let key: String
        switch caller.identity {
        case .user(let accountID, _): key = "user:\(accountID)"
        case .serverKey(let keyID): key = "key:\(container):\(keyID)"
        case .anonymous:
            let address = (requestContext as? any RemoteAddressRequestContext)?.remoteAddress?.ipAddress ?? "?"
            key = "api:\(SecretToken.digest(apiToken ?? "").prefix(16)):\(address)"
        }
        if case .limited(let wait) = limiter.take(key) {
            let seconds = RateLimiter.wholeSeconds(wait)
            Counter(label: "ubiquity_records_throttled_total").increment()
            throw WireError(.throttled, "too many requests: at most \(limiter.rate.formatted()) per second (bursts of \(limiter.burst)); retry after \(seconds) s",
                            retryAfter: seconds)
        }
    }

    /// The server's public base URL: `publicURL`, else the scheme and the request's `Host`.
    func baseURL(request: Request) -> String {
        var base = configuration.publicURL ?? {
            let scheme = configuration.tlsCertificatePath == nil ? "http" : "https"
            let host = request.head.authority ?? "\(configuration.host):\(configuration.port)"
            return "\(scheme)://\(host)"
        }()
        while base.hasSuffix("/") { base.removeLast() }
        return base
    }

    func signInURL(request: Request, path: DatabasePath, apiToken: String?) -> String {
        let base = baseURL(request: request)
        var components = URLComponents()
        components.queryItems = [URLQueryItem(name: "container", value: path.container), URLQueryItem(name: "ckAPIToken", value: apiToken ?? "")]
        // the app's origin, so the sign-in page can hand the token back to it when the container allows it
        if let origin = request.headers[.origin], !origin.isEmpty, origin != "null" {
            components.queryItems?.append(URLQueryItem(name: "origin", value: origin))
        }
        let query = (components.percentEncodedQuery ?? "").replacingOccurrences(of: "+", with: "%2B")
        return "\(base)/auth/signin?\(query)"
    }

    func dispatch(path: DatabasePath, body: JSONValue, context: RecordsEngine.Context, signInURL: String) async throws -> JSONValue {
        switch path.operation {
        case "records/modify":
            return try await engine.modifyRecords(WireModifyRecordsRequest(json: body), context: context)
        case "records/changes":
            let request = try WireZoneChangesRequest(recordChangesJSON: body)
            let result = try await engine.zoneChanges(request, context: context)
            guard let zone = result.objectValue?["zones"]?.arrayValue?.first?.objectValue else { return result }
            if let error = WireError(json: .object(zone)) { throw error }
            var members = zone
            members["zoneID"] = nil
            members["reverse"] = .bool(false)
            return .object(members)
        case "zones/list":
            return try await engine.listZones(context: context)
        case "zones/lookup":
            return try await engine.lookupZones(WireReader(body, path: "").zoneIDs("zones"), context: context)
        case "zones/modify":
            let reader = try WireReader(body, path: "")
            let operations = try reader.requiredArray("operations").enumerated().map { try WireZoneOperation(json: $1, path: "operations[\($0)]") }
            return try await engine.modifyZones(operations, context: context)
        case "zones/changes":
            // Apple's docs name the token `metaSyncToken`; MistKit sends and reads `syncToken`: both
            let reader = try WireReader(body, path: "")
            let answer = try await engine.databaseChanges(syncToken: reader.string("metaSyncToken") ?? reader.string("syncToken"),
                                                          resultsLimit: reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                                          tokenKey: "metaSyncToken", context: context)
            guard case .object(var members) = answer, let token = members["metaSyncToken"] else { return answer }
            members["syncToken"] = token
            return .object(members)
        case "changes/database":
            let reader = try WireReader(body, path: "")
            return try await engine.databaseChanges(syncToken: reader.string("syncToken"),
                                                    resultsLimit: reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                                    context: context)
        case "changes/zone":
            return try await engine.zoneChanges(WireZoneChangesRequest(json: body), context: context)
        case "assets/upload":
            return try await engine.requestAssetUploads(body, context: context)
        case "assets/rereference":
            return try await engine.rereferenceAssets(body, context: context)
        case "users/current":
            return try await users.current(context: context, signInURL: signInURL)
        case "users/caller":
            return try await users.caller(context: context, signInURL: signInURL)
        case "users/discover":
            return try await users.discover(body, context: context, signInURL: signInURL)
        case "users/lookup/email":
            return try await users.lookupEmail(body, context: context, signInURL: signInURL)
        case "users/lookup/id":
            return try await users.lookupID(body, context: context, signInURL: signInURL)
        case "users/lookup/contacts":
            return try await users.lookupContacts(context: context, signInURL: signInURL)
        case "users/discoverability":
            return try await users.discoverability(body, context: context, signInURL: signInURL)
        // push: subscriptions and tokens (Subscriptions/SubscriptionsEndpoint.swift)
        case "subscriptions/list", "subscriptions/lookup", "subscriptions/modify", "tokens/create", "tokens/register":
            guard let subscriptions else { throw WireError(.badRequest, "operation \(path.operation) is not available on this server") }
            let baseURL = signInURL.components(separatedBy: "/auth/signin?").first ?? signInURL
            switch path.operation {
            case "subscriptions/list": return try await subscriptions.list(context: context, signInURL: signInURL)
            case "subscriptions/lookup": return try await subscriptions.lookup(body, context: context, signInURL: signInURL)
            case "subscriptions/modify": return try await subscriptions.modify(body, context: context, signInURL: signInURL)
            case "tokens/create": return try await subscriptions.createToken(body, context: context, baseURL: baseURL, signInURL: signInURL)
            default: return try await subscriptions.registerToken(body, context: context, baseURL: baseURL, signInURL: signInURL)
            }
        default:
            throw WireError(.badRequest, "operation \(path.operation) is not available on this server")
        }
    }

    /// A JSON response with CloudKit's headers (and `Retry-After` when given).
    static func json(_ value: JSONValue, status: HTTPResponse.Status, requestID: String, rotatedToken: String?, retryAfter: Int? = nil) -> Response {
        json(bytes: value.serializedBytes(), status: status, requestID: requestID, rotatedToken: rotatedToken, retryAfter: retryAfter)
    }

    /// A response whose body is the JSON text `bytes`.
    static func json(bytes: [UInt8], status: HTTPResponse.Status, requestID: String, rotatedToken: String?, retryAfter: Int? = nil) -> Response {
        var headers: HTTPFields = [
            .contentType: "application/json; charset=UTF-8",
            HTTPField.Name(CloudKitAuthHeaders.cloudKitVersion)!: "1.0",
            HTTPField.Name(CloudKitAuthHeaders.requestUUID)!: requestID,
        ]
        if let rotatedToken { headers[HTTPField.Name(CloudKitAuthHeaders.webAuthToken)!] = rotatedToken }
        if let retryAfter { headers[.retryAfter] = String(retryAfter) }
        return Response(status: status, headers: headers, body: ResponseBody(byteBuffer: ByteBuffer(bytes: bytes)))
    }
}
