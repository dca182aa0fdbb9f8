// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdTesting
import Logging
import NIOCore
import Testing
import UbiquityServer
import UbiquityWire

/// The `/database/1/…` routes at the router, without a socket (HummingbirdTesting's `.router`
/// mode): one route per operation behind the authentication middleware, CloudKit's headers on
/// every answer, errors as CloudKit's JSON.
@Suite struct RecordsRouterTests {
    static let container = "iCloud.org.example.Router"

    /// A server on a fresh SQLite store with a container, its API token and a user's token.
    private static func withApplication(_ body: @escaping @Sendable (any TestClientProtocol, _ apiToken: String, _ userToken: String) async throws -> Void) async throws {
        try await StoreFixture.withStore(.sqlite) { store in
            var logger = Logger(label: "test.router")
            logger.logLevel = .warning
            let configuration = RecordsServerConfiguration()
            let admin = RecordsAdmin(store: store, configuration: configuration, passwordHasher: PasswordHasher(cost: 4))
            let apiToken = try await admin.addContainer(Self.container)
            let userToken = try await admin.addUser("mei", email: nil, password: nil)
            let server = RecordsServer(store: store, configuration: configuration, logger: logger)
            try await server.application().test(.router) { client in try await body(client, apiToken, userToken) }
        }
    }

    private static func path(_ tail: String, apiToken: String, userToken: String? = nil) -> String {
        var query = "ckAPIToken=\(ServerFixture.encode(apiToken))"
        if let userToken { query += "&ckWebAuthToken=\(ServerFixture.encode(userToken))" }
        return "/database/1/\(container)/development/\(tail)?\(query)"
    }

    private static func json(_ response: TestResponse) throws -> JSONValue {
        try JSONValue.parse(Data(response.body.readableBytesView))
    }

    private static func body(_ json: JSONValue) -> ByteBuffer {
        ByteBuffer(bytes: json.serializedBytes())
    }

    /// Every answer carries the request's ID; an error's body names the same one.
    private static func expectCloudKitHeaders(_ response: TestResponse, sourceLocation: SourceLocation = #_sourceLocation) throws {
        let requestID = response.headers[HTTPField.Name("X-Apple-Request-UUID")!]
        #expect(requestID?.count == 36, sourceLocation: sourceLocation)
        #expect(response.headers[HTTPField.Name("X-Apple-CloudKit-Version")!] == "1.0", sourceLocation: sourceLocation)
        if response.status != .ok {
            let uuid = try json(response).objectValue?["uuid"]?.stringValue
            #expect(uuid == requestID, sourceLocation: sourceLocation)
        }
    }

    @Test func operationsRunThroughTheirRoutes() async throws {
        try await Self.withApplication { client, apiToken, userToken in
            let save: JSONValue = .object(["operations": .array([.object([
                "operationType": "create",
                "record": .object(["recordName": "r1", "recordType": "Note", "fields": .object(["title": .object(["value": "hello"])])]),
            ])])])
            try await client.execute(uri: Self.path("private/records/modify", apiToken: apiToken, userToken: userToken), method: .post,
                                     body: Self.body(save)) { response in
                #expect(response.status == .ok)
                try Self.expectCloudKitHeaders(response)
                #expect(try Self.json(response).objectValue?["records"]?.arrayValue?.first?.objectValue?["recordName"]?.stringValue == "r1")
            }
            let lookup: JSONValue = .object(["records": .array([.object(["recordName": "r1"])])])
            try await client.execute(uri: Self.path("private/records/lookup", apiToken: apiToken, userToken: userToken), method: .post,
                                     body: Self.body(lookup)) { response in
                #expect(response.status == .ok)
                let record = try Self.json(response).objectValue?["records"]?.arrayValue?.first?.objectValue
                #expect(record?["fields"]?.objectValue?["title"]?.objectValue?["value"]?.stringValue == "hello")
            }
            // GET as well as POST, and an empty body reads as {}
            try await client.execute(uri: Self.path("public/zones/list", apiToken: apiToken), method: .get) { response in
                #expect(response.status == .ok)
                try Self.expectCloudKitHeaders(response)
                #expect(try Self.json(response).objectValue?["zones"]?.arrayValue?.count == 1)
            }
            // an operation CloudKit documents without the database segment
            try await client.execute(uri: Self.path("subscriptions/lookup", apiToken: apiToken, userToken: userToken), method: .post,
                                     body: Self.body(.object(["subscriptions": .array([])]))) { response in
                #expect(response.status == .ok)
            }
        }
    }

    @Test func pathsThatNameNoOperationAreBadRequests() async throws {
        try await Self.withApplication { client, apiToken, _ in
            let cases: [(uri: String, reason: String)] = [
                (Self.path("public/records/bogus", apiToken: apiToken), "operation records/bogus is not available"),
                (Self.path("public/bogus/thing", apiToken: apiToken), "operation bogus/thing is not available"),
                (Self.path("public/records/modify/extra", apiToken: apiToken), "operation records/modify/extra is not available"),
                (Self.path("tokens/bogus", apiToken: apiToken), "database \"tokens\" is not public, private or shared"),
                (Self.path("everyone/records/query", apiToken: apiToken), "database \"everyone\" is not public, private or shared"),
                ("/database/1/\(Self.container)/staging/public/records/query?ckAPIToken=\(apiToken)", "environment \"staging\" is not development or production"),
                ("/database/2/\(Self.container)/development/public/records/query", "protocol version 2 is not supported"),
            ]
            for (uri, reason) in cases {
                try await client.execute(uri: uri, method: .post, body: Self.body(.object([:]))) { response in
                    #expect(response.status == .badRequest, "\(uri)")
                    try Self.expectCloudKitHeaders(response)
                    let error = try Self.json(response).objectValue
                    #expect(error?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(uri)")
                    #expect(error?["reason"]?.stringValue?.contains(reason) == true, "\(uri): \(error?["reason"]?.stringValue ?? "")")
                }
            }
        }
    }

    @Test func callersAreRefusedAsCloudKitRefusesThem() async throws {
        try await Self.withApplication { client, apiToken, _ in
            // no token at all
            try await client.execute(uri: "/database/1/\(Self.container)/development/public/records/query", method: .post,
                                     body: Self.body(.object(["query": .object(["recordType": "Note"])]))) { response in
                #expect(response.status == .unauthorized)
                try Self.expectCloudKitHeaders(response)
                #expect(try Self.json(response).objectValue?["serverErrorCode"]?.stringValue == "AUTHENTICATION_FAILED")
            }
            // a private database without a signed-in user: 421 with where to sign in
            try await client.execute(uri: Self.path("private/zones/list", apiToken: apiToken), method: .post) { response in
                #expect(response.status.code == 421)
                try Self.expectCloudKitHeaders(response)
                let error = try Self.json(response).objectValue
                #expect(error?["serverErrorCode"]?.stringValue == "AUTHENTICATION_REQUIRED")
                #expect(error?["redirectURL"]?.stringValue?.contains("/auth/signin?container=\(Self.container)") == true)
            }
            // a malformed body is the caller's error, not the server's
            try await client.execute(uri: Self.path("public/records/query", apiToken: apiToken), method: .post,
                                     body: ByteBuffer(string: "{\"query\": ")) { response in
                #expect(response.status == .badRequest)
                let code = try Self.json(response).objectValue?["serverErrorCode"]?.stringValue
                #expect(code == "BAD_REQUEST")
            }
        }
    }

    /// Requests are decoded with Codable straight from the body (`request.decode(as:context:)`):
    /// a mistake is named by its path, as the JSON tree reader names it; a body that is not JSON
    /// says where it breaks; NUL characters and deep nesting are refused before decoding.
    @Test func requestsAreDecodedFromTheBodyAndMistakesNamed() async throws {
        try await Self.withApplication { client, apiToken, userToken in
            let cases: [(tail: String, body: String, reason: String)] = [
                ("public/records/lookup", #"{"records":[{"recordName":5}]}"#, "records[0].recordName: expected a string, got a number"),
                ("public/records/query", #"{"query":{"recordType":"Note"},"resultsLimit":0}"#, "resultsLimit: must be at least 1"),
                ("public/records/query", #"{"query":{"recordType":"Note","filterBy":[{"fieldName":"a","comparator":"LIKE","fieldValue":{"value":1}}]}}"#,
                 "query.filterBy[0].comparator: unknown comparator LIKE"),
                ("private/zones/modify", #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":""}}}]}"#,
                 "operations[0].zone.zoneID.zoneName: a zone name must be 1 to 255 bytes"),
                ("private/changes/zone", #"{"zones":[{"syncToken":"x"}]}"#, "zones[0].zoneID: required, expected a zone ID dictionary"),
                ("private/records/changes", #"{"zoneID":"Z"}"#, "zoneID: expected an object, got a string"),
                ("private/changes/database", #"{"resultsLimit":"many"}"#, "resultsLimit: expected an integer, got a string"),
                ("public/records/lookup", #"{"records": [{"recordName": "a"}"#, "malformed JSON"),
                ("public/records/lookup", #"{"records":[{"recordName":"a\u0000b"}]}"#, "NUL"),
                ("public/records/lookup", String(repeating: "[", count: 100) + String(repeating: "]", count: 100), "nested deeper"),
                ("public/records/lookup", #"["records"]"#, "request body: expected an object, got an array"),
            ]
            for (tail, body, reason) in cases {
                try await client.execute(uri: Self.path(tail, apiToken: apiToken, userToken: userToken), method: .post,
                                         body: ByteBuffer(string: body)) { response in
                    #expect(response.status == .badRequest, "\(body)")
                    try Self.expectCloudKitHeaders(response)
                    let error = try Self.json(response).objectValue
                    #expect(error?["serverErrorCode"]?.stringValue == "BAD_REQUEST", "\(body)")
                    #expect(error?["reason"]?.stringValue?.contains(reason) == true, "\(body): \(error?["reason"]?.stringValue ?? "")")
                }
            }
            // the lenient spellings CloudKit clients send still read: numbers as strings, 0/1 as booleans
            try await client.execute(uri: Self.path("private/changes/database", apiToken: apiToken, userToken: userToken), method: .post,
                                     body: ByteBuffer(string: #"{"resultsLimit":"5","numbersAsStrings":1}"#)) { response in
                #expect(response.status == .ok)
                let answer = try Self.json(response)
                #expect(answer.objectValue?["syncToken"]?.stringValue != nil, "\(answer)")
            }
        }
    }
}
