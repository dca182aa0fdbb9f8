// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// `records/modify` says where a batch sits in its zone's change history (a Ubiquity
/// extension: `syncTokenBefore` and `syncToken`), when its own changes are all that happened
/// in between, so a client that fetched up to `syncTokenBefore` may continue from `syncToken`.
@Suite struct ModifyTokensHTTPTests {
    func zoneChanges(_ server: ServerFixture, _ zone: String, token: JSONValue = .null) async throws -> (records: [String], token: JSONValue) {
        let reply = try await server.send("private", "changes/zone", ["zones": [["zoneID": ["zoneName": .string(zone)], "syncToken": token]]],
                                          token: server.userToken)
        let entry = try #require(reply.items("zones").first)
        return ((entry["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }, entry["syncToken"] ?? .null)
    }

    @Test(arguments: StoreKind.available)
    func modifyAnswersTheZoneTokensAroundItsOwnChanges(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        _ = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Docs"]]]]],
                                  token: server.userToken)
        let start = try await zoneChanges(server, "Docs")
        // a batch of saves: before is the token fetched last, after the token a fetch gives now
        let first = try await server.modify((0..<5).map { operation("create", "r\($0)", fields: ["i": .integer(Int64($0))]) }, zone: "Docs",
                                            atomic: false, token: server.userToken)
        #expect(first.json["syncTokenBefore"] == start.token)
        let fetched = try await zoneChanges(server, "Docs", token: start.token)
        #expect(fetched.records == ["r0", "r1", "r2", "r3", "r4"])
        #expect(first.json["syncToken"] == fetched.token)
        // the next batch starts where the last one ended; nothing comes back after it
        let tag = try #require(first.items().first?["recordChangeTag"]?.stringValue)
        let second = try await server.modify([operation("update", "r0", tag: tag, fields: ["i": 10]), operation("forceDelete", "r1", recordType: nil)],
                                             zone: "Docs", atomic: false, token: server.userToken)
        #expect(second.json["syncTokenBefore"] == first.json["syncToken"])
        let after = try #require(second.json["syncToken"])
        #expect(try await zoneChanges(server, "Docs", token: after).records.isEmpty)
        #expect(try await zoneChanges(server, "Docs", token: fetched.token).records == ["r0", "r1"])
        // a refused operation changes nothing: the others' tokens still come
        let mixed = try await server.modify([operation("update", "r2", tag: "stale", fields: ["i": 1]), operation("create", "r9")], zone: "Docs",
                                            atomic: false, token: server.userToken)
        #expect(mixed.items().first?["serverErrorCode"] == "CONFLICT")
        #expect(mixed.json["syncTokenBefore"] == after)
        #expect(try await zoneChanges(server, "Docs", token: after).records == ["r9"])
        // nothing changed (every operation refused): no tokens
        let refused = try await server.modify([operation("update", "r2", tag: "stale", fields: ["i": 1])], zone: "Docs", atomic: false,
                                              token: server.userToken)
        #expect(refused.json["syncTokenBefore"] == nil)
        #expect(refused.json["syncToken"] == nil)
    }

    @Test(arguments: StoreKind.available)
    func aZoneMadeByTheBatchStartsFromTheNoZoneToken(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let zone = RecordsEngine.ReservedZone.documents
        let none = try await zoneChanges(server, zone)
        #expect(none.records.isEmpty)
        let made = try await server.modify([operation("create", "r1", recordType: "UbiquityItem")], zone: zone, atomic: false, token: server.userToken)
        #expect(made.items().first?["serverErrorCode"] == nil)
        #expect(made.json["syncTokenBefore"] == none.token)
        // the "no zone" token is expired once the zone exists (a fetch with it lists everything):
        // the batch's token is where a full listing ends
        let fetched = try await zoneChanges(server, zone)
        #expect(fetched.records == ["r1"])
        #expect(made.json["syncToken"] == fetched.token)
    }

    @Test(arguments: StoreKind.available)
    func noTokensWhenADeleteCascadesToAnotherRecord(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        _ = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Docs"]]]]],
                                  token: server.userToken)
        let child: [String: JSONValue] = ["up": ["value": ["recordName": "root", "action": "DELETE_SELF"], "type": "REFERENCE"]]
        let made = try await server.modify([operation("create", "root"), operation("create", "child", fields: child)], zone: "Docs",
                                           token: server.userToken)
        #expect(made.json["syncToken"] != nil)
        // the child's tombstone is a change the client did not ask for: it must fetch it
        let cascade = try await server.modify([operation("forceDelete", "root", recordType: nil)], zone: "Docs", token: server.userToken)
        #expect(cascade.items().first?["deleted"] == true)
        #expect(cascade.json["syncTokenBefore"] == nil)
        #expect(cascade.json["syncToken"] == nil)
        let since = try #require(made.json["syncToken"])
        #expect(Set(try await zoneChanges(server, "Docs", token: since).records) == ["root", "child"])
    }
}
