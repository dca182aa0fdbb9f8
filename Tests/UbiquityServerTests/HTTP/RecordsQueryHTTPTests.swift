// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// `records/query`: every comparator, sorting (also by distance), paging and zone-wide queries.
@Suite struct RecordsQueryHTTPTests {
    static let cities: [(String, Double, Double, Int64, [String])] = [
        ("Cupertino", 37.3230, -122.0322, 60_000, ["apple", "valley"]),
        ("San Jose", 37.3382, -121.8863, 1_000_000, ["valley", "city"]),
        ("Paris", 48.8566, 2.3522, 2_100_000, ["city", "lights"]),
        ("Lyon", 45.7640, 4.8357, 520_000, ["city"]),
        ("Suva", -18.1248, 178.4501, 93_000, ["island"]),
        ("Apia", -13.8333, -171.7667, 37_000, ["island"]),
    ]

    func seed(_ server: ServerFixture) async throws {
        let operations = RecordsQueryHTTPTests.cities.map { city in
            operation("create", city.0, recordType: "City", fields: [
                "name": .string(city.0),
                "where": ["value": ["latitude": .number(city.1), "longitude": .number(city.2)], "type": "LOCATION"],
                "population": .integer(city.3),
                "tags": ["value": .array(city.4.map { .string($0) }), "type": "STRING_LIST"],
                "blurb": .string("The city of \(city.0), known for \(city.4.joined(separator: " and "))"),
            ])
        }
        let reply = try await server.modify(operations, database: "public", token: server.userToken)
        #expect(reply.items().allSatisfy { $0["serverErrorCode"] == nil })
    }

    func names(_ server: ServerFixture, _ filters: [JSONValue], sort: [JSONValue] = [], database: String = "public") async throws -> [String] {
        let reply = try await server.send(database, "records/query", ["query": ["recordType": "City", "filterBy": .array(filters), "sortBy": .array(sort)]])
        #expect(reply.status == 200, "\(reply.body)")
        return reply.items().compactMap { $0["recordName"]?.stringValue }
    }

    func filter(_ comparator: String, _ field: String, _ value: JSONValue, _ type: String, distance: Double? = nil) -> JSONValue {
        var filter: [String: JSONValue] = ["comparator": .string(comparator), "fieldName": .string(field),
                                           "fieldValue": ["value": value, "type": .string(type)]]
        if let distance { filter["distance"] = .number(distance) }
        return .object(filter)
    }

    @Test(arguments: StoreKind.available)
    func everyComparator(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        try await seed(server)
        let byName: [JSONValue] = [["fieldName": "name", "ascending": true]]
        #expect(try await names(server, [filter("EQUALS", "name", "Paris", "STRING")]) == ["Paris"])
        #expect(try await names(server, [filter("NOT_EQUALS", "name", "Paris", "STRING")], sort: byName) == ["Apia", "Cupertino", "Lyon", "San Jose", "Suva"])
        #expect(try await names(server, [filter("LESS_THAN", "population", 93_000, "INT64")], sort: byName) == ["Apia", "Cupertino"])
        #expect(try await names(server, [filter("LESS_THAN_OR_EQUALS", "population", 93_000, "INT64")], sort: byName) == ["Apia", "Cupertino", "Suva"])
        #expect(try await names(server, [filter("GREATER_THAN", "population", 1_000_000, "INT64")]) == ["Paris"])
        #expect(try await names(server, [filter("GREATER_THAN_OR_EQUALS", "population", 1_000_000, "INT64")], sort: byName) == ["Paris", "San Jose"])
        #expect(try await names(server, [filter("GREATER_THAN", "name", "Paris", "STRING")], sort: byName) == ["San Jose", "Suva"])
        #expect(try await names(server, [filter("IN", "name", ["Lyon", "Suva", "Nowhere"], "STRING_LIST")], sort: byName) == ["Lyon", "Suva"])
        #expect(try await names(server, [filter("NOT_IN", "name", ["Lyon", "Suva"], "STRING_LIST")], sort: byName) == ["Apia", "Cupertino", "Paris", "San Jose"])
        #expect(try await names(server, [filter("BEGINS_WITH", "name", "S", "STRING")], sort: byName) == ["San Jose", "Suva"])
        #expect(try await names(server, [filter("NOT_BEGINS_WITH", "name", "S", "STRING")], sort: byName) == ["Apia", "Cupertino", "Lyon", "Paris"])
        #expect(try await names(server, [filter("LIST_CONTAINS", "tags", "island", "STRING")], sort: byName) == ["Apia", "Suva"])
        #expect(try await names(server, [filter("NOT_LIST_CONTAINS", "tags", "city", "STRING")], sort: byName) == ["Apia", "Cupertino", "Suva"])
        #expect(try await names(server, [filter("LIST_NOT_CONTAINS", "tags", "city", "STRING")], sort: byName) == ["Apia", "Cupertino", "Suva"])
        #expect(try await names(server, [filter("LIST_CONTAINS_ANY", "tags", ["apple", "lights"], "STRING_LIST")], sort: byName) == ["Cupertino", "Paris"])
        #expect(try await names(server, [filter("NOT_LIST_CONTAINS_ANY", "tags", ["city", "island"], "STRING_LIST")]) == ["Cupertino"])
        #expect(try await names(server, [filter("LIST_CONTAINS_ALL", "tags", ["city", "valley"], "STRING_LIST")]) == ["San Jose"])
        #expect(try await names(server, [filter("NOT_LIST_CONTAINS_ALL", "tags", ["city", "valley"], "STRING_LIST")], sort: byName) == ["Apia", "Cupertino", "Lyon", "Paris", "Suva"])
        #expect(try await names(server, [filter("LIST_MEMBER_BEGINS_WITH", "tags", "isl", "STRING")], sort: byName) == ["Apia", "Suva"])
        #expect(try await names(server, [filter("NOT_LIST_MEMBER_BEGINS_WITH", "tags", "c", "STRING")], sort: byName) == ["Apia", "Cupertino", "Suva"])
        #expect(try await names(server, [filter("CONTAINS_ALL_TOKENS", "blurb", "city LIGHTS", "STRING")]) == ["Paris"])
        #expect(try await names(server, [filter("CONTAINS_ANY_TOKENS", "blurb", "apple island", "STRING")], sort: byName) == ["Apia", "Cupertino", "Suva"])
        // NEAR: within 30 km of Cupertino; across the antimeridian between Suva and Apia
        let cupertino: JSONValue = ["latitude": 37.3230, "longitude": -122.0322]
        #expect(try await names(server, [filter("NEAR", "where", cupertino, "LOCATION", distance: 30_000)], sort: byName) == ["Cupertino", "San Jose"])
        let suva: JSONValue = ["latitude": -18.1248, "longitude": 178.4501]
        #expect(try await names(server, [filter("NEAR", "where", suva, "LOCATION", distance: 1_300_000)], sort: byName) == ["Apia", "Suva"])
        // sort by distance from Paris
        let byDistance: [JSONValue] = [["fieldName": "where", "relativeLocation": ["value": ["latitude": 48.8566, "longitude": 2.3522], "type": "LOCATION"]]]
        #expect(try await names(server, [filter("GREATER_THAN", "population", 500_000, "INT64")], sort: byDistance) == ["Paris", "Lyon", "San Jose"])
        // several filters are ANDed; sort descending; system fields
        #expect(try await names(server, [filter("LIST_CONTAINS", "tags", "city", "STRING"), filter("LESS_THAN", "population", 1_500_000, "INT64")],
                                sort: [["fieldName": "population", "ascending": false]]) == ["San Jose", "Lyon"])
        let bySystem = try await server.send("public", "records/query", ["query": ["recordType": "City", "filterBy": [
            ["systemFieldName": "recordName", "comparator": "EQUALS", "fieldValue": ["value": ["recordName": "Lyon"], "type": "REFERENCE"]]]]])
        #expect(bySystem.items().map { $0["recordName"] } == ["Lyon"])
        let byNames = try await server.send("public", "records/query", ["query": ["recordType": "City", "filterBy": [
            ["systemFieldName": "recordName", "comparator": "IN", "fieldValue": ["value": [["recordName": "Lyon"], ["recordName": "Suva"]], "type": "REFERENCE_LIST"]]],
            "sortBy": [["fieldName": "name"]]]])
        #expect(byNames.items().map { $0["recordName"] } == ["Lyon", "Suva"])
        let created = try await server.send("public", "records/query", ["query": ["recordType": "City", "sortBy": [["systemFieldName": "createdTimestamp", "ascending": false]],
                                                                                  "filterBy": [["fieldName": "___createTime", "comparator": "GREATER_THAN", "fieldValue": ["value": 0, "type": "TIMESTAMP"]]]]])
        #expect(created.items().count == 6)
        // unknown comparator → BAD_REQUEST naming it
        let bad = try await server.send("public", "records/query", ["query": ["recordType": "City", "filterBy": [["comparator": "LIKE", "fieldName": "name", "fieldValue": ["value": "x"]]]]])
        #expect(bad.status == 400)
        #expect(bad.errorCode == "BAD_REQUEST")
        #expect(bad.json["reason"]?.stringValue?.contains("query.filterBy[0].comparator") == true)
    }

    @Test(arguments: StoreKind.available)
    func pagingWithContinuationMarkersAndDesiredKeys(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let operations = (0..<450).map { index in operation("create", String(format: "item%03d", index), recordType: "Item", fields: ["rank": .integer(Int64(index)), "note": "n"]) }
        for chunk in stride(from: 0, to: operations.count, by: 200) {
            let reply = try await server.modify(Array(operations[chunk..<min(chunk + 200, operations.count)]), token: server.userToken)
            #expect(reply.items().count == min(200, operations.count - chunk))
        }
        var marker: JSONValue = .null
        var seen: [String] = []
        var pages = 0
        repeat {
            let reply = try await server.send("private", "records/query", ["query": ["recordType": "Item", "sortBy": [["fieldName": "rank"]]],
                                                                           "resultsLimit": 1_000_000, "continuationMarker": marker, "desiredKeys": ["rank"]], token: server.userToken)
            #expect(reply.items().count <= 200)
            #expect(reply.items().first?["fields"]?["note"] == nil)
            seen += reply.items().compactMap { $0["recordName"]?.stringValue }
            marker = reply.json["continuationMarker"] ?? .null
            pages += 1
        } while marker != .null && pages < 10
        #expect(pages == 3)
        #expect(seen == (0..<450).map { String(format: "item%03d", $0) })
        // a marker from another query is refused
        let first = try await server.send("private", "records/query", ["query": ["recordType": "Item"], "resultsLimit": 5], token: server.userToken)
        let foreign = try await server.send("private", "records/query", ["query": ["recordType": "Other"], "continuationMarker": first.json["continuationMarker"] ?? .null], token: server.userToken)
        #expect(foreign.errorCode == "BAD_REQUEST")
    }

    /// Issue 24 (Low): a marker is a position in the sort order, not an offset, so records
    /// saved or deleted between pages neither repeat records nor skip them.
    @Test(arguments: StoreKind.available)
    func pagingWhileRecordsAreWrittenNeitherRepeatsNorSkips(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let creates = (0..<30).map { index in operation("create", String(format: "item%03d", index * 2), recordType: "Item", fields: ["rank": .integer(Int64(index * 2))]) }
        _ = try await server.modify(creates, token: server.userToken)
        func page(_ marker: JSONValue, sort: [JSONValue] = [["fieldName": "rank"]]) async throws -> (names: [String], marker: JSONValue) {
            let reply = try await server.send("private", "records/query", ["query": ["recordType": "Item", "sortBy": .array(sort)],
                                                                           "resultsLimit": 10, "continuationMarker": marker], token: server.userToken)
            #expect(reply.status == 200, "\(reply.body)")
            return (reply.items().compactMap { $0["recordName"]?.stringValue }, reply.json["continuationMarker"] ?? .null)
        }
        let first = try await page(.null)
        #expect(first.names == (0..<10).map { String(format: "item%03d", $0 * 2) })
        // before the next page: two records before the position go, one comes; one comes after it
        _ = try await server.modify([operation("forceDelete", "item000", recordType: "Item"), operation("forceDelete", "item004", recordType: "Item"),
                                     operation("create", "item001", recordType: "Item", fields: ["rank": 1]),
                                     operation("create", "item021", recordType: "Item", fields: ["rank": 21])], token: server.userToken)
        let second = try await page(first.marker)
        // an offset (10) would have started at item021 and skipped item020; a position starts after item018
        #expect(second.names == ["item020", "item021"] + (11..<19).map { String(format: "item%03d", $0 * 2) })
        var rest = second
        var seen = first.names + second.names
        while rest.marker != .null {
            rest = try await page(rest.marker)
            seen += rest.names
        }
        #expect(Set(seen).count == seen.count)
        #expect(seen.last == "item058")
        // descending, with ties on the key: the record name orders them
        _ = try await server.modify([operation("create", "tie-a", recordType: "Item", fields: ["rank": 40]),
                                     operation("create", "tie-b", recordType: "Item", fields: ["rank": 40])], token: server.userToken)
        var down: [String] = []
        var marker: JSONValue = .null
        repeat {
            let next = try await page(marker, sort: [["fieldName": "rank", "ascending": false]])
            down += next.names
            marker = next.marker
        } while marker != .null
        #expect(down.count == 32)
        #expect(Set(down).count == down.count)
        let ties = down.firstIndex(of: "item040").map { Array(down[$0...($0 + 2)]) }
        #expect(ties == ["item040", "tie-a", "tie-b"])
    }

    @Test(arguments: StoreKind.available)
    func zoneWideQueriesSearchEveryZone(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        _ = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "A"]]],
                                                                             ["operationType": "create", "zone": ["zoneID": ["zoneName": "B"]]]]], token: server.userToken)
        _ = try await server.modify([operation("create", "a1", fields: ["k": "x"])], zone: "A", token: server.userToken)
        _ = try await server.modify([operation("create", "b1", fields: ["k": "x"])], zone: "B", token: server.userToken)
        _ = try await server.modify([operation("create", "d1", fields: ["k": "x"])], token: server.userToken)
        let wide = try await server.send("private", "records/query", ["query": ["recordType": "Note", "filterBy": [["fieldName": "k", "comparator": "EQUALS", "fieldValue": ["value": "x"]]]], "zoneWide": true], token: server.userToken)
        #expect(Set(wide.items().compactMap { $0["recordName"]?.stringValue }) == ["a1", "b1", "d1"])
        #expect(Set(wide.items().compactMap { $0["zoneID"]?["zoneName"]?.stringValue }) == ["A", "B", "_defaultZone"])
        let one = try await server.send("private", "records/query", ["query": ["recordType": "Note"], "zoneID": ["zoneName": "A"]], token: server.userToken)
        #expect(one.items().map { $0["recordName"] } == ["a1"])
    }
}
