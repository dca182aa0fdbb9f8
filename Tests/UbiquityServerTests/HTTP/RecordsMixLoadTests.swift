// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The records load test's mix (`scripts/bench-records`, issue 26), bounded and checked instead
/// of timed: on the public database, concurrent `records/query` walks (equality on a STRING field,
/// sorted by an INT64 field, 50 a page, through every continuation marker) and `records/lookup`s
/// of ten records, while a writer moves records between categories and ranks. Every answer must
/// be right for some moment of the run; once the writer stops, every walk must be exact.
@Suite struct RecordsMixLoadTests {
    static let records = 1_000
    static let categories = 10

    /// What the writer made of one record (the writer is the only one; it knows the truth).
    struct Truth: Sendable {
        var category: Int
        var rank: Int64
    }

    /// What the tasks share: the problems seen, and whether the writer still writes.
    final class Shared: Sendable {
        let problems = Mutex<[String]>([])
        let writing = Atomic<Bool>(true)
        func note(_ problem: String) { problems.withLock { $0.append(problem) } }
    }

    static func name(_ index: Int) -> String { String(format: "r%04d", index) }

    static func integer(_ value: JSONValue?) -> Int64? {
        if case .integer(let number)? = value { return number }
        return value?.doubleValue.map { Int64($0) }
    }

    static func fields(_ truth: Truth) -> [String: JSONValue] {
        ["cat": .object(["value": .string("c\(truth.category)"), "type": "STRING"]),
         "rank": .object(["value": .integer(truth.rank), "type": "INT64"]),
         // a second copy of the rank: a record read whole has both equal
         "title": .object(["value": .string("t\(truth.rank)"), "type": "STRING"])]
    }

    /// Walks every page of `cat == category` sorted by rank; the records, and a problem if any.
    static func walk(_ server: ServerFixture, category: Int) async throws -> (records: [(name: String, rank: Int64)], problem: String?) {
        var marker: JSONValue = .null
        var found: [(name: String, rank: Int64)] = []
        for page in 0..<100 {
            var body: [String: JSONValue] = ["query": [
                "recordType": "Item",
                "filterBy": [["comparator": "EQUALS", "fieldName": "cat", "fieldValue": ["value": .string("c\(category)"), "type": "STRING"]]],
                "sortBy": [["fieldName": "rank", "ascending": true]],
            ], "resultsLimit": 50]
            if marker != .null { body["continuationMarker"] = marker }
            let reply = try await server.send("public", "records/query", .object(body), token: server.userToken)
            guard reply.status == 200 else { return (found, "query page \(page): HTTP \(reply.status): \(reply.body.prefix(300))") }
            for record in reply.items() {
                let name = record["recordName"]?.stringValue ?? "?"
                guard let fields = record["fields"], fields["cat"]?["value"]?.stringValue == "c\(category)" else {
                    return (found, "query c\(category) returned \(name) of \(String(describing: record["fields"]?["cat"]))")
                }
                guard let rank = Self.integer(fields["rank"]?["value"]), fields["title"]?["value"]?.stringValue == "t\(rank)" else {
                    return (found, "query returned \(name) with a torn record: \(fields)")
                }
                if let last = found.last, last.rank > rank {
                    return (found, "query c\(category) went backwards: \(last) then \(name) at \(rank)")
                }
                found.append((name, rank))
            }
            marker = reply.json["continuationMarker"] ?? .null
            if marker == .null { return (found, nil) }
        }
        return (found, "query c\(category): more than 100 pages")
    }

    @Test(arguments: StoreKind.available)
    func theMixAnswersRightWhileRecordsChange(kind: StoreKind) async throws {
        // the load test's server runs without the per-caller rate limit (`--rate-limit 0`)
        let server = try await ServerFixture.start(kind, configuration: RecordsServerConfiguration(rateLimit: 0))
        defer { Task { await server.stop() } }
        var truths = (0..<Self.records).map { Truth(category: $0 % Self.categories, rank: Int64(($0 * 7919) % Self.records)) }
        for start in stride(from: 0, to: Self.records, by: 200) {
            let operations = (start..<min(start + 200, Self.records)).map { operation("create", Self.name($0), recordType: "Item", fields: Self.fields(truths[$0])) }
            let reply = try await server.modify(operations, database: "public", token: server.userToken)
            #expect(reply.status == 200 && reply.items().allSatisfy { $0["serverErrorCode"] == nil }, "\(reply.body.prefix(500))")
        }
        let shared = Shared()
        let finalTruths = try await withThrowingTaskGroup(of: [Truth]?.self) { group in
            // the writer: moves one record at a time (category and rank), as forceUpdate
            group.addTask { [truths] in
                var truths = truths
                var random = SystemRandomNumberGenerator()
                for round in 0..<120 {
                    let index = Int.random(in: 0..<Self.records, using: &random)
                    truths[index] = Truth(category: Int.random(in: 0..<Self.categories, using: &random), rank: Int64(Self.records + round))
                    let reply = try await server.modify([operation("forceUpdate", Self.name(index), recordType: "Item", fields: Self.fields(truths[index]))],
                                                        database: "public", token: server.userToken)
                    if reply.status != 200 || reply.items().first?["serverErrorCode"] != nil {
                        shared.note("write \(round): \(reply.body.prefix(300))")
                    }
                }
                shared.writing.store(false, ordering: .relaxed)
                return truths
            }
            // readers: half query walks, half lookups of ten, until the writer is done
            for reader in 0..<8 {
                group.addTask {
                    var random = SystemRandomNumberGenerator()
                    var rounds = 0
                    while shared.writing.load(ordering: .relaxed) || rounds < 3 {
                        rounds += 1
                        if reader % 2 == 0 {
                            let (_, problem) = try await Self.walk(server, category: Int.random(in: 0..<Self.categories, using: &random))
                            if let problem { shared.note(problem) }
                        } else {
                            let names = (0..<10).map { _ in Self.name(Int.random(in: 0..<Self.records, using: &random)) }
                            let reply = try await server.send("public", "records/lookup", ["records": .array(names.map { ["recordName": .string($0)] })],
                                                              token: server.userToken)
                            let items = reply.items()
                            if reply.status != 200 || items.count != 10 {
                                shared.note("lookup: HTTP \(reply.status), \(items.count) items: \(reply.body.prefix(300))")
                                continue
                            }
                            for (name, item) in zip(names, items) {
                                let rank = Self.integer(item["fields"]?["rank"]?["value"])
                                if item["recordName"]?.stringValue != name || rank == nil || item["fields"]?["title"]?["value"]?.stringValue != "t\(rank!)" {
                                    shared.note("lookup of \(name) answered \(item)")
                                }
                            }
                        }
                    }
                    return nil
                }
            }
            var final: [Truth] = []
            for try await result in group { if let result { final = result } }
            return final
        }
        #expect(shared.problems.withLock { $0 }.isEmpty, "\(shared.problems.withLock { $0.prefix(10) })")
        truths = finalTruths
        // quiet now: every walk is exact
        for category in 0..<Self.categories {
            let (found, problem) = try await Self.walk(server, category: category)
            #expect(problem == nil, "\(problem ?? "")")
            let expected = truths.indices.filter { truths[$0].category == category }
                .map { (name: Self.name($0), rank: truths[$0].rank) }
                .sorted { ($0.rank, $0.name) < ($1.rank, $1.name) }
            let missing = Set(expected.map(\.name)).subtracting(found.map(\.name)).sorted()
            let extra = Set(found.map(\.name)).subtracting(expected.map(\.name)).sorted()
            #expect(found.map(\.name) == expected.map(\.name),
                    "category \(category): missing \(missing.prefix(5)) (truth \(missing.prefix(5).map { truths[Int($0.dropFirst())!] })), extra \(extra.prefix(5))")
            #expect(found.map(\.rank) == expected.map(\.rank), "category \(category)")
        }
    }
}
