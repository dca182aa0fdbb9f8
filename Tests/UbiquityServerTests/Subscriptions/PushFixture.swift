// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Servers for push tests: one or more `RecordsServer`s on one store location (each with a
/// store instance of its own, as separate processes would have), a container and two users;
/// helpers for subscriptions, saves, push tokens, long-poll and WebSockets.
final class PushFixture: Sendable {
    struct Server: Sendable {
        let url: String
        let server: RecordsServer
        let task: Task<Void, any Error>
    }

    let container = "iCloud.org.example.Push"
    let apiToken: String
    let userToken: String
    let otherToken: String
    let location: StoreFixture
    let servers: [Server]

    private init(apiToken: String, userToken: String, otherToken: String, location: StoreFixture, servers: [Server]) {
        self.apiToken = apiToken
        self.userToken = userToken
        self.otherToken = otherToken
        self.location = location
        self.servers = servers
    }

    /// `count` servers on one fresh store of `kind`.
    static func start(_ kind: StoreKind, servers count: Int = 1, push: PushConfiguration = PushConfiguration()) async throws -> PushFixture {
        let location = try StoreFixture(kind)
        do {
            let first = try await location.open()
            let configuration = RecordsServerConfiguration()
            let admin = RecordsAdmin(store: first, configuration: configuration, passwordHasher: PasswordHasher(cost: 4))
            let apiToken = try await admin.addContainer("iCloud.org.example.Push")
            let userToken = try await admin.addUser("mei", email: "mei@example.org", password: nil)
            let otherToken = try await admin.addUser("ravi", email: nil, password: nil)
            var servers: [Server] = []
            for index in 0..<count {
                let store = index == 0 ? first : try await location.open()
                servers.append(try await startServer(store: store, configuration: configuration, push: push))
            }
            return PushFixture(apiToken: apiToken, userToken: userToken, otherToken: otherToken, location: location, servers: servers)
        } catch {
            try? await location.destroy()
            throw error
        }
    }

    private static func startServer(store: any RecordStore, configuration: RecordsServerConfiguration, push: PushConfiguration) async throws -> Server {
        var logger = Logger(label: "test.push")
        logger.logLevel = .warning
        let server = RecordsServer(store: store, configuration: configuration, logger: logger, pushConfiguration: push)
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let task = Task {
            let app = try server.application { url in continuation.yield(url) }
            try await app.run()
        }
        var iterator = stream.makeAsyncIterator()
        guard let url = await iterator.next() else { throw UbiquityError(.serviceUnavailable, "the test server did not start") }
        return Server(url: url, server: server, task: task)
    }

    func stop() async {
        for server in servers {
            server.task.cancel()
            _ = try? await server.task.value
            await server.server.push.shutdown()
        }
        try? await location.destroy()
    }

    // MARK: Requests

    struct Reply: Sendable {
        var status: Int
        var json: JSONValue
        func items(_ key: String) -> [JSONValue] { json.objectValue?[key]?.arrayValue ?? [] }
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// A request to `operation` of `database` on server `on`, as the user whose token is given.
    func send(_ database: String, _ operation: String, _ body: JSONValue? = nil, token: String?, on index: Int = 0,
              method: HTTPMethod = .POST) async throws -> Reply {
        var query = "ckAPIToken=\(Self.encode(apiToken))"
        if let token { query += "&ckWebAuthToken=\(Self.encode(token))" }
        let target = "\(servers[index].url)/database/1/\(container)/development/\(database)/\(operation)?\(query)"
        return try await Self.request(target, method: method, body: body)
    }

    static func request(_ url: String, method: HTTPMethod = .GET, body: JSONValue? = nil) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        request.headers.add(name: "Content-Type", value: "text/plain")
        if let body { request.body = .bytes(ByteBuffer(bytes: Array(body.serialized()))) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(120))
        let buffer = try await response.body.collect(upTo: 64 << 20)
        return Reply(status: Int(response.status.code), json: (try? JSONValue.parse(Data(buffer.readableBytesView))) ?? .null)
    }

    /// `subscriptions/modify` with `create` operations.
    func subscribe(_ subscriptions: [JSONValue], database: String = "private", token: String? = nil, on index: Int = 0) async throws -> Reply {
        let operations: [JSONValue] = subscriptions.map { .object(["operationType": "create", "subscription": $0]) }
        return try await send(database, "subscriptions/modify", .object(["operations": .array(operations)]), token: token ?? userToken, on: index)
    }

    /// Saves records (`forceReplace`, so creates and updates alike) in one request.
    func save(_ records: [(name: String, type: String, fields: [String: JSONValue])], database: String = "private", zone: String? = nil,
              token: String? = nil, on index: Int = 0) async throws -> Reply {
        let operations: [JSONValue] = records.map { record in
            .object(["operationType": "forceReplace", "record": .object([
                "recordName": .string(record.name), "recordType": .string(record.type),
                "fields": .object(record.fields.mapValues { .object(["value": $0]) }),
            ])])
        }
        var body: [String: JSONValue] = ["operations": .array(operations)]
        if let zone { body["zoneID"] = .object(["zoneName": .string(zone)]) }
        return try await send(database, "records/modify", .object(body), token: token ?? userToken, on: index)
    }

    /// Deletes records.
    func delete(_ names: [String], database: String = "private", zone: String? = nil, token: String? = nil) async throws -> Reply {
        var body: [String: JSONValue] = ["operations": .array(names.map { .object(["operationType": "forceDelete", "record": .object(["recordName": .string($0)])]) })]
        if let zone { body["zoneID"] = .object(["zoneName": .string(zone)]) }
        return try await send(database, "records/modify", .object(body), token: token ?? userToken)
    }

    /// Creates a zone.
    func createZone(_ name: String, token: String? = nil) async throws {
        _ = try await send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]],
                           token: token ?? userToken)
    }

    /// A push token and its webcourier URL (`tokens/create`), optionally pointed at another server.
    func pushToken(token: String? = nil, on index: Int = 0) async throws -> (token: String, url: String) {
        let reply = try await send("private", "tokens/create", ["apnsEnvironment": "development"], token: token ?? userToken, on: index)
        guard let apns = reply.json["apnsToken"]?.stringValue, let url = reply.json["webcourierURL"]?.stringValue else {
            throw UbiquityError(.protocolError, "tokens/create answered \(reply.json)")
        }
        return (apns, url)
    }

    /// The webcourier URL of a token on server `index`.
    func deliveryURL(_ token: String, on index: Int) -> String { "\(servers[index].url)/push/1/\(token)" }

    /// One long-poll: `{notifications, position, resync}`.
    func poll(_ url: String, position: Int64? = nil, since: String? = nil, timeout: Int = 0) async throws -> Reply {
        var query = ["timeout=\(timeout)"]
        if let position { query.append("position=\(position)") }
        if let since { query.append("since=\(since)") }
        return try await Self.request(url + "?" + query.joined(separator: "&"))
    }

    /// Long-polls from `position` until `count` notifications arrived (or `rounds` polls found
    /// nothing more); returns them and the last position.
    func collect(_ url: String, from position: Int64, count: Int, rounds: Int = 40) async throws -> (payloads: [JSONValue], position: Int64) {
        var payloads: [JSONValue] = []
        var position = position
        var idle = 0
        while payloads.count < count, idle < rounds {
            let reply = try await poll(url, position: position, timeout: 1)
            let batch = reply.items("notifications")
            if batch.isEmpty { idle += 1 } else { idle = 0 }
            payloads += batch
            if case .integer(let next)? = reply.json["position"] { position = next }
        }
        return (payloads, position)
    }

    /// The current head of the log (a zero-time-out poll from "now").
    func head(_ url: String) async throws -> Int64 {
        let reply = try await poll(url, timeout: 0)
        guard case .integer(let position)? = reply.json["position"] else { throw UbiquityError(.protocolError, "no position in \(reply.json)") }
        return position
    }
}

extension JSONValue {
    /// `ck.qry` (or `fet`, `met`) of a notification payload.
    func ck(_ key: String) -> [String: JSONValue]? { objectValue?["ck"]?.objectValue?[key]?.objectValue }
}

/// A query subscription dictionary.
func querySubscription(_ id: String, type: String, filters: [JSONValue] = [], firesOn: [String] = ["create", "update", "delete"],
                       firesOnce: Bool = false, zone: String? = nil, info: JSONValue? = nil) -> JSONValue {
    var members: [String: JSONValue] = [
        "subscriptionID": .string(id), "subscriptionType": "query",
        "query": .object(["recordType": .string(type), "filterBy": .array(filters)]),
        "firesOn": .array(firesOn.map { .string($0) }), "firesOnce": .bool(firesOnce),
    ]
    if let zone {
        members["zoneID"] = .object(["zoneName": .string(zone)])
        members["zoneWide"] = false
    }
    if let info { members["notificationInfo"] = info }
    return .object(members)
}

/// A filter dictionary.
func filter(_ field: String, _ comparator: String, _ value: JSONValue, type: String? = nil) -> JSONValue {
    var fieldValue: [String: JSONValue] = ["value": value]
    if let type { fieldValue["type"] = .string(type) }
    return .object(["fieldName": .string(field), "comparator": .string(comparator), "fieldValue": .object(fieldValue)])
}
