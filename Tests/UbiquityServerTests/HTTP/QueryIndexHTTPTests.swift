// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// Query indexes through the server: development adds and builds the index a query shape needs,
/// then answers from it exactly as it did by scanning, through later writes; production has the
/// indexes deployed from development that its schema allows, and admins add and drop them.
@Suite struct QueryIndexHTTPTests {
    /// Every page of `cat == category` sorted by rank descending (names), through the markers.
    static func walk(_ server: ServerFixture, category: String, limit: Int = 7) async throws -> [String] {
        var names: [String] = []
        var marker: JSONValue = .null
        for _ in 0..<100 {
            var body: [String: JSONValue] = ["query": [
                "recordType": "Item",
                "filterBy": [["comparator": "EQUALS", "fieldName": "cat", "fieldValue": ["value": .string(category), "type": "STRING"]]],
                "sortBy": [["fieldName": "rank", "ascending": false]],
            ], "resultsLimit": .integer(Int64(limit))]
            if marker != .null { body["continuationMarker"] = marker }
            let reply = try await server.send("private", "records/query", .object(body), token: server.userToken)
            try #require(reply.status == 200, "\(reply.body.prefix(300))")
            for record in reply.items() {
                #expect(record["fields"]?["cat"]?["value"]?.stringValue == category)
                names.append(record["recordName"]?.stringValue ?? "?")
            }
            marker = reply.json["continuationMarker"] ?? .null
            if marker == .null { break }
        }
        return names
    }

    static func fields(category: Int, rank: Int) -> [String: JSONValue] {
        ["cat": ["value": .string("c\(category)"), "type": "STRING"], "rank": ["value": .integer(Int64(rank)), "type": "INT64"]]
    }

    @Test(arguments: StoreKind.available)
    func developmentBuildsTheIndexAQueryNeedsAndAnswersFromIt(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        // ranks repeat (ties go by record name), one record in ten has no rank (last, either way)
        var truth: [String: (category: Int, rank: Int?)] = [:]
        var operations: [JSONValue] = []
        for index in 0..<150 {
            let name = String(format: "r%03d", index)
            truth[name] = (index % 3, index % 10 == 0 ? nil : (index * 37) % 50)
            var fields = Self.fields(category: index % 3, rank: (index * 37) % 50)
            if index % 10 == 0 { fields["rank"] = nil }
            operations.append(operation("create", name, recordType: "Item", fields: fields))
        }
        let created = try await server.modify(operations, token: server.userToken)
        #expect(created.status == 200 && created.items().allSatisfy { $0["serverErrorCode"] == nil })
        func expected(_ category: Int) -> [String] {
            truth.filter { $0.value.category == category }.sorted { a, b in
                switch (a.value.rank, b.value.rank) {
                case (let x?, let y?) where x != y: return x > y
                case (nil, _?): return false
                case (_?, nil): return true
                default: return a.key < b.key
                }
            }.map(\.key)
        }
        // the first query is answered by a scan and asks for the index
        #expect(try await Self.walk(server, category: "c1") == expected(1))
        await server.server.engine.queryIndexBuilder.idle()
        let admin = RecordsAdmin(store: server.store)
        let indexes = try await admin.queryIndexes(container: server.container, environment: .development)
        #expect(indexes.map(\.index.definition.description) == ["Item(=cat,-rank)"])
        #expect(indexes.map(\.index.ready) == [true])
        #expect(indexes.map(\.keys) == [150])
        // now from the index, every category, every page
        for category in 0..<3 { #expect(try await Self.walk(server, category: "c\(category)") == expected(category)) }
        // writes after the build: moves between categories and ranks, deletions, new records
        var changes: [JSONValue] = []
        for index in stride(from: 1, to: 150, by: 7) {
            let name = String(format: "r%03d", index)
            truth[name] = ((index + 1) % 3, 1_000 - index)
            changes.append(operation("forceUpdate", name, recordType: "Item", fields: Self.fields(category: (index + 1) % 3, rank: 1_000 - index)))
        }
        for index in stride(from: 2, to: 150, by: 11) where truth[String(format: "r%03d", index)] != nil && index % 7 != 1 {
            let name = String(format: "r%03d", index)
            truth[name] = nil
            changes.append(operation("forceDelete", name, recordType: "Item"))
        }
        for index in 150..<170 {
            let name = String(format: "r%03d", index)
            truth[name] = (index % 3, index % 4)
            changes.append(operation("create", name, recordType: "Item", fields: Self.fields(category: index % 3, rank: index % 4)))
        }
        let changed = try await server.modify(changes, token: server.userToken)
        #expect(changed.status == 200 && changed.items().allSatisfy { $0["serverErrorCode"] == nil }, "\(changed.body.prefix(300))")
        for category in 0..<3 { #expect(try await Self.walk(server, category: "c\(category)", limit: 5) == expected(category)) }
        #expect(try await admin.queryIndexes(container: server.container, environment: .development).map(\.keys) == [truth.count])
    }

    @Test(arguments: StoreKind.available)
    func productionHasTheIndexesItsSchemaAllows(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let admin = RecordsAdmin(store: server.store)
        let created = try await server.modify([operation("create", "a", recordType: "Item", fields: Self.fields(category: 1, rank: 5))],
                                              token: server.userToken)
        #expect(created.status == 200)
        _ = try await Self.walk(server, category: "c1")
        await server.server.engine.queryIndexBuilder.idle()
        // an index over a field production may not sort on is not deployed
        try await admin.setIndexes(container: server.container, environment: .development, recordType: "Item", field: "rank",
                                   queryable: nil, sortable: false, searchable: nil)
        #expect(try await admin.queryIndexes(container: server.container, environment: .development).isEmpty)  // dropped with the flag
        _ = try await admin.addQueryIndex(container: server.container, environment: .development, spelled: "Item(=cat, +___createTime)")
        let deployment = try await admin.deploySchema(container: server.container)
        #expect(deployment.addedIndexes == ["Item(=cat,+___createTime)"])
        let production = try await admin.queryIndexes(container: server.container, environment: .production)
        #expect(production.map(\.index.ready) == [true])
        // production's queries read the deployed index; a shape it lacks is answered by a scan and adds nothing
        var saves: [JSONValue] = []
        for index in 0..<12 { saves.append(operation("create", "p\(index)", recordType: "Item", fields: Self.fields(category: index % 2, rank: index))) }
        let saved = try await server.send("private", "records/modify", ["operations": .array(saves)], token: server.userToken, environment: "production")
        #expect(saved.status == 200 && saved.items().allSatisfy { $0["serverErrorCode"] == nil }, "\(saved.body.prefix(300))")
        func productionNames(_ sort: JSONValue) async throws -> [String] {
            let reply = try await server.send("private", "records/query", ["query": [
                "recordType": "Item",
                "filterBy": [["comparator": "EQUALS", "fieldName": "cat", "fieldValue": ["value": "c1", "type": "STRING"]]],
                "sortBy": sort,
            ], "resultsLimit": 4], token: server.userToken, environment: "production")
            #expect(reply.status == 200, "\(reply.body.prefix(300))")
            return reply.items().compactMap { $0["recordName"]?.stringValue }
        }
        // created times may differ within the batch: the expected order is by (created, name)
        let byCreation = saved.items().compactMap { item -> (Int64, String)? in
            guard let name = item["recordName"]?.stringValue, let created = item["created"]?["timestamp"]?.doubleValue,
                  ["p1", "p3", "p5", "p7", "p9", "p11"].contains(name) else { return nil }
            return (Int64(created), name)
        }.sorted { $0 < $1 }.map(\.1)
        #expect(try await productionNames([["fieldName": "___createTime", "ascending": true]]) == Array(byCreation.prefix(4)))
        #expect(try await productionNames([["fieldName": "___modTime", "ascending": false]]).count == 4)
        await server.server.engine.queryIndexBuilder.idle()
        #expect(try await admin.queryIndexes(container: server.container, environment: .production).count == 1)
        #expect(try await admin.queryIndexes(container: server.container, environment: .production).map(\.keys) == [12])
        // production keeps its indexes unless asked; refusals name the field and the flag
        let unsortable = await #expect(throws: UbiquityError.self) {
            _ = try await admin.addQueryIndex(container: server.container, environment: .production, spelled: "Item(=cat,+rank)")
        }
        #expect(unsortable?.message.contains("field Item.rank is not sortable") == true, "\(String(describing: unsortable))")
        let misspelled = await #expect(throws: UbiquityError.self) {
            _ = try await admin.addQueryIndex(container: server.container, environment: .production, spelled: "Item[cat]")
        }
        #expect(misspelled?.code == .invalidArgument && misspelled?.message.contains("expected TYPE(COMPONENTS)") == true,
                "\(String(describing: misspelled))")
        let added = try await admin.addQueryIndex(container: server.container, environment: .production, spelled: "Item(-___modTime)")
        #expect(added.index.ready && added.keys == 12)  // built before the command returns
        try await admin.dropQueryIndex(container: server.container, environment: .production, id: added.index.id)
        await #expect(throws: UbiquityError.self) {
            try await admin.dropQueryIndex(container: server.container, environment: .production, id: added.index.id)
        }
        #expect(try await admin.queryIndexes(container: server.container, environment: .production).count == 1)
    }
}
