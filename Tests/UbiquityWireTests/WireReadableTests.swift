// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityWire

/// A `WireReadable` request reads the same whether decoded straight from the body (the server,
/// through `JSONDecoder`) or read from a `JSONValue` tree, and names the same path when it is wrong.
@Suite struct WireReadableTests {
    /// What reading a body gave: the request, or the error's message.
    enum Outcome<T: Equatable>: Equatable {
        case read(T)
        case refused(String)

        init(_ body: () throws -> T) {
            do {
                self = .read(try body())
            } catch {
                self = .refused((error as? UbiquityError)?.message ?? (error as? WireError)?.reason ?? "\(error)")
            }
        }

        func get() throws -> T {
            switch self {
            case .read(let value): return value
            case .refused(let message): throw UbiquityError(.invalidArgument, message)
            }
        }
    }

    /// The request read both ways: decoded straight from the body, and read from a tree.
    private static func both<T: WireReadable & Equatable>(_ type: T.Type, _ body: String) throws -> (decoded: Outcome<T>, read: Outcome<T>) {
        (Outcome { try JSONDecoder().decode(T.self, from: Data(body.utf8)) }, Outcome { try T(json: JSONValue.parse(Data(body.utf8))) })
    }

    static let modifyBodies = [
        #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"a","fields":{"title":{"value":"hi","type":"STRING"},"n":{"value":7},"at":{"value":1700000000123.456,"type":"TIMESTAMP"},"tags":{"value":["x","y"]},"gone":{"value":null},"where":{"value":{"latitude":1.5,"longitude":2}}}}},{"operationType":"forceDelete","record":{"recordName":"b"}}],"zoneID":{"zoneName":"Z"},"atomic":false,"desiredKeys":["title"],"numbersAsStrings":1}"#,
        #"{"operations":[{"operationType":"update","record":{"recordName":"a","recordChangeTag":"3","created":{"timestamp":5,"userRecordName":"_u"},"parent":{"recordName":"p"},"zoneID":{"zoneName":"Z","ownerRecordName":"_o"}}}]}"#,
    ]

    @Test("modify requests read the same both ways", arguments: modifyBodies)
    func modify(_ body: String) throws {
        let (decoded, read) = try Self.both(WireModifyRecordsRequest.self, body)
        #expect(decoded == read)
        #expect(try decoded.get().operations.count >= 1)
    }

    @Test("an unreadable operation is its own refusal, with its record name, both ways")
    func unreadableOperation() throws {
        let body = #"{"operations":[{"operationType":"create","record":{"recordName":"ok","recordType":"N"}},{"operationType":"create","record":{"recordName":"bad","recordType":"N","fields":{"n":{"value":"seven","type":"INT64"}}}},{"operationType":"explode","record":{"recordName":"worse"}}]}"#
        let (decoded, read) = try Self.both(WireModifyRecordsRequest.self, body)
        #expect(decoded == read)
        let request = try decoded.get()
        #expect(request.operations.count == 3)
        #expect(request.unreadable[0] == nil)
        #expect(request.unreadable[1]?.recordName == "bad")
        #expect(request.unreadable[1]?.reason.contains("operations[1].record.fields.n.value: expected an integer") == true)
        #expect(request.unreadable[2]?.reason.contains("operations[2].operationType: unknown operation explode") == true)
    }

    static let queryBodies = [
        #"{"query":{"recordType":"Item","filterBy":[{"fieldName":"cat","comparator":"EQUALS","fieldValue":{"value":"c0","type":"STRING"}},{"systemFieldName":"createdTimestamp","comparator":"GREATER_THAN","fieldValue":{"value":5}}],"sortBy":[{"fieldName":"rank","ascending":false}]},"resultsLimit":"50","zoneID":{"zoneName":"_defaultZone"},"continuationMarker":"m","zoneWide":true}"#,
        #"{"query":{"recordType":"Place","filterBy":[{"fieldName":"at","comparator":"NEAR","fieldValue":{"value":{"latitude":1,"longitude":2}},"distance":5000}],"sortBy":[{"fieldName":"at","relativeLocation":{"latitude":1,"longitude":2}}]}}"#,
    ]

    @Test("query requests read the same both ways", arguments: queryBodies)
    func query(_ body: String) throws {
        let (decoded, read) = try Self.both(WireQueryRecordsRequest.self, body)
        #expect(decoded == read)
        _ = try decoded.get()
    }

    @Test("lookups, zone changes and zone requests read the same both ways")
    func others() throws {
        let lookup = try Self.both(WireLookupRecordsRequest.self, #"{"records":[{"recordName":"a"},{"recordName":"b","desiredKeys":["x"]}],"zoneID":{"zoneName":"Z"}}"#)
        #expect(lookup.decoded == lookup.read)
        #expect(try lookup.decoded.get().records.map(\.recordName) == ["a", "b"])
        let changes = try Self.both(WireZoneChangesRequest.self, #"{"zones":[{"zoneID":{"zoneName":"Z"},"syncToken":"t","resultsLimit":10,"numberAsStrings":true}],"reverse":false}"#)
        #expect(changes.decoded == changes.read)
        let legacy = try Self.both(WireRecordChangesRequest.self, #"{"zoneID":{"zoneName":"Z"},"syncToken":"t","resultsLimit":3}"#)
        #expect(legacy.decoded == legacy.read)
        #expect(try legacy.decoded.get().changes.zones.first?.syncToken == "t")
        let zones = try Self.both(WireLookupZonesRequest.self, #"{"zones":[{"zoneName":"A"},{"zoneID":{"zoneName":"B"}}]}"#)
        #expect(zones.decoded == zones.read)
        #expect(try zones.decoded.get().zones.map(\.zoneName) == ["A", "B"])
        let modifyZones = try Self.both(WireModifyZonesRequest.self, #"{"operations":[{"operationType":"create","zone":{"zoneID":{"zoneName":"A"}}},{"operationType":"DELETE","zone":{"zoneName":"B"}}]}"#)
        #expect(modifyZones.decoded == modifyZones.read)
        let database = try Self.both(WireDatabaseChangesRequest.self, #"{"metaSyncToken":"m","resultsLimit":2}"#)
        #expect(database.decoded == database.read)
        #expect(try database.decoded.get().syncToken == "m")
    }

    static let mistakes: [(body: String, message: String)] = [
        (#"{"records":[{"recordName":5}]}"#, "records[0].recordName: expected a string, got a number"),
        (#"{"records":{"recordName":"a"}}"#, "records: expected an array, got an object"),
        (#"{"records":["a"]}"#, "records[0]: expected an object, got a string"),
        (#"{}"#, "records: required, expected an array"),
        (#"[]"#, "request body: expected an object, got an array"),
        (#"{"records":[{"recordName":"a"}],"zoneID":{"zoneName":""}}"#, "zoneID.zoneName: a zone name must be 1 to 255 bytes"),
        (#"{"records":[{"recordName":"a","desiredKeys":[1]}]}"#, "records[0].desiredKeys[0]: expected a string, got a number"),
    ]

    @Test("a mistake is named by the same path both ways", arguments: mistakes)
    func mistake(_ mistake: (body: String, message: String)) throws {
        let (decoded, read) = try Self.both(WireLookupRecordsRequest.self, mistake.body)
        #expect(decoded == read)
        guard case .refused(let message) = decoded else { Issue.record("\(mistake.body) was read"); return }
        #expect(message.contains(mistake.message), "\(message)")
    }

    @Test("a query's mistakes are named by path both ways")
    func queryMistakes() throws {
        let cases: [(String, String)] = [
            (#"{"query":{"recordType":"T","filterBy":[{"fieldName":"a","comparator":"LIKE","fieldValue":{"value":1}}]}}"#, "query.filterBy[0].comparator: unknown comparator LIKE"),
            (#"{"query":{"recordType":"T","filterBy":[{"fieldName":"a","comparator":"EQUALS"}]}}"#, "query.filterBy[0].fieldValue: required"),
            (#"{"query":{"recordType":"T"},"resultsLimit":0}"#, "resultsLimit: must be at least 1"),
            (#"{"query":{"recordType":"T"},"resultsLimit":true}"#, "resultsLimit: expected an integer, got a boolean"),
            (#"{"query":5}"#, "query: expected an object, got a number"),
        ]
        for (body, expected) in cases {
            let (decoded, read) = try Self.both(WireQueryRecordsRequest.self, body)
            #expect(decoded == read, "\(body)")
            guard case .refused(let message) = decoded else { Issue.record("\(body) was read"); continue }
            #expect(message.contains(expected), "\(message)")
        }
    }
}
