// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// `subscriptions/list|lookup|modify` and `tokens/create|register`, with CloudKit's request
/// and response shapes and per-item errors (`{subscriptionID, serverErrorCode, reason}`).
package struct SubscriptionsEndpoint: Sendable {
    /// The storage.
    package let store: any RecordStore
    /// Limits (token lifetime).
    package let configuration: PushConfiguration
    let now: @Sendable () -> Int64

    /// Makes the endpoint.
    package init(store: any RecordStore, configuration: PushConfiguration = PushConfiguration(),
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.store = store
        self.configuration = configuration
        self.now = now
    }

    /// The subscriber (a signed-in user) and the database a request's subscriptions watch.
    static func subscriber(_ context: RecordsEngine.Context) throws -> (user: String, database: DatabaseKey) {
        switch context.caller.identity {
        case .anonymous:
            throw WireError(.authenticationRequired, "subscriptions belong to a signed-in user; sign in first")
        case .serverKey:
            throw WireError(.accessDenied, "server-to-server keys cannot subscribe: notifications go to a signed-in user's devices")
        case .user(_, let name):
            let database = DatabaseKey(container: context.container, environment: context.environment, scope: context.scope,
                                       owner: context.scope == .public ? "" : name)
            return (name, database)
        }
    }

    /// The owner written in zone IDs of responses.
    static func ownerName(_ database: DatabaseKey) -> String { database.scope == .public ? "_defaultOwner" : database.owner }

    // MARK: subscriptions/*

    /// `subscriptions/list`: the caller's subscriptions on the database.
    package func list(context: RecordsEngine.Context) async throws -> JSONValue {
        let (user, database) = try Self.subscriber(context)
        let found = try await store.read { tx in try await tx.subscriptionStore().subscriptions(database: database, subscriber: user) }
        return .object(["subscriptions": .array(found.map { $0.json(ownerRecordName: Self.ownerName(database)) })])
    }

    /// `subscriptions/lookup`: `{"subscriptions": [{"subscriptionID"}]}` → each subscription or a
    /// NOT_FOUND item. On the public path (also where a path without a database lands) the
    /// caller's private subscriptions are looked in too, as the documented path has no database.
    package func lookup(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let (user, database) = try Self.subscriber(context)
        let reader = try WireReader(body, path: "")
        let items = try reader.requiredArray("subscriptions")
        guard items.count <= WireLimits.operationsPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(items.count) subscriptions; a lookup may ask for at most \(WireLimits.operationsPerRequest)")
        }
        let ids = try items.enumerated().map { index, item in
            try WireReader(item, path: "subscriptions[\(index)]").requiredString("subscriptionID")
        }
        let fallback = database.scope == .public
            ? DatabaseKey(container: database.container, environment: database.environment, scope: .private, owner: user) : nil
        let found: [(StoredSubscription, DatabaseKey)?] = try await store.read { tx in
            let subscriptions = try tx.subscriptionStore()
            return try await ids.asyncMap { id in
                if let subscription = try await subscriptions.subscription(database: database, subscriber: user, id: id) { return (subscription, database) }
                if let fallback, let subscription = try await subscriptions.subscription(database: fallback, subscriber: user, id: id) { return (subscription, fallback) }
                return nil
            }
        }
        let results: [JSONValue] = zip(ids, found).map { id, match in
            guard let (subscription, key) = match else {
                var error = WireError(.notFound, "subscription \(id) does not exist")
                error.subscriptionID = id
                return error.json()
            }
            return subscription.json(ownerRecordName: Self.ownerName(key))
        }
        return .object(["subscriptions": .array(results)])
    }

    /// `subscriptions/modify`: `create` (an existing ID is replaced, as saving a subscription
    /// does in CloudKit), `update` (NOT_FOUND when missing), `delete`. A malformed subscription
    /// (bad query, filter, type, zone) is a BAD_REQUEST item; the other items still apply.
    package func modify(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let (user, database) = try Self.subscriber(context)
        let reader = try WireReader(body, path: "")
        let operations = try reader.requiredArray("operations")
        guard operations.count <= WireLimits.operationsPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(operations.count) operations; a request may have at most \(WireLimits.operationsPerRequest)")
        }
        let timestamp = now()
        // Decode every operation first: a malformed one fails alone.
        let decoded: [Result<SubscriptionOperation, WireError>] = operations.enumerated().map { index, json in
            do {
                return .success(try SubscriptionOperation(json: json, path: "operations[\(index)]", database: database, subscriber: user, createdAt: timestamp))
            } catch {
                var wire = WireError.badRequest(error)
                wire.subscriptionID = json.objectValue?["subscription"]?.objectValue?["subscriptionID"]?.stringValue
                return .failure(wire)
            }
        }
        let results: [Result<JSONValue, WireError>] = try await store.write { tx in
            let subscriptions = try tx.subscriptionStore()
            return try await decoded.asyncMap { item -> Result<JSONValue, WireError> in
                guard case .success(let operation) = item else {
                    if case .failure(let error) = item { return .failure(error) }
                    return .failure(WireError(.internalError, "unreachable"))
                }
                let id = operation.subscription.subscriptionID
                switch operation.type {
                case .create:
                    try await subscriptions.putSubscription(operation.subscription)
                    return .success(operation.subscription.json(ownerRecordName: Self.ownerName(database)))
                case .update:
                    guard try await subscriptions.subscription(database: database, subscriber: user, id: id) != nil else {
                        var error = WireError(.notFound, "subscription \(id) does not exist; create it first")
                        error.subscriptionID = id
                        return .failure(error)
                    }
                    try await subscriptions.putSubscription(operation.subscription)
                    return .success(operation.subscription.json(ownerRecordName: Self.ownerName(database)))
                case .delete:
                    guard try await subscriptions.deleteSubscription(database: database, subscriber: user, id: id) else {
                        var error = WireError(.notFound, "subscription \(id) does not exist")
                        error.subscriptionID = id
                        return .failure(error)
                    }
                    return .success(.object(["subscriptionID": .string(id), "deleted": .bool(true)]))
                }
            }
        }
        return .object(["subscriptions": .array(results.map { result in
            switch result {
            case .success(let json): return json
            case .failure(let error): return error.json()
            }
        })])
    }

    // MARK: tokens/*

    /// `tokens/create`: a fresh push token for the signed-in user, and the URL that delivers the
    /// user's notifications by long-poll (plain GET) or WebSocket (upgrade).
    package func createToken(_ body: JSONValue, context: RecordsEngine.Context, baseURL: String) async throws -> JSONValue {
        let user = try Self.tokenUser(context)
        let reader = try WireReader(body, path: "")
        let environment = try Self.apnsEnvironment(reader.string("apnsEnvironment") ?? context.environment.rawValue, path: "apnsEnvironment")
        let token = SecretToken.generate()
        let stored = StoredPushToken(key: NotificationLogKey(container: context.container, environment: context.environment, user: user),
                                     apnsEnvironment: environment, createdAt: now(), expiresAt: now() + configuration.tokenLifetime * 1000)
        let digest = SecretToken.digest(token)
        let saved = try await store.write { tx in try await tx.subscriptionStore().putPushToken(digest: digest, token: stored) }
        guard saved else { throw WireError(.internalError, "a fresh push token collided with another; try again") }
        return .object([
            "apnsEnvironment": .string(environment),
            "apnsToken": .string(token),
            "webcourierURL": .string(Self.webcourierURL(baseURL: baseURL, token: token)),
        ])
    }

    /// `tokens/register`: binds a push token (a device's, or one from `tokens/create`) to the
    /// signed-in user. A token bound to another user is refused (BAD_REQUEST).
    package func registerToken(_ body: JSONValue, context: RecordsEngine.Context, baseURL: String) async throws -> JSONValue {
        let user = try Self.tokenUser(context)
        let reader = try WireReader(body, path: "")
        let environment = try Self.apnsEnvironment(reader.requiredString("apnsEnvironment"), path: "apnsEnvironment")
        let token = try reader.requiredString("apnsToken")
        guard !token.isEmpty, token.utf8.count <= 512, token.unicodeScalars.allSatisfy({ $0.value > 0x20 && $0.value < 0x7F && $0 != "/" && $0 != "?" && $0 != "#" && $0 != "%" }) else {
            throw WireError(.badRequest, "apnsToken: expected 1 to 512 printable ASCII characters without '/', '?', '#', '%' or spaces")
        }
        let stored = StoredPushToken(key: NotificationLogKey(container: context.container, environment: context.environment, user: user),
                                     apnsEnvironment: environment, createdAt: now(), expiresAt: now() + configuration.tokenLifetime * 1000)
        let digest = SecretToken.digest(token)
        let saved = try await store.write { tx in try await tx.subscriptionStore().putPushToken(digest: digest, token: stored) }
        guard saved else { throw WireError(.badRequest, "apnsToken: the token is registered to another user") }
        return .object([
            "apnsEnvironment": .string(environment),
            "apnsToken": .string(token),
            "webcourierURL": .string(Self.webcourierURL(baseURL: baseURL, token: token)),
        ])
    }

    static func tokenUser(_ context: RecordsEngine.Context) throws -> String {
        switch context.caller.identity {
        case .user(_, let name): return name
        case .serverKey: throw WireError(.accessDenied, "server-to-server keys cannot receive notifications")
        case .anonymous:
            throw WireError(.authenticationRequired, "push tokens belong to a signed-in user; sign in first")
        }
    }

    static func apnsEnvironment(_ value: String, path: String) throws -> String {
        guard value == "development" || value == "production" else {
            throw WireError(.badRequest, "\(path): expected development or production, got \(value.debugDescription)")
        }
        return value
    }

    /// `BASE/push/1/TOKEN`: long-poll with a GET, WebSocket with an upgrade.
    static func webcourierURL(baseURL: String, token: String) -> String {
        var base = baseURL
        while base.hasSuffix("/") { base.removeLast() }
        return "\(base)/push/1/\(CloudKitPercentEncoding.encode(token))"
    }
}

/// Percent-encoding of a path segment (everything but `A–Z a–z 0–9 - . _ ~`).
enum CloudKitPercentEncoding {
    static func encode(_ text: String) -> String {
        var allowed = CharacterSet(charactersIn: "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-._~")
        allowed.remove(charactersIn: "")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }
}

/// One `subscriptions/modify` operation, decoded and checked.
struct SubscriptionOperation: Sendable {
    enum OperationType: String, Sendable {
        case create, update, delete
    }

    var type: OperationType
    var subscription: StoredSubscription

    /// Reads `{"operationType", "subscription": {…}}` for `subscriber`'s subscriptions on
    /// `database`. Errors name the path (they become BAD_REQUEST items).
    init(json: JSONValue, path: String, database: DatabaseKey, subscriber: String, createdAt: Int64) throws {
        let reader = try WireReader(json, path: path)
        let typeName = try reader.requiredString("operationType")
        guard let type = OperationType(rawValue: typeName) else {
            throw WireReader.invalid(reader.path("operationType"), "unknown operation \(typeName); expected create, update or delete")
        }
        self.type = type
        guard let body = try reader.object("subscription") else { throw WireReader.missing(reader.path("subscription"), "a subscription dictionary") }
        let id = try body.string("subscriptionID") ?? (type == .create ? UUID().uuidString : nil)
        guard let id else { throw WireReader.missing(body.path("subscriptionID"), "a string") }
        guard !id.isEmpty, id.utf8.count <= 255, !id.unicodeScalars.contains(where: { $0.value < 0x20 }) else {
            throw WireReader.invalid(body.path("subscriptionID"), "a subscription ID must be 1 to 255 bytes without control characters")
        }
        if type == .delete {
            subscription = StoredSubscription(database: database, subscriber: subscriber, subscriptionID: id, kind: .query, createdAt: createdAt)
            return
        }
        subscription = try Self.read(body, id: id, database: database, subscriber: subscriber, createdAt: createdAt)
    }

    static func read(_ body: WireReader, id: String, database: DatabaseKey, subscriber: String, createdAt: Int64) throws -> StoredSubscription {
        let typeName = try body.requiredString("subscriptionType")
        guard let kind = StoredSubscription.Kind(rawValue: typeName.lowercased()) else {
            throw WireReader.invalid(body.path("subscriptionType"), "unknown subscription type \(typeName); expected query, zone or database")
        }
        let info = try body.value("notificationInfo")
        if let info, info.objectValue == nil { throw WireReader.mismatch(body.path("notificationInfo"), expected: "an object", got: info) }
        let zoneID = try body.object("zoneID").map { try WireZoneID(reader: $0) }
        if let owner = zoneID?.ownerRecordName, database.scope == .private, owner != database.owner, owner != "__defaultOwner__" {
            throw WireReader.invalid(body.path("zoneID.ownerRecordName"), "zone belongs to another user; subscribe to your own zones")
        }
        switch kind {
        case .query:
            guard database.scope != .shared else {
                throw WireReader.invalid(body.path("subscriptionType"), "the shared database supports database subscriptions only")
            }
            guard let queryJSON = try body.value("query") else { throw WireReader.missing(body.path("query"), "a query dictionary") }
            let query = try WireQuery(json: queryJSON, path: body.path("query"))
            guard !query.recordType.isEmpty else { throw WireReader.invalid(body.path("query.recordType"), "a record type is required") }
            for (index, filter) in query.filterBy.enumerated() {
                try checkFilter(filter, path: "\(body.path("query")).filterBy[\(index)]")
            }
            var firesOn = StoredSubscription.FiresOn()
            if let names = try body.strings("firesOn") {
                for (index, name) in names.enumerated() {
                    switch name.lowercased() {
                    case "create": firesOn.insert(.create)
                    case "update": firesOn.insert(.update)
                    case "delete": firesOn.insert(.delete)
                    default: throw WireReader.invalid("\(body.path("firesOn"))[\(index)]", "unknown event \(name); expected create, update or delete")
                    }
                }
                guard !firesOn.isEmpty else { throw WireReader.invalid(body.path("firesOn"), "a query subscription must fire on at least one of create, update, delete") }
            } else {
                firesOn = .all
            }
            let zoneWide = try body.bool("zoneWide") ?? (zoneID == nil)
            if database.scope == .public, let zoneID, !zoneID.isDefault {
                throw WireReader.invalid(body.path("zoneID"), "the public database has only the default zone")
            }
            return StoredSubscription(database: database, subscriber: subscriber, subscriptionID: id, kind: .query, query: query,
                                      zoneName: zoneWide ? nil : (zoneID ?? .default).zoneName, zoneWide: zoneWide, firesOn: firesOn,
                                      firesOnce: try body.bool("firesOnce") ?? false, notificationInfo: info, createdAt: createdAt)
        case .zone:
            guard database.scope == .private else {
                throw WireReader.invalid(body.path("subscriptionType"), "zone subscriptions are supported in the private database only")
            }
            guard let zoneID else { throw WireReader.missing(body.path("zoneID"), "the zone ID of a zone subscription") }
            return StoredSubscription(database: database, subscriber: subscriber, subscriptionID: id, kind: .zone, zoneName: zoneID.zoneName,
                                      zoneWide: false, firesOn: .all, notificationInfo: info, createdAt: createdAt)
        case .database:
            guard database.scope != .public else {
                throw WireReader.invalid(body.path("subscriptionType"), "database subscriptions are supported in the private and shared databases only")
            }
            return StoredSubscription(database: database, subscriber: subscriber, subscriptionID: id, kind: .database, zoneWide: true,
                                      firesOn: .all, notificationInfo: info, createdAt: createdAt)
        }
    }

    /// Refuses filters whose value cannot mean anything for their comparator (they would never
    /// match, silently).
    static func checkFilter(_ filter: WireFilter, path: String) throws {
        let isList: Bool
        if case .list = filter.fieldValue { isList = true } else { isList = false }
        switch filter.comparator {
        case .in, .notIn, .listContainsAny, .notListContainsAny, .listContainsAll, .notListContainsAll:
            guard isList else { throw WireReader.invalid("\(path).fieldValue", "\(filter.comparator.rawValue) needs a list value") }
        case .beginsWith, .notBeginsWith, .listMemberBeginsWith, .notListMemberBeginsWith, .containsAllTokens, .containsAnyTokens:
            guard case .string = filter.fieldValue else { throw WireReader.invalid("\(path).fieldValue", "\(filter.comparator.rawValue) needs a STRING value") }
        case .lessThan, .lessThanOrEquals, .greaterThan, .greaterThanOrEquals:
            guard !isList else { throw WireReader.invalid("\(path).fieldValue", "\(filter.comparator.rawValue) needs a single value, not a list") }
        case .equals, .notEquals, .near, .listContains, .notListContains:
            break
        }
    }
}
