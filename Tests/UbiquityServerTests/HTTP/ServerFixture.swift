// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// A real `RecordsServer` on a loopback port over a store of the given kind, with a container,
/// two users and their tokens; requests go over HTTP as any CloudKit Web Services client sends
/// them.
final class ServerFixture: Sendable {
    let url: String
    let container = "iCloud.org.example.Tests"
    let apiToken: String
    let userToken: String
    let otherToken: String
    let store: any RecordStore
    /// The server (its asset service, garbage collection).
    let server: RecordsServer
    let task: Task<Void, any Error>
    let cleanup: @Sendable () async throws -> Void

    /// A reply: status, JSON body, headers.
    struct Reply: Sendable {
        var status: Int
        var json: JSONValue
        var headers: [String: String]
        var body: String
        /// The `records` (or other) array.
        func items(_ key: String = "records") -> [JSONValue] { json.objectValue?[key]?.arrayValue ?? [] }
        /// `serverErrorCode` of the whole reply.
        var errorCode: String? { json.objectValue?["serverErrorCode"]?.stringValue }
    }

    private init(url: String, apiToken: String, userToken: String, otherToken: String, store: any RecordStore, server: RecordsServer,
                 task: Task<Void, any Error>, cleanup: @escaping @Sendable () async throws -> Void) {
        self.url = url
        self.apiToken = apiToken
        self.userToken = userToken
        self.otherToken = otherToken
        self.store = store
        self.server = server
        self.task = task
        self.cleanup = cleanup
    }

    /// Starts a server; with `assets`, it keeps asset content in a temporary folder (removed by
    /// `stop()`).
    static func start(_ kind: StoreKind, configuration: RecordsServerConfiguration = .init(), assets: Bool = false) async throws -> ServerFixture {
        let (store, storeCleanup) = try await StoreFixture.make(kind)
        var configuration = configuration
        var cleanup = storeCleanup
        if assets {
            let blobs = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-blobs-\(UUID().uuidString)")
            configuration.blobsDirectory = blobs.path
            cleanup = {
                try? FileManager.default.removeItem(at: blobs)
                try await storeCleanup()
            }
        }
        var logger = Logger(label: "test.server")
        logger.logLevel = .warning
        let admin = RecordsAdmin(store: store, configuration: configuration, passwordHasher: PasswordHasher(cost: 4))
        let apiToken = try await admin.addContainer("iCloud.org.example.Tests")
        let userToken = try await admin.addUser("mei", email: "mei@example.org", password: "correct horse")
        let otherToken = try await admin.addUser("ravi", email: nil, password: nil)
        let server = try await RecordsServer.open(store: store, configuration: configuration, logger: logger,
                                                  blobConfiguration: FileBlobStore.Configuration(syncBeforeCommit: false))
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let task = Task {
            let app = try server.application { url in continuation.yield(url) }
            try await app.run()
        }
        var iterator = stream.makeAsyncIterator()
        guard let url = await iterator.next() else { throw UbiquityError(.serviceUnavailable, "the test server did not start") }
        return ServerFixture(url: url, apiToken: apiToken, userToken: userToken, otherToken: otherToken, store: store, server: server,
                             task: task, cleanup: cleanup)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
        try? await store.close()
        try? await cleanup()
    }

    static func encode(_ text: String) -> String {
        var allowed = CharacterSet.alphanumerics
        allowed.insert(charactersIn: "-._~")
        return text.addingPercentEncoding(withAllowedCharacters: allowed) ?? text
    }

    /// The path of an operation.
    func path(_ database: String, _ operation: String, environment: String = "development", container: String? = nil) -> String {
        "/database/1/\(container ?? self.container)/\(environment)/\(database)/\(operation)"
    }

    /// Sends a request; `token` is the web-auth token (nil: API token only; "" no API token).
    func send(_ database: String, _ operation: String, _ body: JSONValue? = nil, token: String? = nil,
              rawBody: [UInt8]? = nil, apiToken: String? = nil, environment: String = "development", rawPath: String? = nil,
              headers: [(String, String)] = [], contentType: String = "text/plain") async throws -> Reply {
        try await send(.POST, database, operation, body, token: token, rawBody: rawBody, apiToken: apiToken, environment: environment,
                       rawPath: rawPath, headers: headers, contentType: contentType)
    }

    /// Sends a request with the given method.
    func send(_ method: HTTPMethod, _ database: String, _ operation: String, _ body: JSONValue? = nil, token: String? = nil,
              rawBody: [UInt8]? = nil, apiToken: String? = nil, environment: String = "development", rawPath: String? = nil,
              headers: [(String, String)] = [], contentType: String = "text/plain") async throws -> Reply {
        var query = "ckAPIToken=\(ServerFixture.encode(apiToken ?? self.apiToken))"
        if apiToken == "" { query = "" }
        if let token { query += "&ckWebAuthToken=\(ServerFixture.encode(token))" }
        let target = (rawPath ?? path(database, operation, environment: environment)) + (query.isEmpty ? "" : "?" + query)
        var request = HTTPClientRequest(url: url + target)
        request.method = method
        request.headers.add(name: "Content-Type", value: contentType)
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let bytes = rawBody ?? body.map({ Array($0.serialized()) }) {
            request.body = .bytes(ByteBuffer(bytes: bytes))
        }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let buffer = try await response.body.collect(upTo: 64 << 20)
        let text = String(buffer: buffer)
        let json = (try? JSONValue.parse(Data(text.utf8))) ?? .null
        var headerMap: [String: String] = [:]
        for header in response.headers { headerMap[header.name.lowercased()] = header.value }
        return Reply(status: Int(response.status.code), json: json, headers: headerMap, body: text)
    }

    /// `records/modify` with the given operations (as JSON).
    func modify(_ operations: [JSONValue], database: String = "private", zone: String? = nil, atomic: Bool? = nil,
                token: String?, extra: [String: JSONValue] = [:]) async throws -> Reply {
        var body: [String: JSONValue] = ["operations": .array(operations)]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        if let atomic { body["atomic"] = .bool(atomic) }
        for (key, value) in extra { body[key] = value }
        return try await send(database, "records/modify", .object(body), token: token)
    }
}

/// A CloudKit operation dictionary.
func operation(_ type: String, _ name: String?, recordType: String? = "Note", tag: String? = nil,
               fields: [String: JSONValue]? = nil) -> JSONValue {
    var record: [String: JSONValue] = [:]
    if let name { record["recordName"] = .string(name) }
    if let recordType { record["recordType"] = .string(recordType) }
    if let tag { record["recordChangeTag"] = .string(tag) }
    if let fields { record["fields"] = .object(fields.mapValues { value in
        if case .object(let members) = value, members["value"] != nil { return value }
        return .object(["value": value])
    }) }
    return .object(["operationType": .string(type), "record": .object(record)])
}

extension JSONValue {
    /// A member of an object.
    subscript(key: String) -> JSONValue? { objectValue?[key] }
    /// An element of an array.
    subscript(index: Int) -> JSONValue? {
        guard let array = arrayValue, array.indices.contains(index) else { return nil }
        return array[index]
    }
}
