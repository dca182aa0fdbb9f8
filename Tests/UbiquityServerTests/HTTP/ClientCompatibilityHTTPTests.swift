// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Answers that existing CloudKit Web Services clients (CloudKit JS, MistKit, pyicloud) rely on,
/// found by checking the server against the Web Services reference (issue 26, item 4).
@Suite struct ClientCompatibilityHTTPTests {
    func typed(_ value: JSONValue, _ type: String) -> JSONValue { .object(["value": value, "type": .string(type)]) }

    /// A record the server cannot read is its own BAD_REQUEST item: the batch's other records
    /// are saved (outside atomic zones), or fail with ATOMIC_ERROR (inside one).
    @Test(arguments: StoreKind.available)
    func oneMalformedRecordFailsAloneNotTheBatch(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let bad = operation("create", "bad", recordType: "Note", fields: ["x": typed(1, "NO_SUCH_TYPE")])
        let good = operation("create", "good", recordType: "Note", fields: ["x": typed(1, "INT64")])
        let reply = try await server.modify([bad, good], token: server.userToken)
        #expect(reply.status == 200, "\(reply.body)")
        let items = reply.items()
        #expect(items.first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(items.first?["recordName"] == "bad")
        #expect(items.first?["reason"]?.stringValue?.contains("operations[0]") == true, "\(items)")
        #expect(items.last?["recordName"] == "good")
        #expect(items.last?["serverErrorCode"] == nil, "\(items)")
        // in an atomic zone the batch fails as a whole, each item saying why
        let zone = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]],
                                         token: server.userToken)
        #expect(zone.status == 200)
        let atomic = try await server.modify([good, bad], zone: "Z", token: server.userToken)
        #expect(atomic.status == 200, "\(atomic.body)")
        #expect(atomic.items().map { $0["serverErrorCode"]?.stringValue } == ["ATOMIC_ERROR", "BAD_REQUEST"], "\(atomic.body)")
        let looked = try await server.send("private", "records/lookup", ["zoneID": ["zoneName": "Z"], "records": [["recordName": "good"]]], token: server.userToken)
        #expect(looked.items().first?["serverErrorCode"] == "NOT_FOUND")
    }

    /// A missing zone is said per record (HTTP 200, each item ZONE_NOT_FOUND), so a client's
    /// "create the zone, then retry" logic sees it; a record's own `zoneID` is its zone when the
    /// request names none, and one naming another zone than the request's is refused alone.
    @Test(arguments: StoreKind.available)
    func zonesPerRecord(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let note = operation("create", "n1", recordType: "Note", fields: ["x": typed(1, "INT64")])
        let missing = try await server.modify([note, operation("create", "n2", recordType: "Note")], zone: "Nowhere", token: server.userToken)
        #expect(missing.status == 200, "\(missing.body)")
        #expect(missing.items().map { $0["serverErrorCode"]?.stringValue } == ["ZONE_NOT_FOUND", "ZONE_NOT_FOUND"])
        #expect(missing.items().map { $0["recordName"]?.stringValue } == ["n1", "n2"])
        let lookup = try await server.send("private", "records/lookup", ["zoneID": ["zoneName": "Nowhere"], "records": [["recordName": "n1"]]],
                                           token: server.userToken)
        #expect(lookup.status == 200, "\(lookup.body)")
        #expect(lookup.items().first?["serverErrorCode"] == "ZONE_NOT_FOUND")
        #expect(lookup.items().first?["recordName"] == "n1")

        let zone = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]],
                                         token: server.userToken)
        #expect(zone.status == 200)
        func inZone(_ name: String, _ zone: String) -> JSONValue {
            guard case .object(var members) = operation("create", name, recordType: "Note"), case .object(var record)? = members["record"] else { return .null }
            record["zoneID"] = ["zoneName": .string(zone)]
            members["record"] = .object(record)
            return .object(members)
        }
        let own = try await server.modify([inZone("z1", "Z")], atomic: false, token: server.userToken)
        #expect(own.items().first?["serverErrorCode"] == nil, "\(own.body)")
        #expect(own.items().first?["zoneID"]?["zoneName"] == "Z")
        let mixed = try await server.modify([inZone("z2", "Z"), inZone("d1", "_defaultZone")], zone: "Z", atomic: false, token: server.userToken)
        #expect(mixed.items().map { $0["serverErrorCode"]?.stringValue } == [nil, "BAD_REQUEST"], "\(mixed.body)")
    }

    /// Values as other clients spell them: a number sent as a string without `type`, a
    /// location's fractional `timestamp` (MistKit's double), `ENCRYPTED_BYTES` (pyicloud).
    @Test(arguments: StoreKind.available)
    func valuesAsOtherClientsSpellThem(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let first = try await server.modify([operation("create", "a", recordType: "Place", fields: [
            "count": typed(1, "INT64"), "ratio": typed(0.5, "DOUBLE"), "at": typed(1_700_000_000_000, "TIMESTAMP"),
            "where": typed(["latitude": 48.85, "longitude": 2.35, "timestamp": 1_700_000_000_123.6], "LOCATION"),
            "secret": typed("AAEC", "ENCRYPTED_BYTES"),
        ])], token: server.userToken)
        let saved = try #require(first.items().first)
        #expect(saved["serverErrorCode"] == nil, "\(first.body)")
        #expect(saved["fields"]?["where"]?["value"]?["timestamp"] == .integer(1_700_000_000_124))
        #expect(saved["fields"]?["secret"] == typed("AAEC", "BYTES"))
        let strings = try await server.modify([operation("create", "b", recordType: "Place", fields: [
            "count": "42", "ratio": "2.5", "at": "1700000000500",
        ])], token: server.userToken)
        let fields = strings.items().first?["fields"]
        #expect(fields?["count"] == typed(42, "INT64"), "\(strings.body)")
        #expect(fields?["ratio"] == typed(2.5, "DOUBLE"))
        #expect(fields?["at"] == typed(1_700_000_000_500, "TIMESTAMP"))
    }

    /// `___recordID` as schema files spell it; `reverse: true` refused rather than ignored;
    /// `zones/changes` with MistKit's `syncToken`; `users/discover` with MistKit's `users`.
    @Test(arguments: StoreKind.available)
    func spellingsOfOtherClients(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        _ = try await server.modify([operation("create", "n1", recordType: "Note", fields: ["t": typed("x", "STRING")])], database: "public", token: server.userToken)
        let byID = try await server.send("public", "records/query", ["query": ["recordType": "Note", "filterBy": [
            ["comparator": "EQUALS", "fieldName": "___recordID", "fieldValue": ["value": ["recordName": "n1"], "type": "REFERENCE"]],
        ]]], token: server.userToken)
        #expect(byID.status == 200, "\(byID.body)")
        #expect(byID.items().map { $0["recordName"]?.stringValue } == ["n1"])

        let zone = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Z"]]]]],
                                         token: server.userToken)
        #expect(zone.status == 200)
        let reverse = try await server.send("private", "changes/zone", ["zones": [["zoneID": ["zoneName": "Z"]]], "reverse": true], token: server.userToken)
        #expect(reverse.status == 400 && reverse.errorCode == "BAD_REQUEST", "\(reverse.body)")

        let first = try await server.send("private", "zones/changes", [:], token: server.userToken)
        let token = try #require(first.json["syncToken"])
        #expect(first.json["metaSyncToken"] == token)
        let again = try await server.send("private", "zones/changes", ["syncToken": token], token: server.userToken)
        #expect(again.status == 200 && again.items("zones").isEmpty, "\(again.body)")

        _ = try await server.send("public", "users/discoverability", ["discoverable": true], token: server.userToken)
        let found = try await server.send("public", "users/discover", ["users": [["emailAddress": "mei@example.org"]]], token: server.otherToken)
        #expect(found.items("users").count == 1, "\(found.body)")
    }
}
