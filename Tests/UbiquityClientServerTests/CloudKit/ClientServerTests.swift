// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityServer
import UbiquityCloudKit

/// The Swift CloudKit client (`Ubiquity`) against a real `RecordsServer` on loopback.
@Suite struct ClientServerTests {
    final class Harness: Sendable {
        let container: CloudContainer
        let task: Task<Void, any Error>
        let store: any RecordStore
        let directory: URL

        init() async throws {
            directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-client-\(UUID().uuidString.prefix(8))")
            var logger = Logger(label: "test.client-server")
            logger.logLevel = .warning
            store = try SQLiteRecordStore(directory: directory, logger: logger)
            let admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
            let api = try await admin.addContainer("iCloud.org.example.Client")
            let web = try await admin.addUser("mei", email: nil, password: nil)
            let server = RecordsServer(store: store, configuration: .init(), logger: logger)
            let (stream, continuation) = AsyncStream<String>.makeStream()
            task = Task { try await server.application { continuation.yield($0) }.run() }
            var iterator = stream.makeAsyncIterator()
            let url = try #require(await iterator.next())
            container = CloudContainer(identifier: "iCloud.org.example.Client", serverURL: URL(string: url)!,
                                       credentials: .apiToken(api, webAuthToken: web), logger: logger)
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
            try? FileManager.default.removeItem(at: directory)
        }
    }

    @Test func saveFetchConflictQueryPageAndSync() async throws {
        let harness = try await Harness()
        defer { Task { await harness.stop() } }
        let database = harness.container.privateCloudDatabase
        let me = try await harness.container.userRecordID()
        #expect(me.recordName.hasPrefix("_"))

        let zone = try await database.save(RecordZone(zoneName: "Notes"))
        var note = Record(recordType: "Note", zoneID: zone.zoneID)
        note["title"] = "Groceries"
        note["count"] = 3
        note["price"] = 2.5
        note["when"] = Date(timeIntervalSince1970: 1_700_000_000)
        note["tags"] = ["food", "weekly"]
        note["where"] = Location(latitude: 48.85, longitude: 2.35)
        let saved = try await database.save(note)
        #expect(saved.recordChangeTag != nil)
        let fetched = try await database.record(for: note.recordID)
        #expect(fetched["title"] as String? == "Groceries")
        #expect(fetched["count"] as Int64? == 3)
        #expect(fetched["tags"] as [String]? == ["food", "weekly"])

        // a stale copy: serverRecordChanged carrying the server's record
        var first = fetched
        first["title"] = "Groceries (edited)"
        _ = try await database.save(first)
        var stale = fetched
        stale["title"] = "Lost edit"
        await #expect {
            _ = try await database.save(stale)
        } throws: { error in
            guard let error = error as? CloudKitError, error.code == .serverRecordChanged else { return false }
            return error.serverRecord?["title"] as String? == "Groceries (edited)"
        }

        // queries with NSPredicate format strings, and paging with cursors
        var batch: [Record] = []
        for index in 0..<250 {
            var item = Record(recordType: "Item", zoneID: zone.zoneID)
            item["rank"] = Int64(index)
            item["name"] = index % 2 == 0 ? "even \(index)" : "odd \(index)"
            batch.append(item)
        }
        let results = try await database.modifyRecords(saving: batch, deleting: [])
        #expect(results.saveResults.values.allSatisfy { (try? $0.get()) != nil })
        var query = Query(recordType: "Item", predicate: "name BEGINSWITH %@ AND rank >= %d", "even", 100)
        query.sortDescriptors = [Query.SortDescriptor(key: "rank", ascending: true)]
        var page = try await database.records(matching: query, inZoneWith: zone.zoneID, resultsLimit: 50)
        var ranks = page.matchResults.compactMap { try? $0.1.get()["rank"] as Int64? }
        while let cursor = page.queryCursor {
            page = try await database.records(continuingMatchFrom: cursor, resultsLimit: 50)
            ranks += page.matchResults.compactMap { try? $0.1.get()["rank"] as Int64? }
        }
        #expect(ranks == Array(stride(from: 100, to: 250, by: 2)).map(Int64.init))
        let near = Query(recordType: "Note", predicate: "distanceToLocation:fromLocation:(where, %@) < 5", Location(latitude: 48.86, longitude: 2.35))
        #expect(try await database.records(matching: near, inZoneWith: zone.zoneID).matchResults.count == 1)

        // zone changes with tokens: everything, then only what changed after
        var token: ServerChangeToken?
        var changed = 0
        var more = true
        while more {
            let changes = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token)
            changed += changes.modificationResultsByID.count
            token = changes.changeToken
            more = changes.moreComing
        }
        #expect(changed == 251)
        _ = try await database.deleteRecord(withID: note.recordID)
        let after = try await database.recordZoneChanges(inZoneWith: zone.zoneID, since: token)
        #expect(after.modificationResultsByID.isEmpty)
        #expect(after.deletions.map(\.recordID) == [note.recordID])
        let databaseChanges = try await database.databaseChanges(since: nil)
        #expect(databaseChanges.modifications.map(\.zoneID.zoneName).contains("Notes"))
        await #expect {
            _ = try await database.record(for: note.recordID)
        } throws: { ($0 as? CloudKitError)?.code == .unknownItem }
    }
}
