// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Issue 24, finding 3: one user cannot break everyone's saves by fixing a system record type's
/// field types first. The types Ubiquity uses are declared (checked against the declaration, not
/// inferred), and production's schema changes only by deploy (`Users` included).
@Suite struct SystemRecordTypesHTTPTests {
    func save(_ server: ServerFixture, _ operations: [JSONValue], database: String = "private", zone: String? = nil,
              environment: String = "development", token: String) async throws -> [JSONValue] {
        var body: [String: JSONValue] = ["operations": .array(operations)]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        let reply = try await server.send(database, "records/modify", .object(body), token: token, environment: environment)
        #expect(reply.status == 200, "\(reply.body)")
        return reply.items()
    }

    @Test(arguments: StoreKind.available)
    func aWrongTypeSavedFirstChangesNothingForOthers(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let mei = server.userToken, ravi = server.otherToken

        // Ravi goes first, with target as INT64 and a junk field: refused, the schema untouched
        let hijack = try await save(server, [operation("create", "i1", recordType: "UbiquityItem",
                                                       fields: ["path": "a", "kind": "symlink", "target": ["value": 5, "type": "INT64"]])], token: ravi)
        #expect(hijack.first?["serverErrorCode"] == "BAD_REQUEST", "\(hijack)")
        #expect(hijack.first?["reason"]?.stringValue?.contains("expected type STRING") == true, "\(hijack)")
        let junk = try await save(server, [operation("create", "i2", recordType: "UbiquityItem", fields: ["path": "a", "junk": "x"])], token: ravi)
        #expect(junk.first?["serverErrorCode"] == "BAD_REQUEST", "\(junk)")
        // Mei's symlink upload still works, as do conflict versions with INT64 times
        let item = try await save(server, [operation("create", "i3", recordType: "UbiquityItem",
                                                     fields: ["path": "link", "kind": "symlink", "target": "elsewhere", "size": 9])], token: mei)
        #expect(item.first?["serverErrorCode"] == nil, "\(item)")
        let version = try await save(server, [operation("create", "v1", recordType: "UbiquityConflictVersion",
                                                        fields: ["modified": ["value": "yesterday", "type": "STRING"]])], token: ravi)
        #expect(version.first?["serverErrorCode"] == "BAD_REQUEST", "\(version)")
        let good = try await save(server, [operation("create", "v2", recordType: "UbiquityConflictVersion", fields: ["modified": 1_700_000_000_000])], token: mei)
        #expect(good.first?["serverErrorCode"] == nil, "\(good)")

        // KeyValueEntry saved in an ordinary zone with modified as STRING: refused; the store works
        let entry = try await save(server, [operation("create", "k", recordType: "KeyValueEntry", fields: ["modified": ["value": "now", "type": "STRING"]])], token: ravi)
        #expect(entry.first?["serverErrorCode"] == "BAD_REQUEST", "\(entry)")
        let kv = try await save(server, [operation("forceReplace", "color", recordType: "KeyValueEntry", fields: ["value": "blue", "modified": 1_700_000_000_000])],
                                zone: KeyValueRecord.zoneName, token: mei)
        #expect(kv.first?["serverErrorCode"] == nil, "\(kv)")
    }

    @Test(arguments: StoreKind.available)
    func productionUsersFieldsChangeOnlyByDeploy(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let ravi = server.otherToken
        let me = try await server.send(.GET, "public", "users/caller", token: ravi, environment: "production")
        let name = try #require(me.items("users").first?["userRecordName"]?.stringValue, "\(me.body)")
        let junk = try await save(server, [operation("forceUpdate", name, recordType: "Users", fields: ["junk1": "x", "junk2": 2])],
                                  database: "public", environment: "production", token: ravi)
        #expect(junk.first?["serverErrorCode"] == "BAD_REQUEST", "\(junk)")
        #expect(junk.first?["reason"]?.stringValue?.contains("not in the production schema") == true, "\(junk)")
        let schema = try await RecordsAdmin(store: server.store).schema(container: server.container, environment: .production)
        #expect(schema.recordTypes["Users"]?.fields["junk1"] == nil, "production's schema is unchanged")
        // development still grows just in time
        let dev = try await save(server, [operation("forceUpdate", name, recordType: "Users", fields: ["nickname": "r"])], database: "public", token: ravi)
        #expect(dev.first?["serverErrorCode"] == nil, "\(dev)")
    }
}
