// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// `records/modify` and `records/lookup` over HTTP, written from the CloudKit Web Services
/// documentation, against every store kind.
@Suite struct RecordsModifyHTTPTests {
    @Test(arguments: StoreKind.available)
    func createUpdateWithChangeTagsAndConflicts(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let created = try await server.modify([operation("create", "n1", fields: ["title": "Hello", "count": 3])], token: server.userToken)
        #expect(created.status == 200)
        let record = try #require(created.items().first)
        let tag = try #require(record["recordChangeTag"]?.stringValue)
        #expect(record["fields"]?["title"]?["type"] == "STRING")
        #expect(record["fields"]?["count"]?["type"] == "INT64")
        #expect(record["created"]?["userRecordName"]?.stringValue?.count == 33)
        #expect(record["pluginFields"] == .object([:]))
        #expect(record["zoneID"]?["zoneName"] == "_defaultZone")
        #expect(created.headers["x-apple-request-uuid"] != nil)
        #expect(created.headers["x-apple-cloudkit-version"] == "1.0")
        #expect(created.headers["x-apple-cloudkit-web-auth-token"] != nil)

        // create again → EXISTS with the server record
        let again = try await server.modify([operation("create", "n1")], token: server.userToken)
        #expect(again.items().first?["serverErrorCode"] == "EXISTS")

        // update with the right tag → new tag, merged fields
        let updated = try await server.modify([operation("update", "n1", recordType: nil, tag: tag, fields: ["title": "Hi"])], token: server.userToken)
        let newTag = try #require(updated.items().first?["recordChangeTag"]?.stringValue)
        #expect(newTag != tag)
        #expect(updated.items().first?["fields"]?["count"]?["value"] == 3)

        // update with the stale tag → CONFLICT carrying the server record, nothing changed
        let stale = try await server.modify([operation("update", "n1", recordType: nil, tag: tag, fields: ["title": "Lost"])], token: server.userToken)
        #expect(stale.status == 200)
        #expect(stale.items().first?["serverErrorCode"] == "CONFLICT")
        #expect(stale.items().first?["serverRecord"]?["recordChangeTag"]?.stringValue == newTag)
        // update without a tag → BAD_REQUEST
        let untagged = try await server.modify([operation("update", "n1", recordType: nil, fields: ["title": "x"])], token: server.userToken)
        #expect(untagged.items().first?["serverErrorCode"] == "BAD_REQUEST")

        // forceUpdate ignores the tag; replace drops fields it does not name
        _ = try await server.modify([operation("forceUpdate", "n1", recordType: nil, fields: ["title": "Forced"])], token: server.userToken)
        let looked = try await server.send("private", "records/lookup", ["records": [["recordName": "n1"]]], token: server.userToken)
        let current = try #require(looked.items().first)
        #expect(current["fields"]?["title"]?["value"] == "Forced")
        let replaced = try await server.modify([operation("replace", "n1", tag: current["recordChangeTag"]?.stringValue, fields: ["other": 1.5])], token: server.userToken)
        #expect(replaced.items().first?["fields"]?["title"] == nil)
        #expect(replaced.items().first?["fields"]?["other"]?["type"] == "DOUBLE")

        // forceReplace creates when missing; a null field in update removes it
        _ = try await server.modify([operation("forceReplace", "n2", fields: ["a": "x", "b": "y"])], token: server.userToken)
        let n2 = try await server.send("private", "records/lookup", ["records": [["recordName": "n2"]]], token: server.userToken)
        let n2tag = n2.items().first?["recordChangeTag"]?.stringValue
        let nulled = try await server.modify([.object(["operationType": "update", "record": .object([
            "recordName": "n2", "recordChangeTag": .string(n2tag ?? ""), "fields": ["a": ["value": nil]]])])], token: server.userToken)
        #expect(nulled.items().first?["fields"]?["a"] == nil)
        #expect(nulled.items().first?["fields"]?["b"]?["value"] == "y")

        // delete needs the tag; forceDelete does not; lookup then says NOT_FOUND
        let badDelete = try await server.modify([operation("delete", "n2", recordType: nil, tag: "zz")], token: server.userToken)
        #expect(badDelete.items().first?["serverErrorCode"] == "CONFLICT")
        let deleted = try await server.modify([operation("forceDelete", "n2", recordType: nil)], token: server.userToken)
        #expect(deleted.items().first?["deleted"] == true)
        let gone = try await server.send("private", "records/lookup", ["records": [["recordName": "n2"], ["recordName": "n1"]]], token: server.userToken)
        #expect(gone.items().first?["serverErrorCode"] == "NOT_FOUND")
        #expect(gone.items().last?["recordName"] == "n1")
        let missingUpdate = try await server.modify([operation("update", "nope", recordType: nil, tag: "1")], token: server.userToken)
        #expect(missingUpdate.items().first?["serverErrorCode"] == "NOT_FOUND")
    }

    @Test(arguments: StoreKind.available)
    func everyFieldTypeRoundTripsWithDesiredKeysAndNumbersAsStrings(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let fields: [String: JSONValue] = [
            "s": ["value": "text", "type": "STRING"],
            "i": ["value": 9_007_199_254_740_993, "type": "INT64"],
            "d": ["value": 2.5, "type": "DOUBLE"],
            "t": ["value": 1_422_312_944_104, "type": "TIMESTAMP"],
            "b": ["value": "AAEC", "type": "BYTES"],
            "r": ["value": ["recordName": "other", "action": "NONE"], "type": "REFERENCE"],
            "l": ["value": ["latitude": 37.33, "longitude": -122.03, "altitude": 10.0], "type": "LOCATION"],
            "a": ["value": ["fileChecksum": "AY6c", "size": 12, "receipt": "r"], "type": "ASSETID"],
            "sl": ["value": ["a", "b"], "type": "STRING_LIST"],
            "il": ["value": [1, 2], "type": "INT64_LIST"],
            "dl": ["value": [1.5], "type": "DOUBLE_LIST"],
            "tl": ["value": [1, 2], "type": "TIMESTAMP_LIST"],
            "bl": ["value": ["AA=="], "type": "BYTES_LIST"],
            "rl": ["value": [["recordName": "x", "action": "NONE"]], "type": "REFERENCE_LIST"],
            "ll": ["value": [["latitude": 1.0, "longitude": 2.0]], "type": "LOCATION_LIST"],
            "el": ["value": [], "type": "STRING_LIST"],
        ]
        let saved = try await server.modify([operation("create", "all", fields: fields)], token: server.userToken)
        let record = try #require(saved.items().first?["fields"])
        for (name, field) in fields {
            #expect(record[name]?["type"] == field["type"], "\(name)")
        }
        #expect(record["i"]?["value"] == 9_007_199_254_740_993)
        #expect(record["l"]?["value"]?["altitude"] == 10.0)
        let strings = try await server.send("private", "records/lookup", ["records": [["recordName": "all"]], "numbersAsStrings": true, "desiredKeys": ["i", "d"]], token: server.userToken)
        let subset = try #require(strings.items().first?["fields"]?.objectValue)
        #expect(Set(subset.keys) == ["i", "d"])
        #expect(subset["i"]?["value"] == "9007199254740993")
        let none = try await server.send("private", "records/lookup", ["records": [["recordName": "all"]], "desiredKeys": []], token: server.userToken)
        #expect(none.items().first?["fields"] == .object([:]))
        // type inferred without "type", then a later wrong type is refused
        let inferred = try await server.modify([operation("create", "inf", fields: ["s": "x", "i": 3])], token: server.userToken)
        #expect(inferred.items().first?["fields"]?["i"]?["type"] == "INT64")
        let wrong = try await server.modify([operation("create", "bad", fields: ["i": ["value": "three", "type": "STRING"]])], token: server.userToken)
        #expect(wrong.items().first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(wrong.items().first?["reason"]?.stringValue?.contains("expected type INT64") == true)
    }

    @Test(arguments: StoreKind.available)
    func atomicBatchesInCustomZonesChangeNothingOnFailure(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let zone = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Work"]]]]], token: server.userToken)
        #expect(zone.items("zones").first?["atomic"] == true)
        _ = try await server.modify([operation("create", "taken")], zone: "Work", token: server.userToken)
        let batch = try await server.modify([operation("create", "fresh1"), operation("create", "taken"), operation("create", "fresh2")],
                                            zone: "Work", token: server.userToken)
        #expect(batch.status == 200)
        #expect(batch.items().map { $0["serverErrorCode"]?.stringValue } == ["ATOMIC_ERROR", "EXISTS", "ATOMIC_ERROR"])
        let lookup = try await server.send("private", "records/lookup", ["records": [["recordName": "fresh1"], ["recordName": "fresh2"]], "zoneID": ["zoneName": "Work"]], token: server.userToken)
        #expect(lookup.items().allSatisfy { $0["serverErrorCode"] == "NOT_FOUND" })
        // non-atomic: the good ones are saved
        let loose = try await server.modify([operation("create", "fresh1"), operation("create", "taken")], zone: "Work", atomic: false, token: server.userToken)
        #expect(loose.items().first?["recordName"] == "fresh1")
        #expect(loose.items().first?["serverErrorCode"] == nil)
        #expect(loose.items().last?["serverErrorCode"] == "EXISTS")
        // default zone batches are never atomic
        let defaultZone = try await server.modify([operation("create", "d1"), operation("update", "missing", recordType: nil, tag: "1")], token: server.userToken)
        #expect(defaultZone.items().first?["serverErrorCode"] == nil)
        #expect(defaultZone.items().last?["serverErrorCode"] == "NOT_FOUND")
    }

    @Test(arguments: StoreKind.available)
    func referencesValidateAndCascade(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        func ref(_ name: String, _ action: String) -> JSONValue { ["value": ["recordName": .string(name), "action": .string(action)], "type": "REFERENCE"] }
        let missing = try await server.modify([operation("create", "child", fields: ["parent": ref("nobody", "VALIDATE")])], token: server.userToken)
        #expect(missing.items().first?["serverErrorCode"] == "VALIDATING_REFERENCE_ERROR")
        #expect(missing.status == 200)
        // target first, then sources in the same batch
        let made = try await server.modify([
            operation("create", "root"),
            operation("create", "a", fields: ["up": ref("root", "DELETE_SELF")]),
            operation("create", "b", fields: ["up": ref("a", "DELETE_SELF")]),
            operation("create", "keep", fields: ["up": ref("root", "NONE")]),
            operation("create", "guard", fields: ["up": ref("root", "VALIDATE")]),
        ], token: server.userToken)
        #expect(made.items().allSatisfy { $0["serverErrorCode"] == nil })
        let blocked = try await server.modify([operation("forceDelete", "root", recordType: nil)], token: server.userToken)
        #expect(blocked.items().first?["serverErrorCode"] == "VALIDATING_REFERENCE_ERROR")
        _ = try await server.modify([operation("forceDelete", "guard", recordType: nil)], token: server.userToken)
        let cascade = try await server.modify([operation("forceDelete", "root", recordType: nil)], token: server.userToken)
        #expect(cascade.items().first?["deleted"] == true)
        let after = try await server.send("private", "records/lookup", ["records": [["recordName": "a"], ["recordName": "b"], ["recordName": "keep"]]], token: server.userToken)
        #expect(after.items().map { $0["serverErrorCode"]?.stringValue } == ["NOT_FOUND", "NOT_FOUND", nil])
    }

    @Test(arguments: StoreKind.available)
    func concurrentUpdatesOfOneRecordHaveOneWinnerPerTag(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let created = try await server.modify([operation("create", "hot", fields: ["n": 0])], token: server.userToken)
        let tag = try #require(created.items().first?["recordChangeTag"]?.stringValue)
        let outcomes = try await withThrowingTaskGroup(of: String?.self) { group in
            for index in 0..<16 {
                group.addTask {
                    let reply = try await server.modify([operation("update", "hot", recordType: nil, tag: tag, fields: ["n": .integer(Int64(index))])], token: server.userToken)
                    return reply.items().first?["serverErrorCode"]?.stringValue
                }
            }
            var all: [String?] = []
            for try await outcome in group { all.append(outcome) }
            return all
        }
        #expect(outcomes.filter { $0 == nil }.count == 1)
        #expect(outcomes.filter { $0 == "CONFLICT" }.count == 15)
    }
}
