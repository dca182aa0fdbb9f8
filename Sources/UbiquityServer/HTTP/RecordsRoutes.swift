// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityWire

/// The `/database/1/{container}/{environment}/{database}/…` endpoints: one route per
/// ``RecordsOperation`` in one route group, behind ``RecordsAuthMiddleware`` (which puts the
/// authenticated ``RecordsCall`` in the context). Each route reads its request from the body and
/// answers the operation's JSON; errors are thrown as ``WireError`` (an `HTTPResponseError`).
/// Any other path under `/database` is answered BAD_REQUEST, naming what is wrong with it.
struct RecordsRoutes: Sendable {
    let engine: RecordsEngine
    /// Users: identities, user records and discovery (`users/*`).
    let users: UserDirectory
    /// push: `subscriptions/*` and `tokens/*` (nil: not offered).
    let subscriptions: SubscriptionsEndpoint?
    let middleware: RecordsAuthMiddleware

    /// The path of an operation after `/database/1/`: with the database, and (for the operations
    /// CloudKit documents so) without it.
    static func routePaths(_ operation: RecordsOperation) -> [String] {
        let withDatabase = ":container/:environment/:database/\(operation.rawValue)"
        return operation.mayOmitDatabase ? [withDatabase, ":container/:environment/\(operation.rawValue)"] : [withDatabase]
    }

    func register(on router: Router<RecordsRequestContext>) {
        let group = router.group("database").add(middleware: middleware)
        // what follows each route prefix, for the fallbacks below
        var children: [String: Set<Substring>] = [:]
        for operation in RecordsOperation.allCases {
            for path in Self.routePaths(operation) {
                let route = "1/\(path)"
                for method in Self.methods {
                    group.on(RouterPath(route), method: method) { _, context in try await respond(operation, context: context) }
                }
                let segments = route.split(separator: "/")
                for count in 0...segments.count {
                    children[segments.prefix(count).joined(separator: "/"), default: []].formUnion(segments.dropFirst(count).prefix(1))
                }
            }
        }
        // The router does not backtrack: a path that leaves the routes where only fixed names
        // follow (`…/records/bogus`, `/database/2/…`) reaches the fallback there. Where a
        // parameter follows (the container, the environment) every name matches it anyway.
        let fallbacks = children.filter { $0.value.allSatisfy { !$0.hasPrefix(":") } }.keys.map { $0.isEmpty ? "**" : "\($0)/**" }
        for fallback in fallbacks {
            for method in Self.methods {
                group.on(RouterPath(fallback), method: method) { _, context in try unknownOperation(context: context) }
            }
        }
    }

    /// The methods every operation answers (CloudKit's are POST; GET reads an empty body as `{}`).
    private static let methods: [HTTPRequest.Method] = [.post, .get]

    /// A path under `/database` that names no operation of this server (the middleware has
    /// refused a malformed one already).
    private func unknownOperation(context: RecordsRequestContext) throws -> Response {
        throw WireError(.badRequest, "operation \(try context.authenticatedCall().path.operation) is not available on this server")
    }

    /// Runs `operation` for the call in `context` and answers its JSON (the route matched the
    /// path the middleware parsed, so the call's operation is `operation`).
    func respond(_ operation: RecordsOperation, context: RecordsRequestContext) async throws -> Response {
        let body = try await run(operation, call: context.authenticatedCall())
        return Response(status: .ok, headers: [.contentType: "application/json; charset=UTF-8"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// The operation's answer, as JSON text. Lookups, queries and zone changes are written as
    /// bytes (the stored fields go out as they are: RecordsEngine+RecordJSON.swift).
    private func run(_ operation: RecordsOperation, call: RecordsCall) async throws -> [UInt8] {
        let context = call.context
        switch operation {
        case .changesZone:
            return try await engine.zoneChangesBody(WireZoneChangesRequest(json: call.json()), context: context)
        case .recordsLookup:
            let request = try WireLookupRecordsRequest(json: call.json())
            // a lookup of the public database's default zone may name users whose records are made on first use
            if context.scope == .public, (request.zoneID ?? .default).isDefault {
                try await users.ensureUserRecords(named: request.records.map(\.recordName), container: context.container, environment: context.environment)
            }
            return try await engine.lookupRecordsBody(request, context: context)
        case .recordsQuery:
            return try await engine.queryRecordsBody(WireQueryRecordsRequest(json: call.json()), context: context)
        default:
            return try await answer(operation, call: call).serializedBytes()
        }
    }

    /// The answer of the operations answered as a JSON tree.
    private func answer(_ operation: RecordsOperation, call: RecordsCall) async throws -> JSONValue {
        let context = call.context
        let signInURL = call.signInURL
        switch operation {
        case .recordsModify:
            return try await engine.modifyRecords(WireModifyRecordsRequest(json: call.json()), context: context)
        case .recordsChanges:
            let request = try WireZoneChangesRequest(recordChangesJSON: call.json())
            let result = try await engine.zoneChanges(request, context: context)
            guard let zone = result.objectValue?["zones"]?.arrayValue?.first?.objectValue else { return result }
            if let error = WireError(json: .object(zone)) { throw error }
            var members = zone
            members["zoneID"] = nil
            members["reverse"] = .bool(false)
            return .object(members)
        case .zonesList:
            return try await engine.listZones(context: context)
        case .zonesLookup:
            return try await engine.lookupZones(call.reader().zoneIDs("zones"), context: context)
        case .zonesModify:
            let operations = try call.reader().requiredArray("operations").enumerated().map { try WireZoneOperation(json: $1, path: "operations[\($0)]") }
            return try await engine.modifyZones(operations, context: context)
        case .zonesChanges:
            // Apple's docs name the token `metaSyncToken`; MistKit sends and reads `syncToken`: both
            let reader = try call.reader()
            let answer = try await engine.databaseChanges(syncToken: reader.string("metaSyncToken") ?? reader.string("syncToken"),
                                                          resultsLimit: reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                                          tokenKey: "metaSyncToken", context: context)
            guard case .object(var members) = answer, let token = members["metaSyncToken"] else { return answer }
            members["syncToken"] = token
            return .object(members)
        case .changesDatabase:
            let reader = try call.reader()
            return try await engine.databaseChanges(syncToken: reader.string("syncToken"),
                                                    resultsLimit: reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                                    context: context)
        case .assetsUpload:
            return try await engine.requestAssetUploads(call.json(), context: context)
        case .assetsRereference:
            return try await engine.rereferenceAssets(call.json(), context: context)
        case .usersCurrent:
            return try await users.current(context: context, signInURL: signInURL)
        case .usersCaller:
            return try await users.caller(context: context, signInURL: signInURL)
        case .usersDiscover:
            return try await users.discover(call.json(), context: context, signInURL: signInURL)
        case .usersLookupEmail:
            return try await users.lookupEmail(call.json(), context: context, signInURL: signInURL)
        case .usersLookupID:
            return try await users.lookupID(call.json(), context: context, signInURL: signInURL)
        case .usersLookupContacts:
            return try await users.lookupContacts(context: context, signInURL: signInURL)
        case .usersDiscoverability:
            return try await users.discoverability(call.json(), context: context, signInURL: signInURL)
        case .subscriptionsList, .subscriptionsLookup, .subscriptionsModify, .tokensCreate, .tokensRegister:
            // push: subscriptions and tokens (Subscriptions/SubscriptionsEndpoint.swift)
            guard let subscriptions else { throw WireError(.badRequest, "operation \(operation.rawValue) is not available on this server") }
            switch operation {
            case .subscriptionsList: return try await subscriptions.list(context: context, signInURL: signInURL)
            case .subscriptionsLookup: return try await subscriptions.lookup(call.json(), context: context, signInURL: signInURL)
            case .subscriptionsModify: return try await subscriptions.modify(call.json(), context: context, signInURL: signInURL)
            case .tokensCreate: return try await subscriptions.createToken(call.json(), context: context, baseURL: call.baseURL, signInURL: signInURL)
            default: return try await subscriptions.registerToken(call.json(), context: context, baseURL: call.baseURL, signInURL: signInURL)
            }
        case .recordsLookup, .recordsQuery, .changesZone:
            throw WireError(.internalError, "\(operation.rawValue) is answered as bytes")
        }
    }
}
