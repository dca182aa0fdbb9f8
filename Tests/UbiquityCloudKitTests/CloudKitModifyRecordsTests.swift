// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

@Suite("CloudKit modify records")
struct CloudKitModifyRecordsTests {
    typealias Support = CloudKitTestSupport

    /// A record as fetched from the server (change tag "e", fields name and age).
    static func fetched(zone: RecordZone.ID = .default) throws -> Record {
        let wire = try WireRecord(json: try Support.json(Support.recordJSON("101", tag: "e",
            fields: #"{"name":{"value":"Mei","type":"STRING"},"age":{"value":30,"type":"INT64"}}"#, zone: zone.zoneName)), path: "")
        return Record(wire: wire, zone: zone)
    }

    @Test("a new record is a create with every key and no change tag")
    func create() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[\#(Support.recordJSON("Mei Chen", tag: "1"))]}"#)
        var record = Record(recordType: "Artist", recordID: Record.ID(recordName: "Mei Chen"))
        record["firstName"] = "Mei"
        record["lastName"] = "Chen"
        let saved = try await Support.container(fake).privateCloudDatabase.save(record)
        #expect(saved.recordChangeTag == "1")
        #expect(saved.changedKeys().isEmpty)
        let request = fake.requests[0]
        #expect(request.method == "POST")
        #expect(request.path == "/database/1/iCloud.com.example.notes/development/private/records/modify")
        #expect(try fake.body() == (try Support.json("""
            {"operations":[{"operationType":"create","record":{"recordName":"Mei Chen","recordType":"Artist",
              "fields":{"firstName":{"value":"Mei","type":"STRING"},"lastName":{"value":"Chen","type":"STRING"}}}}],
             "zoneID":{"zoneName":"_defaultZone","zoneType":"DEFAULT_ZONE"},"atomic":false,"numbersAsStrings":false}
            """)))
    }

    @Test("save policies: update with the change tag, forceUpdate with changed keys or all keys, forceDelete")
    func policies() async throws {
        var record = try Self.fetched()
        record["age"] = 31
        let expectations: [(ModifyRecordsOperation.RecordSavePolicy, String)] = [
            (.ifServerRecordUnchanged, #"{"operationType":"update","record":{"recordName":"101","recordType":"Artist","recordChangeTag":"e","fields":{"age":{"value":31,"type":"INT64"}}}}"#),
            (.changedKeys, #"{"operationType":"forceUpdate","record":{"recordName":"101","recordType":"Artist","fields":{"age":{"value":31,"type":"INT64"}}}}"#),
            (.allKeys, #"{"operationType":"forceUpdate","record":{"recordName":"101","recordType":"Artist","fields":{"age":{"value":31,"type":"INT64"},"name":{"value":"Mei","type":"STRING"}}}}"#),
        ]
        for (policy, expected) in expectations {
            let fake = FakeCloudKitTransport(json: #"{"records":[\#(Support.recordJSON("101", tag: "f")),{"recordName":"gone","deleted":true}]}"#)
            let database = Support.container(fake).privateCloudDatabase
            let (saves, deletes) = try await database.modifyRecords(saving: [record], deleting: [Record.ID(recordName: "gone")],
                                                                     savePolicy: policy, atomically: true)
            #expect(try saves[record.recordID]?.get().recordChangeTag == "f")
            #expect(throws: Never.self) { try deletes[Record.ID(recordName: "gone")]?.get() }
            let body = try fake.body()
            #expect(body[path: "operations[0]"] == (try Support.json(expected)), "\(policy)")
            #expect(body[path: "operations[1]"] == (try Support.json(#"{"operationType":"forceDelete","record":{"recordName":"gone"}}"#)))
            #expect(body[path: "atomic"] == .bool(true))
        }
    }

    @Test("the change tag of a saved record is sent on its next save")
    func changeTag() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (200, #"{"records":[\#(Support.recordJSON("n1", type: "Note", tag: "a1"))]}"#),
            (200, #"{"records":[\#(Support.recordJSON("n1", type: "Note", tag: "a2"))]}"#),
        ])
        let database = Support.container(fake).privateCloudDatabase
        var note = Record(recordType: "Note", recordID: Record.ID(recordName: "n1"))
        note["text"] = "one"
        note = try await database.save(note)
        note["text"] = "two"
        note = try await database.save(note)
        #expect(note.recordChangeTag == "a2")
        #expect(try fake.body(1)[path: "operations[0].operationType"] == "update")
        #expect(try fake.body(1)[path: "operations[0].record.recordChangeTag"] == "a1")
    }

    @Test("a conflict is serverRecordChanged with the server's record and the client's")
    func conflict() async throws {
        let serverRecord = Support.recordJSON("101", tag: "g", fields: #"{"name":{"value":"Server","type":"STRING"}}"#)
        let fake = FakeCloudKitTransport(json: """
            {"records":[{"recordName":"101","reason":"record changed","serverErrorCode":"CONFLICT","uuid":"u-1","serverRecord":\(serverRecord)}]}
            """)
        var record = try Self.fetched()
        record["name"] = "Client"
        let error = await #expect(throws: CloudKitError.self) { try await Support.container(fake).privateCloudDatabase.save(record) }
        #expect(error?.code == .serverRecordChanged)
        #expect(error?.serverErrorCode == "CONFLICT")
        #expect(error?.reason == "record changed")
        #expect(error?.uuid == "u-1")
        #expect(error?.serverRecord?.recordChangeTag == "g")
        #expect(error?.serverRecord?["name"] == "Server")
        #expect(error?.serverRecord?.recordID == record.recordID)
        #expect(error?.clientRecord?["name"] == "Client")
        // Saving the server's record with the change applied goes through as an update with tag g.
        var merged = try #require(error?.serverRecord)
        merged["name"] = "Merged"
        let operation = try CloudDatabase.operation(for: merged, policy: .ifServerRecordUnchanged)
        #expect(operation.operationType == .update)
        #expect(operation.record.recordChangeTag == "g")
    }

    @Test("per-item errors make a partial failure; the per-record blocks see each outcome")
    func partialFailure() async throws {
        let fake = FakeCloudKitTransport(json: """
            {"records":[\(Support.recordJSON("ok", tag: "1")),
                        {"recordName":"taken","reason":"already exists","serverErrorCode":"EXISTS"},
                        {"recordName":"missing","reason":"not found","serverErrorCode":"NOT_FOUND"}]}
            """)
        let database = Support.container(fake).privateCloudDatabase
        let operation = ModifyRecordsOperation(recordsToSave: [Record(recordType: "Artist", recordID: Record.ID(recordName: "ok")),
                                                               Record(recordType: "Artist", recordID: Record.ID(recordName: "taken"))],
                                               recordIDsToDelete: [Record.ID(recordName: "missing")])
        let seen = Mutex<[String]>([])
        let final = Mutex<Result<Void, any Error>?>(nil)
        operation.perRecordSaveBlock = { id, result in
            seen.withLock { $0.append("save \(id.recordName) \((try? result.get()) != nil ? "ok" : "\((result.error as? CloudKitError)?.code.description ?? "?")")") }
        }
        operation.perRecordDeleteBlock = { id, result in
            seen.withLock { $0.append("delete \(id.recordName) \((result.error as? CloudKitError)?.code.description ?? "ok")") }
        }
        operation.modifyRecordsResultBlock = { result in final.withLock { $0 = result } }
        database.add(operation)
        await operation.waitUntilFinished()
        #expect(operation.isFinished)
        #expect(seen.withLock { $0 } == ["save ok ok", "save taken serverRecordChanged", "delete missing unknownItem"])
        let error = try #require(final.withLock { $0 }?.error as? CloudKitError)
        #expect(error.code == .partialFailure)
        #expect(error.partialErrorsByRecordID[Record.ID(recordName: "taken")]?.code == .serverRecordChanged)
        #expect(error.partialErrorsByRecordID[Record.ID(recordName: "missing")]?.code == .unknownItem)
        #expect(error.partialErrorsByItemID?.count == 2)
        #expect((error.partialErrorsByItemID?[AnyHashable(Record.ID(recordName: "taken"))] as? CloudKitError)?.serverErrorCode == "EXISTS")
        // run() throws the same error.
        let again = ModifyRecordsOperation(recordsToSave: [Record(recordType: "Artist", recordID: Record.ID(recordName: "taken"))],
                                           recordIDsToDelete: nil)
        again.database = Support.container(FakeCloudKitTransport(json: #"{"records":[{"recordName":"taken","reason":"x","serverErrorCode":"EXISTS"}]}"#)).privateCloudDatabase
        let thrown = await #expect(throws: CloudKitError.self) { try await again.run() }
        #expect(thrown?.code == .partialFailure)
    }

    @Test("atomic batch failures are batchRequestFailed for the bystanders")
    func atomic() async throws {
        let zone = RecordZone.ID(zoneName: "Notes")
        let fake = FakeCloudKitTransport(json: """
            {"records":[{"recordName":"a","reason":"conflict","serverErrorCode":"CONFLICT"},
                        {"recordName":"b","reason":"another item failed","serverErrorCode":"ATOMIC_ERROR"}]}
            """)
        let records = ["a", "b"].map { Record(recordType: "Note", recordID: Record.ID(recordName: $0, zoneID: zone)) }
        let (saves, _) = try await Support.container(fake).privateCloudDatabase.modifyRecords(saving: records, deleting: [])
        #expect((saves[records[0].recordID]?.error as? CloudKitError)?.code == .serverRecordChanged)
        #expect((saves[records[1].recordID]?.error as? CloudKitError)?.code == .batchRequestFailed)
        #expect(try fake.body()[path: "zoneID.zoneName"] == "Notes")
        #expect(try fake.body()[path: "atomic"] == .bool(true))
        #expect(saves[records[1].recordID].map { _ in records[1].recordID.zoneID } == zone)
    }

    @Test("more than 200 operations are split into requests of 200, per zone")
    func chunking() async throws {
        let fake = FakeCloudKitTransport { request, _ in
            let body = try JSONValue.parse(request.body)
            let records = body[path: "operations"]!.arrayValue!.map { operation -> JSONValue in
                try! Support.json(Support.recordJSON(operation[path: "record.recordName"]!.stringValue!))
            }
            return CloudKitHTTPResponse(status: 200, body: JSONValue.object(["records": .array(records)]).serialized())
        }
        let other = RecordZone.ID(zoneName: "Other")
        let records = (0..<450).map { Record(recordType: "Artist", recordID: Record.ID(recordName: "r\($0)")) }
            + (0..<3).map { Record(recordType: "Artist", recordID: Record.ID(recordName: "o\($0)", zoneID: other)) }
        let (saves, _) = try await Support.container(fake).privateCloudDatabase.modifyRecords(saving: records, deleting: [])
        #expect(saves.count == 453)
        #expect(saves.values.allSatisfy { (try? $0.get()) != nil })
        let sizes = try fake.requests.indices.map { try fake.body($0)[path: "operations"]!.arrayValue!.count }
        #expect(sizes == [200, 200, 50, 3])
        #expect(try fake.body(3)[path: "zoneID.zoneName"] == "Other")
        #expect(saves[Record.ID(recordName: "o1", zoneID: other)] != nil)
    }

    @Test("a batch refused with 'limit exceeded' is halved until it fits")
    func halving() async throws {
        let fake = FakeCloudKitTransport { request, _ in
            let operations = try JSONValue.parse(request.body)[path: "operations"]!.arrayValue!
            if operations.count > 60 {
                return CloudKitHTTPResponse(status: 400, body: Data(#"{"serverErrorCode":"BAD_REQUEST","reason":"limit exceeded: 1 MB per request","uuid":"x"}"#.utf8))
            }
            let records = operations.map { try! Support.json(Support.recordJSON($0[path: "record.recordName"]!.stringValue!)) }
            return CloudKitHTTPResponse(status: 200, body: JSONValue.object(["records": .array(records)]).serialized())
        }
        let records = (0..<250).map { Record(recordType: "Artist", recordID: Record.ID(recordName: "r\($0)")) }
        let (saves, _) = try await Support.container(fake).privateCloudDatabase.modifyRecords(saving: records, deleting: [])
        #expect(saves.values.allSatisfy { (try? $0.get()) != nil })
        #expect(saves.count == 250)
        let sizes = try fake.requests.indices.map { try fake.body($0)[path: "operations"]!.arrayValue!.count }
        #expect(sizes == [200, 100, 50, 50, 100, 50, 50, 50])
        // A single record still too large fails alone with limitExceeded.
        let always = FakeCloudKitTransport { _, _ in
            CloudKitHTTPResponse(status: 400, body: Data(#"{"serverErrorCode":"BAD_REQUEST","reason":"limit exceeded: record over 1 MB"}"#.utf8))
        }
        let single = Record(recordType: "Artist", recordID: Record.ID(recordName: "huge"))
        let error = await #expect(throws: CloudKitError.self) { try await Support.container(always).privateCloudDatabase.save(single) }
        #expect(error?.code == .limitExceeded)
    }

    @Test("fetching records: found, missing and per-zone requests")
    func fetch() async throws {
        let fake = FakeCloudKitTransport(json: """
            {"records":[\(Support.recordJSON("a")),{"recordName":"b","reason":"no such record","serverErrorCode":"NOT_FOUND"}]}
            """)
        let database = Support.container(fake).publicCloudDatabase
        let results = try await database.records(for: [Record.ID(recordName: "a"), Record.ID(recordName: "b")], desiredKeys: ["name"])
        #expect(try results[Record.ID(recordName: "a")]?.get().recordID.recordName == "a")
        #expect((results[Record.ID(recordName: "b")]?.error as? CloudKitError)?.code == .unknownItem)
        #expect(fake.requests[0].path.hasSuffix("/public/records/lookup"))
        #expect(try fake.body() == (try Support.json("""
            {"records":[{"recordName":"a"},{"recordName":"b"}],"zoneID":{"zoneName":"_defaultZone","zoneType":"DEFAULT_ZONE"},
             "desiredKeys":["name"],"numbersAsStrings":false}
            """)))
        let missing = await #expect(throws: CloudKitError.self) {
            try await Support.container(FakeCloudKitTransport(json: #"{"records":[{"recordName":"b","reason":"gone","serverErrorCode":"NOT_FOUND"}]}"#))
                .privateCloudDatabase.record(for: Record.ID(recordName: "b"))
        }
        #expect(missing?.code == .unknownItem)
    }

    @Test("cancelling an operation before it runs reports operationCancelled")
    func cancel() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[]}"#)
        let operation = FetchRecordsOperation(recordIDs: [Record.ID(recordName: "a")])
        operation.database = Support.container(fake).privateCloudDatabase
        let final = Mutex<(any Error)?>(nil)
        operation.fetchRecordsResultBlock = { result in final.withLock { $0 = result.error } }
        operation.cancel()
        let error = await #expect(throws: CloudKitError.self) { try await operation.run() }
        #expect(error?.code == .operationCancelled)
        #expect((final.withLock { $0 } as? CloudKitError)?.code == .operationCancelled)
        #expect(fake.requests.isEmpty)
        let twice = await #expect(throws: CloudKitError.self) { try await operation.run() }
        #expect(twice?.code == .invalidArguments)
    }
}

extension Result {
    /// The failure, or nil.
    var error: Failure? {
        if case .failure(let error) = self { return error }
        return nil
    }
}
