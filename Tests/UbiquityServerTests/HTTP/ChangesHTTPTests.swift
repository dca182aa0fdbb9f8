// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOHTTP1
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// Zones and change tracking: `zones/*`, `changes/database`, `changes/zone`, `records/changes`.
@Suite struct ChangesHTTPTests {
    func createZone(_ server: ServerFixture, _ name: String) async throws {
        let reply = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": .string(name)]]]]], token: server.userToken)
        #expect(reply.items("zones").first?["zoneID"]?["zoneName"]?.stringValue == name)
    }

    func zoneChanges(_ server: ServerFixture, _ zone: String, token: JSONValue = .null, limit: Int? = nil,
                     types: [String]? = nil) async throws -> ServerFixture.Reply {
        var entry: [String: JSONValue] = ["zoneID": ["zoneName": .string(zone)], "syncToken": token]
        if let limit { entry["resultsLimit"] = .integer(Int64(limit)) }
        if let types { entry["desiredRecordTypes"] = .array(types.map { .string($0) }) }
        return try await server.send("private", "changes/zone", ["zones": [.object(entry)]], token: server.userToken)
    }

    @Test(arguments: StoreKind.available)
    func zoneChangesReturnEveryChangeOnceInOrderWithTombstones(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        try await createZone(server, "Docs")
        let first = try await zoneChanges(server, "Docs")
        let start = try #require(first.items("zones").first?["syncToken"])
        #expect(first.items("zones").first?["records"] == .array([]))
        for index in 0..<25 {
            _ = try await server.modify([operation("create", "r\(index)", recordType: index % 5 == 0 ? "Other" : "Note", fields: ["i": .integer(Int64(index))])],
                                        zone: "Docs", token: server.userToken)
        }
        let r3 = try await server.send("private", "records/lookup", ["records": [["recordName": "r3"]], "zoneID": ["zoneName": "Docs"]], token: server.userToken)
        _ = try await server.modify([operation("update", "r3", recordType: nil, tag: r3.items().first?["recordChangeTag"]?.stringValue, fields: ["i": 300])],
                                    zone: "Docs", token: server.userToken)
        _ = try await server.modify([operation("forceDelete", "r4", recordType: nil)], zone: "Docs", token: server.userToken)
        // page through with resultsLimit 10 and moreComing
        var token = start
        var names: [String] = []
        var deleted: [String] = []
        var pages = 0
        while true {
            let reply = try await zoneChanges(server, "Docs", token: token, limit: 10)
            let zone = try #require(reply.items("zones").first)
            for record in zone["records"]?.arrayValue ?? [] {
                let name = record["recordName"]?.stringValue ?? ""
                if record["deleted"] == true { deleted.append(name) } else { names.append(name) }
            }
            token = zone["syncToken"] ?? .null
            pages += 1
            if zone["moreComing"] != true { break }
        }
        #expect(pages == 3)
        // r3 once (at its latest change, after r24), r4 once as a tombstone, everything once
        #expect(names == (0..<25).filter { $0 != 3 && $0 != 4 }.map { "r\($0)" } + ["r3"])
        #expect(deleted == ["r4"])
        // nothing new → empty, same position
        let idle = try await zoneChanges(server, "Docs", token: token)
        #expect(idle.items("zones").first?["records"] == .array([]))
        #expect(idle.items("zones").first?["moreComing"] == false)
        // desiredRecordTypes filters records but keeps tombstones
        let others = try await zoneChanges(server, "Docs", token: start, types: ["Other"])
        let otherNames = (others.items("zones").first?["records"]?.arrayValue ?? []).compactMap { $0["recordName"]?.stringValue }
        #expect(otherNames == ["r0", "r5", "r10", "r15", "r20", "r4"])
        // legacy records/changes answers the same shape at the top level
        let legacy = try await server.send("private", "records/changes", ["zoneID": ["zoneName": "Docs"], "syncToken": start, "resultsLimit": 5], token: server.userToken)
        #expect(legacy.items().count == 5)
        #expect(legacy.json["moreComing"] == true)
        #expect(legacy.json["syncToken"] != nil)
    }

    @Test(arguments: StoreKind.available)
    func databaseChangesAndExpiredTokens(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let empty = try await server.send("private", "changes/database", [:], token: server.userToken)
        #expect(empty.items("zones").isEmpty)
        let start = try #require(empty.json["syncToken"])
        try await createZone(server, "A")
        try await createZone(server, "B")
        let changed = try await server.send("private", "changes/database", ["syncToken": start], token: server.userToken)
        #expect(changed.items("zones").compactMap { $0["zoneID"]?["zoneName"]?.stringValue } == ["A", "B"])
        let afterCreate = try #require(changed.json["syncToken"])
        // a zone token from before deletion is expired once the zone is deleted and recreated
        _ = try await server.modify([operation("create", "x")], zone: "A", token: server.userToken)
        let aToken = try #require(try await zoneChanges(server, "A").items("zones").first?["syncToken"])
        let deletion = try await server.send("private", "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "A"]]]]], token: server.userToken)
        #expect(deletion.items("zones").first?["deleted"] == true)
        let deletedZone = try await zoneChanges(server, "A", token: aToken)
        #expect(deletedZone.items("zones").first?["serverErrorCode"] == "ZONE_NOT_FOUND")
        let deletedChanges = try await server.send("private", "changes/database", ["syncToken": afterCreate], token: server.userToken)
        #expect(deletedChanges.items("zones").first?["zoneID"]?["zoneName"] == "A")
        #expect(deletedChanges.items("zones").first?["deleted"] == true)
        try await createZone(server, "A")
        let expired = try await zoneChanges(server, "A", token: aToken)
        #expect(expired.items("zones").first?["serverErrorCode"] == "CHANGE_TOKEN_EXPIRED")
        // starting over works
        let restart = try await zoneChanges(server, "A")
        #expect(restart.items("zones").first?["serverErrorCode"] == nil)
        // a token of zone B used for zone A is foreign → expired; garbage → BAD_REQUEST
        let bToken = try #require(try await zoneChanges(server, "B").items("zones").first?["syncToken"])
        #expect(try await zoneChanges(server, "A", token: bToken).items("zones").first?["serverErrorCode"] == "CHANGE_TOKEN_EXPIRED")
        #expect(try await zoneChanges(server, "A", token: "garbage!").items("zones").first?["serverErrorCode"] == "BAD_REQUEST")
        // a database token of another user is foreign
        let other = try await server.send("private", "changes/database", ["syncToken": afterCreate], token: server.otherToken)
        #expect(other.errorCode == "CHANGE_TOKEN_EXPIRED")
        #expect(other.status == 410)
        // deleted zones: records gone, modify answers ZONE_NOT_FOUND for each record
        let write = try await server.modify([operation("create", "y")], zone: "Nope", token: server.userToken)
        #expect(write.status == 200)
        #expect(write.items().first?["serverErrorCode"] == "ZONE_NOT_FOUND")
        // zones/list, zones/lookup, the legacy zones/changes
        let list = try await server.send(.GET, "private", "zones/list", token: server.userToken)
        #expect(Set(list.items("zones").compactMap { $0["zoneID"]?["zoneName"]?.stringValue }) == ["_defaultZone", "A", "B"])
        let postList = try await server.send(.POST, "private", "zones/list", [:], token: server.userToken)
        #expect(postList.items("zones").count == 3)
        let lookup = try await server.send("private", "zones/lookup", ["zones": [["zoneName": "B"], ["zoneName": "Missing"]]], token: server.userToken)
        #expect(lookup.items("zones").last?["serverErrorCode"] == "ZONE_NOT_FOUND")
        let legacy = try await server.send("private", "zones/changes", [:], token: server.userToken)
        #expect(legacy.json["metaSyncToken"] != nil)
        // custom zones only in private databases; the default zone cannot be deleted
        let publicZone = try await server.send("public", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "P"]]]]], token: server.userToken)
        #expect(publicZone.items("zones").first?["serverErrorCode"] == "BAD_REQUEST")
        let defaultDelete = try await server.send("private", "zones/modify", ["operations": [["operationType": "delete", "zone": ["zoneID": ["zoneName": "_defaultZone"]]]]], token: server.userToken)
        #expect(defaultDelete.items("zones").first?["serverErrorCode"] == "BAD_REQUEST")
        // reserved zones exist on demand
        let reserved = try await server.modify([operation("create", "doc")], zone: RecordsEngine.ReservedZone.documents, token: server.userToken)
        #expect(reserved.items().first?["serverErrorCode"] == nil)
    }
}

/// `changes/zone` writes records whose stored fields need nothing added with the fields as
/// stored (RecordsEngine+Changes.swift): the records must read exactly as `records/lookup`
/// writes them, whichever way each is written.
@Suite struct ChangesStoredFieldsHTTPTests {
    @Test(arguments: StoreKind.available)
    func changedRecordsReadAsLookupWritesThem(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        try await ChangesHTTPTests().createZone(server, "Docs")
        let fields: [String: JSONValue] = [
            "title": ["value": "quote \" back\\slash\nnew line, ünïcödé, tab\t", "type": "STRING"],
            "count": ["value": .integer(9_007_199_254_740_993), "type": "INT64"],
            "ratio": ["value": .number(0.5), "type": "DOUBLE"],
            "blob": ["value": .string(Data([0, 1, 2, 250]).base64EncodedString()), "type": "BYTES"],
            "when": ["value": .integer(1_700_000_000_000), "type": "TIMESTAMP"],
            "tags": ["value": ["a", "b"], "type": "STRING_LIST"],
            "link": ["value": ["recordName": "plain", "action": "NONE"], "type": "REFERENCE"],
        ]
        var odd = fields
        odd["title"] = ["value": "names ASSETID, so it takes the decoding way", "type": "STRING"]
        let saved = try await server.modify([operation("create", "plain", fields: fields), operation("create", "odd", fields: odd),
                                             operation("create", "empty", fields: [:]), operation("create", "gone")],
                                            zone: "Docs", token: server.userToken)
        #expect(saved.status == 200, "\(saved.body)")
        _ = try await server.modify([operation("forceDelete", "gone", recordType: nil)], zone: "Docs", token: server.userToken)
        for options in [[:], ["numbersAsStrings": true], ["desiredKeys": ["title", "count", "nothing"]]] as [[String: JSONValue]] {
            var entry: [String: JSONValue] = ["zoneID": ["zoneName": "Docs"]]
            entry.merge(options) { $1 }
            let changes = try await server.send("private", "changes/zone", ["zones": [.object(entry)]], token: server.userToken)
            #expect(changes.status == 200, "\(changes.body)")
            let records = changes.items("zones").first?["records"]?.arrayValue ?? []
            #expect(records.compactMap { $0["recordName"]?.stringValue } == ["plain", "odd", "empty", "gone"])
            var lookupBody: [String: JSONValue] = ["records": [["recordName": "plain"], ["recordName": "odd"], ["recordName": "empty"]],
                                                   "zoneID": ["zoneName": "Docs"]]
            lookupBody.merge(options) { $1 }
            let lookup = try await server.send("private", "records/lookup", .object(lookupBody), token: server.userToken)
            #expect(Array(records.prefix(3)) == lookup.items(), "options \(options)")
            #expect(records.last?["deleted"] == true)
            #expect(records.last?["fields"] == nil)
        }
    }

    @Test func onlyTextNamingAnAssetTypeTakesTheDecodingWay() {
        #expect(RecordsEngine.mayHoldAssets(#"{"image":{"value":{},"type":"ASSETID"}}"#))
        #expect(RecordsEngine.mayHoldAssets(#"{"images":{"value":[],"type":"ASSETID_LIST"}}"#))
        #expect(RecordsEngine.mayHoldAssets("ASSETID"))
        #expect(!RecordsEngine.mayHoldAssets(#"{"title":{"value":"ASSET","type":"STRING"}}"#))
        #expect(!RecordsEngine.mayHoldAssets("{}"))
        #expect(!RecordsEngine.mayHoldAssets(""))
    }
}
