// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

@Suite("CloudKit query predicate translation")
struct CloudKitQueryTranslationTests {
    typealias Support = CloudKitTestSupport

    static func filter(_ comparator: String, _ field: String, _ value: String, system: Bool = false, extra: String = "") -> String {
        #"{"comparator":"\#(comparator)","\#(system ? "systemFieldName" : "fieldName")":"\#(field)","fieldValue":\#(value)\#(extra)}"#
    }

    static let cases: [(format: String, arguments: [any Sendable], expected: String)] = [
        ("name == 'Mei'", [], filter("EQUALS", "name", #"{"value":"Mei","type":"STRING"}"#)),
        ("name = %@", ["Mei"], filter("EQUALS", "name", #"{"value":"Mei","type":"STRING"}"#)),
        ("name != 'Mei'", [], filter("NOT_EQUALS", "name", #"{"value":"Mei","type":"STRING"}"#)),
        ("name <> 'Mei'", [], filter("NOT_EQUALS", "name", #"{"value":"Mei","type":"STRING"}"#)),
        ("age < 30", [], filter("LESS_THAN", "age", #"{"value":30,"type":"INT64"}"#)),
        ("age <= %d", [30], filter("LESS_THAN_OR_EQUALS", "age", #"{"value":30,"type":"INT64"}"#)),
        ("age > %d", [30], filter("GREATER_THAN", "age", #"{"value":30,"type":"INT64"}"#)),
        ("age >= 30", [], filter("GREATER_THAN_OR_EQUALS", "age", #"{"value":30,"type":"INT64"}"#)),
        ("30 < age", [], filter("GREATER_THAN", "age", #"{"value":30,"type":"INT64"}"#)),
        ("rating >= %f", [4.5], filter("GREATER_THAN_OR_EQUALS", "rating", #"{"value":4.5,"type":"DOUBLE"}"#)),
        ("isActive == YES", [], filter("EQUALS", "isActive", #"{"value":1,"type":"INT64"}"#)),
        ("isActive == %@", [false], filter("EQUALS", "isActive", #"{"value":0,"type":"INT64"}"#)),
        ("born > %@", [Date(timeIntervalSince1970: 1_422_312_944.104)], filter("GREATER_THAN", "born", #"{"value":1422312944104,"type":"TIMESTAMP"}"#)),
        ("%K == %@", ["name", "Mei"], filter("EQUALS", "name", #"{"value":"Mei","type":"STRING"}"#)),
        ("name BEGINSWITH 'Me'", [], filter("BEGINS_WITH", "name", #"{"value":"Me","type":"STRING"}"#)),
        ("NOT (name BEGINSWITH 'Me')", [], filter("NOT_BEGINS_WITH", "name", #"{"value":"Me","type":"STRING"}"#)),
        ("name IN {'a', 'b'}", [], filter("IN", "name", #"{"value":["a","b"],"type":"STRING_LIST"}"#)),
        ("name IN %@", [["a", "b"]], filter("IN", "name", #"{"value":["a","b"],"type":"STRING_LIST"}"#)),
        ("NOT (name IN %@)", [["a", "b"]], filter("NOT_IN", "name", #"{"value":["a","b"],"type":"STRING_LIST"}"#)),
        ("ANY {'a', 'b'} == name", [], filter("IN", "name", #"{"value":["a","b"],"type":"STRING_LIST"}"#)),
        ("tags CONTAINS 'jazz'", [], filter("LIST_CONTAINS", "tags", #"{"value":"jazz","type":"STRING"}"#)),
        ("'jazz' IN tags", [], filter("LIST_CONTAINS", "tags", #"{"value":"jazz","type":"STRING"}"#)),
        ("ANY tags == 'jazz'", [], filter("LIST_CONTAINS", "tags", #"{"value":"jazz","type":"STRING"}"#)),
        ("NOT (tags CONTAINS 'jazz')", [], filter("NOT_LIST_CONTAINS", "tags", #"{"value":"jazz","type":"STRING"}"#)),
        ("NONE tags == 'jazz'", [], filter("NOT_LIST_CONTAINS", "tags", #"{"value":"jazz","type":"STRING"}"#)),
        ("ANY tags IN {'jazz', 'blues'}", [], filter("LIST_CONTAINS_ANY", "tags", #"{"value":["jazz","blues"],"type":"STRING_LIST"}"#)),
        ("NOT (ANY tags IN {'jazz'})", [], filter("NOT_LIST_CONTAINS_ANY", "tags", #"{"value":["jazz"],"type":"STRING_LIST"}"#)),
        ("ANY tags BEGINSWITH 'ja'", [], filter("LIST_MEMBER_BEGINS_WITH", "tags", #"{"value":"ja","type":"STRING"}"#)),
        ("NOT (ANY tags BEGINSWITH 'ja')", [], filter("NOT_LIST_MEMBER_BEGINS_WITH", "tags", #"{"value":"ja","type":"STRING"}"#)),
        ("self CONTAINS 'piano'", [], filter("CONTAINS_ALL_TOKENS", "allTokens", #"{"value":"piano","type":"STRING"}"#)),
        ("allTokens TOKENMATCHES[cdl] %@", ["bob smith"], filter("CONTAINS_ALL_TOKENS", "allTokens", #"{"value":"bob smith","type":"STRING"}"#)),
        ("bio TOKENMATCHES[cd] 'jazz piano'", [], filter("CONTAINS_ALL_TOKENS", "bio", #"{"value":"jazz piano","type":"STRING"}"#)),
        ("distanceToLocation:fromLocation:(studio, %@) < 1.5", [Location(latitude: 37.33, longitude: -122.03)],
         filter("NEAR", "studio", #"{"value":{"latitude":37.33,"longitude":-122.03},"type":"LOCATION"}"#, extra: #","distance":1500"#)),
        ("age BETWEEN {20, 30}", [], filter("GREATER_THAN_OR_EQUALS", "age", #"{"value":20,"type":"INT64"}"#) + "," + filter("LESS_THAN_OR_EQUALS", "age", #"{"value":30,"type":"INT64"}"#)),
        ("recordName == 'mei'", [], filter("EQUALS", "recordName", #"{"value":{"recordName":"mei"},"type":"REFERENCE"}"#, system: true)),
        ("recordID == %@", [Record.ID(recordName: "mei")], filter("EQUALS", "recordName", #"{"value":{"recordName":"mei"},"type":"REFERENCE"}"#, system: true)),
        ("creationDate > %@", [Date(timeIntervalSince1970: 1)], filter("GREATER_THAN", "createdTimestamp", #"{"value":1000,"type":"TIMESTAMP"}"#, system: true)),
        ("modificationDate < %@", [Date(timeIntervalSince1970: 2)], filter("LESS_THAN", "modifiedTimestamp", #"{"value":2000,"type":"TIMESTAMP"}"#, system: true)),
        ("creatorUserRecordID == %@", [Record.ID(recordName: "_u1")], filter("EQUALS", "createdUserRecordName", #"{"value":{"recordName":"_u1"},"type":"REFERENCE"}"#, system: true)),
        ("label == %@", [Reference(recordID: Record.ID(recordName: "l1"), action: .deleteSelf)], filter("EQUALS", "label", #"{"value":{"recordName":"l1"},"type":"REFERENCE"}"#)),
        ("TRUEPREDICATE", [], ""),
        ("name == 'Mei' AND age > 30 && TRUEPREDICATE", [],
         filter("EQUALS", "name", #"{"value":"Mei","type":"STRING"}"#) + "," + filter("GREATER_THAN", "age", #"{"value":30,"type":"INT64"}"#)),
        ("name BEGINSWITH %@ AND age > %d", ["Mei", 30],
         filter("BEGINS_WITH", "name", #"{"value":"Mei","type":"STRING"}"#) + "," + filter("GREATER_THAN", "age", #"{"value":30,"type":"INT64"}"#)),
        ("NOT NOT (name == 'x')", [], filter("EQUALS", "name", #"{"value":"x","type":"STRING"}"#)),
        ("NOT name == 'x'", [], filter("NOT_EQUALS", "name", #"{"value":"x","type":"STRING"}"#)),
    ]

    @Test("every supported form becomes the right filter", arguments: cases.indices)
    func translation(_ index: Int) throws {
        let (format, arguments, expected) = Self.cases[index]
        let predicate = try Query.Predicate(format: format, argumentArray: arguments)
        let sent = try JSONValue.parse(JSONValue.array(predicate.filters.map(\.json)).serialized()).wholeNumbersAsIntegers
        #expect(sent == (try Support.json("[\(expected)]")), "\(format)")
    }

    static let errorCases: [(format: String, arguments: [any Sendable], column: Int, says: String)] = [
        ("name == 'a' OR name == 'b'", [], 13, "cannot OR"),
        ("a == 1 || b == 2", [], 8, "cannot OR"),
        ("name LIKE 'a*'", [], 6, "do not support LIKE"),
        ("name ENDSWITH 'a'", [], 6, "do not support ENDSWITH"),
        ("name MATCHES 'a'", [], 6, "do not support MATCHES"),
        ("name SOUNDSLIKE 'a'", [], 6, "unknown operator 'SOUNDSLIKE'"),
        ("name ~ 'a'", [], 6, "unexpected character '~'"),
        ("ALL tags == 'a'", [], 1, "ALL"),
        ("name == nil", [], 9, "nil"),
        ("name == other", [], 9, "not with another field"),
        ("name ==[c] 'a'", [], 6, "[c]"),
        ("age < {1, 2}", [], 7, "single value"),
        ("name IN 'a'", [], 9, "needs a list"),
        ("NOT (age < 3)", [], 1, "opposite comparison"),
        ("NOT (a == 1 AND b == 2)", [], 1, "would need OR"),
        ("FALSEPREDICATE", [], 1, "FALSEPREDICATE"),
        ("first.name == 'a'", [], 1, "not a field name"),
        ("name == %@", [], 9, "needs argument 1"),
        ("name == %@", ["a", "b"], 11, "2 arguments given"),
        ("age > %d", ["x"], 7, "expected an integer"),
        ("name == 'abc", [], 9, "unterminated string"),
        ("(name == 'a'", [], 13, "expected ')'"),
        ("distanceToLocation:fromLocation:(studio, %@) > 3", [Location(latitude: 0, longitude: 0)], 46, "'<'"),
        ("name == $X", [], 9, "substitution variables"),
        ("", [], 1, "TRUEPREDICATE"),
    ]

    @Test("unsupported predicates fail with the column and a reason", arguments: errorCases.indices)
    func errors(_ index: Int) throws {
        let (format, arguments, column, says) = Self.errorCases[index]
        let error = #expect(throws: CloudKitError.self) { try Query.Predicate(format: format, argumentArray: arguments) }
        #expect(error?.code == .invalidArguments)
        #expect(error?.reason.hasPrefix("predicate: column \(column): ") == true, "\(format): \(error?.reason ?? "")")
        #expect(error?.reason.contains(says) == true, "\(format): \(error?.reason ?? "")")
    }

    @Test("a query sends recordType, filters, sort descriptors, zone and limit")
    func query() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[\#(Support.recordJSON("a", zone: "Music"))]}"#)
        var query = Query(recordType: "Artist", predicate: "name BEGINSWITH %@ AND age > %d", "Mei", 30)
        query.sortDescriptors = [Query.SortDescriptor(key: "age", ascending: false), Query.SortDescriptor(key: "creationDate"),
                                 .distance(key: "studio", from: Location(latitude: 1, longitude: 2))]
        let zone = RecordZone.ID(zoneName: "Music")
        let (matches, cursor) = try await Support.container(fake).privateCloudDatabase.records(matching: query, inZoneWith: zone,
                                                                                               desiredKeys: ["name"], resultsLimit: 10)
        #expect(cursor == nil)
        #expect(matches.map(\.0) == [Record.ID(recordName: "a", zoneID: zone)])
        #expect(try matches[0].1.get().recordID.zoneID == zone)
        #expect(fake.requests[0].path.hasSuffix("/private/records/query"))
        #expect(try fake.body() == (try Support.json("""
            {"query":{"recordType":"Artist",
               "filterBy":[\(Self.filter("BEGINS_WITH", "name", #"{"value":"Mei","type":"STRING"}"#)),\(Self.filter("GREATER_THAN", "age", #"{"value":30,"type":"INT64"}"#))],
               "sortBy":[{"fieldName":"age","ascending":false},{"systemFieldName":"createdTimestamp","ascending":true},
                         {"fieldName":"studio","ascending":true,"relativeLocation":{"value":{"latitude":1,"longitude":2},"type":"LOCATION"}}]},
             "zoneID":{"zoneName":"Music","zoneType":"REGULAR_CUSTOM_ZONE"},"resultsLimit":10,"desiredKeys":["name"],
             "zoneWide":false,"numbersAsStrings":false}
            """)))
    }

    @Test("NSPredicate(value: true) and a nil zone search every record in every zone")
    func everything() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[]}"#)
        let query = Query(recordType: "Artist", predicate: NSPredicate(value: true))
        _ = try await Support.container(fake).publicCloudDatabase.records(matching: query)
        let body = try fake.body()
        #expect(body[path: "query.filterBy"] == .array([]))
        #expect(body[path: "zoneWide"] == .bool(true))
        #expect(body[path: "zoneID"] == nil)
        #expect(body[path: "resultsLimit"] == nil)
    }

    @Test("a bad predicate fails the query before anything is sent")
    func badQuery() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[]}"#)
        let query = Query(recordType: "Artist", predicate: "name == 'a' OR age > 3")
        #expect(throws: CloudKitError.self) { try query.validate() }
        let error = await #expect(throws: CloudKitError.self) { try await Support.container(fake).privateCloudDatabase.records(matching: query) }
        #expect(error?.reason.contains("column 13") == true)
        #expect(fake.requests.isEmpty)
    }
}
