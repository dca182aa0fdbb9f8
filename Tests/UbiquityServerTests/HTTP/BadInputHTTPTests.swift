// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Bad input gets the documented error, the server stays up, and nothing is half-written.
@Suite struct BadInputHTTPTests {
    @Test(arguments: StoreKind.available)
    func malformedRequestsAreRefusedAndChangeNothing(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        func expectBadRequest(_ reply: ServerFixture.Reply, mentioning text: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(reply.status == 400, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.errorCode == "BAD_REQUEST", sourceLocation: sourceLocation)
            #expect(reply.json["reason"]?.stringValue?.contains(text) == true, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.json["uuid"] != nil, sourceLocation: sourceLocation)
        }
        // a record the server cannot read is refused alone, as its own item (the request is fine)
        func expectRecordRefused(_ reply: ServerFixture.Reply, mentioning text: String, sourceLocation: SourceLocation = #_sourceLocation) {
            #expect(reply.status == 200, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.items().first?["serverErrorCode"] == "BAD_REQUEST", "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.items().first?["reason"]?.stringValue?.contains(text) == true, "\(reply.body)", sourceLocation: sourceLocation)
            #expect(reply.items().first?["recordName"] == "w", sourceLocation: sourceLocation)
        }
        // malformed JSON, bad UTF-8, nesting 10,000 deep
        expectBadRequest(try await server.send("private", "records/modify", token: server.userToken, rawBody: Array("{\"operations\": [".utf8)), mentioning: "malformed JSON")
        expectBadRequest(try await server.send("private", "records/modify", token: server.userToken, rawBody: Array("{\"operations\":[{\"operationType\":\"create\",\"record\":{\"recordType\":\"N\",\"fields\":{\"a\":{\"value\":\"".utf8) + [0xFF, 0xFE] + Array("\"}}}}]}".utf8)), mentioning: "UTF-8")
        expectBadRequest(try await server.send("private", "records/modify", token: server.userToken, rawBody: Array(#"{"operations":[{"operationType":"create","record":{"recordType":"N","recordName":"nul","fields":{"a":{"value":"a\u0000b"}}}}]}"#.utf8)), mentioning: "NUL")
        let deep = String(repeating: "[", count: 10_000) + String(repeating: "]", count: 10_000)
        expectBadRequest(try await server.send("private", "records/modify", token: server.userToken, rawBody: Array(deep.utf8)), mentioning: "nested deeper")
        // wrong field types, unknown types, heterogeneous lists, lists of lists, bad Base64, bad locations
        let wrongType = try await server.modify([operation("create", "w", fields: ["n": ["value": "seven", "type": "INT64"]])], token: server.userToken)
        expectRecordRefused(wrongType, mentioning: "operations[0].record.fields.n.value: expected an integer for INT64")
        expectRecordRefused(try await server.modify([operation("create", "w", fields: ["n": ["value": 1, "type": "QUATERNION"]])], token: server.userToken), mentioning: "unknown field type QUATERNION")
        expectRecordRefused(try await server.modify([operation("create", "w", fields: ["n": ["value": [1, "two"], "type": "INT64_LIST"]])], token: server.userToken), mentioning: "fields.n.value[1]")
        expectRecordRefused(try await server.modify([operation("create", "w", fields: ["n": ["value": [[1]]]])], token: server.userToken), mentioning: "lists cannot contain lists")
        expectRecordRefused(try await server.modify([operation("create", "w", fields: ["n": ["value": "***", "type": "BYTES"]])], token: server.userToken), mentioning: "Base64")
        expectRecordRefused(try await server.modify([operation("create", "w", fields: ["n": ["value": ["latitude": 91, "longitude": 0], "type": "LOCATION"]])], token: server.userToken), mentioning: "latitude")
        expectRecordRefused(try await server.modify([.object(["operationType": "upsert", "record": ["recordName": "w"]])], token: server.userToken), mentioning: "unknown operation upsert")
        expectRecordRefused(try await server.modify([operation("create", "w", fields: ["bad name": "x"])], token: server.userToken), mentioning: "field name")
        expectBadRequest(try await server.send("private", "records/modify", ["operations": "none"], token: server.userToken), mentioning: "operations: expected an array")
        // 10,000 list items are fine (no limit on list length below the record size)
        let many = JSONValue.array((0..<10_000).map { .integer(Int64($0)) })
        let big = try await server.modify([operation("create", "many", fields: ["n": ["value": many, "type": "INT64_LIST"]])], token: server.userToken)
        #expect(big.items().first?["fields"]?["n"]?["value"]?.arrayValue?.count == 10_000)
        // oversized records and batches
        let huge = String(repeating: "x", count: 1_100_000)
        let oversized = try await server.modify([operation("create", "huge", fields: ["t": .string(huge)])], token: server.userToken)
        #expect(oversized.items().first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(oversized.items().first?["reason"]?.stringValue?.hasPrefix("limit exceeded") == true)
        let tooMany = (0..<201).map { operation("create", "r\($0)") }
        let batch = try await server.modify(tooMany, token: server.userToken)
        expectBadRequest(batch, mentioning: "limit exceeded")
        // one operation per record per request
        expectBadRequest(try await server.modify([operation("create", "same"), operation("forceUpdate", "same")], token: server.userToken), mentioning: "appears twice")
        // nothing of the failed requests was written
        let lookup = try await server.send("private", "records/lookup", ["records": [["recordName": "w"], ["recordName": "huge"], ["recordName": "r0"], ["recordName": "same"]]], token: server.userToken)
        #expect(lookup.items().allSatisfy { $0["serverErrorCode"] == "NOT_FOUND" })
        // huge resultsLimit is clamped, zero refused
        let clamped = try await server.send("private", "records/query", ["query": ["recordType": "Note"], "resultsLimit": 1_000_000_000], token: server.userToken)
        #expect(clamped.status == 200)
        expectBadRequest(try await server.send("private", "records/query", ["query": ["recordType": "Note"], "resultsLimit": 0], token: server.userToken), mentioning: "resultsLimit")
        // paths: '..', unknown version, environment, database and operation
        expectBadRequest(try await server.send("private", "x", token: server.userToken, rawPath: "/database/1/\(server.container)/development/private/records/../../../etc/passwd"), mentioning: "not allowed")
        expectBadRequest(try await server.send("private", "x", token: server.userToken, rawPath: "/database/1/%2e%2e/development/private/records/query"), mentioning: "not allowed")
        expectBadRequest(try await server.send("private", "x", token: server.userToken, rawPath: "/database/2/\(server.container)/development/private/records/query"), mentioning: "version")
        expectBadRequest(try await server.send("private", "x", token: server.userToken, rawPath: "/database/1/\(server.container)/staging/private/records/query"), mentioning: "environment")
        expectBadRequest(try await server.send("private", "x", token: server.userToken, rawPath: "/database/1/\(server.container)/development/secret/records/query"), mentioning: "database")
        expectBadRequest(try await server.send("private", "records/frobnicate", [:], token: server.userToken), mentioning: "records/frobnicate")
        // the server is still fine
        #expect(try await server.send(.GET, "public", "zones/list").status == 200)
    }

    @Test(arguments: StoreKind.available)
    func environmentsAreSeparate(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        _ = try await server.modify([operation("create", "dev-only")], token: server.userToken)
        let production = try await server.send("private", "records/lookup", ["records": [["recordName": "dev-only"]]], token: server.userToken, environment: "production")
        #expect(production.items().first?["serverErrorCode"] == "NOT_FOUND")
    }
}
