// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityCloudKit

@Suite("CloudKit cursors and change fetching")
struct CloudKitChangesTests {
    typealias Support = CloudKitTestSupport

    @Test("a query page with a continuation marker gives a cursor that continues the same query")
    func cursor() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (200, #"{"records":[\#(Support.recordJSON("a"))],"continuationMarker":"EgYZYs4rPu8aKAok"}"#),
            (200, #"{"records":[\#(Support.recordJSON("b"))]}"#),
        ])
        let database = Support.container(fake).publicCloudDatabase
        let query = Query(recordType: "Artist", predicate: "age > %d", 30)
        let (first, cursor) = try await database.records(matching: query, inZoneWith: .default, resultsLimit: 1)
        #expect(first.map(\.0.recordName) == ["a"])
        let next = try #require(cursor)
        #expect(next.continuationMarker == "EgYZYs4rPu8aKAok")
        // The cursor survives being stored.
        let stored = try JSONDecoder().decode(QueryOperation.Cursor.self, from: JSONEncoder().encode(next))
        #expect(stored == next)
        let (second, end) = try await database.records(continuingMatchFrom: stored, resultsLimit: 1)
        #expect(second.map(\.0.recordName) == ["b"])
        #expect(end == nil)
        let body = try fake.body(1)
        #expect(body[path: "continuationMarker"] == "EgYZYs4rPu8aKAok")
        #expect(body[path: "query"] == (try fake.body(0)[path: "query"]))
        #expect(body[path: "zoneID.zoneName"] == "_defaultZone")
    }

    @Test("QueryOperation reports matches in order and the cursor")
    func queryOperation() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[\#(Support.recordJSON("a")),\#(Support.recordJSON("b"))],"continuationMarker":"m1"}"#)
        let operation = QueryOperation(query: Query(recordType: "Artist", predicate: .true))
        operation.resultsLimit = 500
        let names = Mutex<[String]>([])
        let cursor = Mutex<QueryOperation.Cursor?>(nil)
        operation.recordMatchedBlock = { id, _ in names.withLock { $0.append(id.recordName) } }
        operation.queryResultBlock = { result in cursor.withLock { $0 = try? result.get() } }
        operation.database = Support.container(fake).privateCloudDatabase
        try await operation.run()
        #expect(names.withLock { $0 } == ["a", "b"])
        #expect(cursor.withLock { $0 }?.continuationMarker == "m1")
        #expect(try fake.body()[path: "resultsLimit"] == 200)
        let follow = QueryOperation(cursor: try #require(cursor.withLock { $0 }))
        follow.database = Support.container(fake).privateCloudDatabase
        _ = try? await follow.run()
        #expect(try fake.body(1)[path: "continuationMarker"] == "m1")
    }

    static let zone = RecordZone.ID(zoneName: "Notes")

    static func zonePage(token: String, moreComing: Bool, records: [String]) -> String {
        #"{"zones":[{"zoneID":{"zoneName":"Notes","ownerRecordName":"_u1","zoneType":"REGULAR_CUSTOM_ZONE"},"syncToken":"\#(token)","moreComing":\#(moreComing),"records":[\#(records.joined(separator: ","))]}]}"#
    }

    @Test("zone changes follow moreComing with the new token, reporting changes, deletions and tokens")
    func zoneChanges() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (200, Self.zonePage(token: "T1", moreComing: true, records: [Support.recordJSON("n1", type: "Note", zone: "Notes")])),
            (200, Self.zonePage(token: "T2", moreComing: false, records: [
                #"{"recordName":"n0","deleted":true,"zoneID":{"zoneName":"Notes","ownerRecordName":"_u1"}}"#,
                #"{"recordName":"n9","recordType":"Note","deleted":true}"#,
                Support.recordJSON("n2", type: "Note", zone: "Notes"),
            ])),
        ])
        let operation = FetchRecordZoneChangesOperation(
            recordZoneIDs: [Self.zone],
            configurationsByRecordZoneID: [Self.zone: .init(previousServerChangeToken: ServerChangeToken(rawValue: "T0"), resultsLimit: 1, desiredKeys: ["text"])])
        let events = Mutex<[String]>([])
        operation.recordWasChangedBlock = { id, result in
            events.withLock { $0.append("changed \(id.recordName) \(id.zoneID == Self.zone) \((try? result.get())?.recordType ?? "-")") }
        }
        operation.recordWithIDWasDeletedBlock = { id, type in events.withLock { $0.append("deleted \(id.recordName) \(type)") } }
        operation.recordZoneChangeTokensUpdatedBlock = { zone, token, _ in events.withLock { $0.append("token \(zone.zoneName) \(token?.rawValue ?? "-")") } }
        operation.recordZoneFetchResultBlock = { zone, result in
            let value = try? result.get()
            events.withLock { $0.append("zone \(zone == Self.zone) \(value?.serverChangeToken.rawValue ?? "-") \(value?.moreComing ?? true)") }
        }
        operation.fetchRecordZoneChangesResultBlock = { result in events.withLock { $0.append("done \((try? result.get()) != nil)") } }
        operation.database = Support.container(fake).privateCloudDatabase
        try await operation.run()
        #expect(events.withLock { $0 } == [
            "changed n1 true Note", "token Notes T1",
            "changed n2 true Note", "deleted n0 ", "deleted n9 Note",
            "zone true T2 false", "done true",
        ])
        #expect(fake.requests[0].path.hasSuffix("/private/changes/zone"))
        #expect(try fake.body(0) == (try Support.json("""
            {"zones":[{"zoneID":{"zoneName":"Notes","zoneType":"REGULAR_CUSTOM_ZONE"},"syncToken":"T0","desiredKeys":["text"],"resultsLimit":1}],
             "numbersAsStrings":false,"reverse":false}
            """)))
        #expect(try fake.body(1)[path: "zones[0].syncToken"] == "T1")
    }

    @Test("without fetchAllChanges one page is fetched and the zone result says more is coming")
    func onePage() async throws {
        let fake = FakeCloudKitTransport(json: Self.zonePage(token: "T1", moreComing: true, records: []))
        let operation = FetchRecordZoneChangesOperation(recordZoneIDs: [Self.zone])
        operation.fetchAllChanges = false
        let result = Mutex<FetchRecordZoneChangesOperation.ZoneResult?>(nil)
        operation.recordZoneFetchResultBlock = { _, zoneResult in result.withLock { $0 = try? zoneResult.get() } }
        operation.database = Support.container(fake).privateCloudDatabase
        try await operation.run()
        #expect(fake.requests.count == 1)
        #expect(try fake.body()[path: "zones[0].syncToken"] == nil)
        #expect(result.withLock { $0 }?.moreComing == true)
        #expect(result.withLock { $0 }?.serverChangeToken == ServerChangeToken(rawValue: "T1"))
    }

    @Test("the convenience form returns one page; an expired token is changeTokenExpired")
    func convenience() async throws {
        let fake = FakeCloudKitTransport(json: Self.zonePage(token: "T1", moreComing: true, records: [
            Support.recordJSON("n1", type: "Note", zone: "Notes"), #"{"recordName":"n0","deleted":true}"#,
        ]))
        let database = Support.container(fake).privateCloudDatabase
        let changes = try await database.recordZoneChanges(inZoneWith: Self.zone, since: nil)
        #expect(changes.changeToken.rawValue == "T1")
        #expect(changes.moreComing)
        #expect(try changes.modificationResultsByID[Record.ID(recordName: "n1", zoneID: Self.zone)]?.get().record.recordType == "Note")
        #expect(changes.deletions == [CloudDatabase.RecordZoneChange.Deletion(recordID: Record.ID(recordName: "n0", zoneID: Self.zone), recordType: nil)])

        let expired = FakeCloudKitTransport(responses: [(410, #"{"serverErrorCode":"CHANGE_TOKEN_EXPIRED","reason":"sync token expired; fetch again without one"}"#)])
        let error = await #expect(throws: CloudKitError.self) {
            try await Support.container(expired).privateCloudDatabase.recordZoneChanges(inZoneWith: Self.zone, since: ServerChangeToken(rawValue: "old"))
        }
        #expect(error?.code == .changeTokenExpired)
        // Per-zone errors are reported for the zone and make a partial failure.
        let perZone = FakeCloudKitTransport(json: #"{"zones":[{"zoneID":{"zoneName":"Notes"},"serverErrorCode":"ZONE_NOT_FOUND","reason":"no zone"}]}"#)
        let operation = FetchRecordZoneChangesOperation(recordZoneIDs: [Self.zone])
        operation.database = Support.container(perZone).privateCloudDatabase
        let thrown = await #expect(throws: CloudKitError.self) { try await operation.run() }
        #expect(thrown?.code == .partialFailure)
        #expect(thrown?.partialErrorsByZoneID[Self.zone]?.code == .zoneNotFound)
    }

    @Test("database changes report changed, deleted and purged zones and follow moreComing")
    func databaseChanges() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (200, #"{"zones":[{"zoneID":{"zoneName":"A","ownerRecordName":"_u1","zoneType":"REGULAR_CUSTOM_ZONE"},"deleted":false}],"moreComing":true,"syncToken":"D1"}"#),
            (200, #"{"zones":[{"zoneID":{"zoneName":"B"},"deleted":true},{"zoneID":{"zoneName":"C"},"deleted":true,"purged":true}],"moreComing":false,"syncToken":"D2"}"#),
        ])
        let database = Support.container(fake).privateCloudDatabase
        let operation = FetchDatabaseChangesOperation(previousServerChangeToken: ServerChangeToken(rawValue: "D0"))
        let events = Mutex<[String]>([])
        operation.recordZoneWithIDChangedBlock = { zone in events.withLock { $0.append("changed \(zone.zoneName) \(zone.ownerName)") } }
        operation.recordZoneWithIDWasDeletedBlock = { zone in events.withLock { $0.append("deleted \(zone.zoneName)") } }
        operation.recordZoneWithIDWasPurgedBlock = { zone in events.withLock { $0.append("purged \(zone.zoneName)") } }
        operation.changeTokenUpdatedBlock = { token in events.withLock { $0.append("token \(token.rawValue)") } }
        operation.fetchDatabaseChangesResultBlock = { result in
            events.withLock { $0.append("done \((try? result.get())?.serverChangeToken.rawValue ?? "-")") }
        }
        database.add(operation)
        await operation.waitUntilFinished()
        #expect(events.withLock { $0 } == ["changed A _u1", "token D1", "deleted B", "purged C", "done D2"])
        #expect(try fake.body(0) == (try Support.json(#"{"syncToken":"D0"}"#)))
        #expect(try fake.body(1) == (try Support.json(#"{"syncToken":"D1"}"#)))
        #expect(fake.requests[0].path.hasSuffix("/private/changes/database"))

        let single = FakeCloudKitTransport(json: #"{"zones":[{"zoneID":{"zoneName":"A"}}],"moreComing":true,"syncToken":"D1"}"#)
        let page = try await Support.container(single).privateCloudDatabase.databaseChanges(since: nil, resultsLimit: 5)
        #expect(page.modifications.map(\.zoneID) == [RecordZone.ID(zoneName: "A")])
        #expect(page.moreComing)
        #expect(try single.body() == (try Support.json(#"{"resultsLimit":5}"#)))
    }
}
