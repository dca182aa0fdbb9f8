// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityWire

/// The `/database/1/{container}/{environment}/{database}/…` endpoints: one route per
/// ``RecordsOperation`` in one route group, behind ``RecordsAuthMiddleware`` (which puts the
/// authenticated ``RecordsCall`` in the context). Each route decodes its request straight from
/// the body with Codable (`request.decode(as:context:)`, ``RecordsRequestDecoder``) and answers the
/// operation's JSON; errors are thrown as ``WireError`` (an `HTTPResponseError`).
/// Any other path under `/database` is answered BAD_REQUEST, naming what is wrong with it.
struct RecordsRoutes: Sendable {
    let engine: RecordsEngine
    /// Users: identities, user records and discovery (`users/*`).
    let users: UserDirectory
    /// push: `subscriptions/*` and `tokens/*` (nil: not offered).
    let subscriptions: SubscriptionsEndpoint?
    /// The synced folder's server history (`documents/*`).
    let history: DocumentHistory
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
                    group.on(RouterPath(route), method: method) { request, context in try await respond(operation, request: request, context: context) }
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
    func respond(_ operation: RecordsOperation, request: Request, context: RecordsRequestContext) async throws -> Response {
        let body = try await run(operation, call: context.authenticatedCall(), body: Body(request: request, context: context))
        return Response(status: .ok, headers: [.contentType: "application/json; charset=UTF-8"], body: ResponseBody(byteBuffer: ByteBuffer(bytes: body)))
    }

    /// A route's request body, decoded on demand as the operation's request type.
    struct Body {
        let request: Request
        let context: RecordsRequestContext
        /// The body as `T`.
        func decode<T: Decodable>(_ type: T.Type = T.self) async throws -> T {
            try await request.decode(as: type, context: context)
        }
    }

    /// The operation's answer, as JSON text. Lookups, queries, zone changes and saves are written
    /// as bytes (the stored fields go out as they are: RecordsEngine+RecordJSON.swift).
    private func run(_ operation: RecordsOperation, call: RecordsCall, body: Body) async throws -> [UInt8] {
        let context = call.context
        switch operation {
        case .changesZone:
            return try await engine.zoneChangesBody(body.decode(), context: context)
        case .recordsLookup:
            let request: WireLookupRecordsRequest = try await body.decode()
            // a lookup of the public database's default zone may name users whose records are made on first use
            if context.scope == .public, (request.zoneID ?? .default).isDefault {
                try await users.ensureUserRecords(named: request.records.map(\.recordName), container: context.container, environment: context.environment)
            }
            return try await engine.lookupRecordsBody(request, context: context)
        case .recordsQuery:
            return try await engine.queryRecordsBody(body.decode(), context: context)
        case .recordsModify:
            return try await engine.modifyRecordsBody(body.decode(), context: context)
        default:
            return try await answer(operation, call: call, body: body).serializedBytes()
        }
    }

    /// The answer of the operations answered as a JSON tree. Those without a request type of
    /// their own (assets, users, subscriptions, tokens) decode their body as a ``JSONValue``.
    private func answer(_ operation: RecordsOperation, call: RecordsCall, body: Body) async throws -> JSONValue {
        let context = call.context
        switch operation {
        case .recordsChanges:
            let request: WireRecordChangesRequest = try await body.decode()
            let result = try await engine.zoneChanges(request.changes, context: context)
            guard let zone = result.objectValue?["zones"]?.arrayValue?.first?.objectValue else { return result }
            if let error = WireError(json: .object(zone)) { throw error }
            var members = zone
            members["zoneID"] = nil
            members["reverse"] = .bool(false)
            return .object(members)
        case .zonesList:
            return try await engine.listZones(context: context)
        case .zonesLookup:
            let request: WireLookupZonesRequest = try await body.decode()
            return try await engine.lookupZones(request.zones, context: context)
        case .zonesModify:
            let request: WireModifyZonesRequest = try await body.decode()
            return try await engine.modifyZones(request.operations, context: context)
        case .zonesChanges:
            let request: WireDatabaseChangesRequest = try await body.decode()
            let answer = try await engine.databaseChanges(syncToken: request.syncToken, resultsLimit: request.resultsLimit,
                                                          tokenKey: "metaSyncToken", context: context)
            guard case .object(var members) = answer, let token = members["metaSyncToken"] else { return answer }
            members["syncToken"] = token
            return .object(members)
        case .changesDatabase:
            let request: WireDatabaseChangesRequest = try await body.decode()
            return try await engine.databaseChanges(syncToken: request.syncToken, resultsLimit: request.resultsLimit, context: context)
        case .assetsUpload:
            return try await engine.requestAssetUploads(body.decode(), context: context)
        case .assetsRereference:
            return try await engine.rereferenceAssets(body.decode(), context: context)
        case .usersCurrent:
            return try await users.current(context: context)
        case .usersCaller:
            return try await users.caller(context: context)
        case .usersDiscover:
            return try await users.discover(body.decode(), context: context)
        case .usersLookupEmail:
            return try await users.lookupEmail(body.decode(), context: context)
        case .usersLookupID:
            return try await users.lookupID(body.decode(), context: context)
        case .usersLookupContacts:
            return try await users.lookupContacts(context: context)
        case .usersDiscoverability:
            return try await users.discoverability(body.decode(), context: context)
        case .subscriptionsList, .subscriptionsLookup, .subscriptionsModify, .tokensCreate, .tokensRegister:
            // push: subscriptions and tokens (Subscriptions/SubscriptionsEndpoint.swift)
            guard let subscriptions else { throw WireError(.badRequest, "operation \(operation.rawValue) is not available on this server") }
            switch operation {
            case .subscriptionsList: return try await subscriptions.list(context: context)
            case .subscriptionsLookup: return try await subscriptions.lookup(body.decode(), context: context)
            case .subscriptionsModify: return try await subscriptions.modify(body.decode(), context: context)
            case .tokensCreate: return try await subscriptions.createToken(body.decode(), context: context, baseURL: call.baseURL)
            default: return try await subscriptions.registerToken(body.decode(), context: context, baseURL: call.baseURL)
            }
        case .documentsVersions:
            return try await history.versions(body.decode(), context: context)
        case .documentsVersionsRestore:
            return try await history.restoreVersion(body.decode(), context: context)
        case .documentsTrash:
            return try await history.trash(context: context)
        case .documentsTrashRestore:
            return try await history.restoreTrashed(body.decode(), context: context)
        case .documentsTrashDelete:
            return try await history.deleteTrashed(body.decode(), context: context)
        case .recordsLookup, .recordsQuery, .changesZone, .recordsModify:
            throw WireError(.internalError, "\(operation.rawValue) is answered as bytes")
        }
    }
}
