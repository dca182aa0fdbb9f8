// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// The subscription index against a brute-force evaluation of every subscription on every
/// change: the same notifications, counted, for a thousand subscriptions.
@Suite struct SubscriptionMatchingTests {
    /// A small deterministic generator.
    struct Generator {
        var state: UInt64
        mutating func next(_ bound: Int) -> Int {
            state = state &* 6364136223846793005 &+ 1442695040888963407
            return Int((state >> 33) % UInt64(bound))
        }
    }

    static let database = DatabaseKey(container: "c", environment: .development, scope: .private, owner: "_owner")

    static func record(_ name: String, type: String, fields: [String: WireFieldValue]) -> StoredRecord {
        let stamp = WireRecordStamp(timestamp: 0, userRecordName: "_owner", deviceID: nil)
        return StoredRecord(zone: 1, recordName: name, recordType: type, changeTag: "1", sequence: 1, deleted: false, fields: fields,
                            created: stamp, modified: stamp)
    }

    @Test func theIndexFiresExactlyWhatBruteForceFires() {
        var random = Generator(state: 42)
        let types = ["Note", "Task", "Photo", "Post"]
        var subscriptions: [StoredSubscription] = []
        for index in 0..<1_000 {
            let type = types[random.next(types.count)]
            var filters: [WireFilter] = []
            if random.next(2) == 0 { filters.append(WireFilter(comparator: .greaterThan, key: .field("n"), fieldValue: .int64(Int64(random.next(100))))) }
            if random.next(3) == 0 { filters.append(WireFilter(comparator: .equals, key: .field("tag"), fieldValue: .string("t\(random.next(5))"))) }
            var firesOn = StoredSubscription.FiresOn()
            if random.next(2) == 0 { firesOn.insert(.create) }
            if random.next(2) == 0 { firesOn.insert(.update) }
            if random.next(2) == 0 || firesOn.isEmpty { firesOn.insert(.delete) }
            let zoneWide = random.next(4) != 0
            subscriptions.append(StoredSubscription(database: Self.database, subscriber: "_u\(index % 7)", subscriptionID: "s\(index)", kind: .query,
                                                    query: WireQuery(recordType: type, filterBy: filters), zoneName: zoneWide ? nil : "Z\(random.next(2))",
                                                    zoneWide: zoneWide, firesOn: firesOn, createdAt: 0))
        }
        let index = SubscriptionIndex(generation: 1, subscriptions: subscriptions)
        var indexed = 0
        var brute = 0
        for change in 0..<2_000 {
            let type = types[random.next(types.count)]
            let kind: RecordChange.Kind = [.created, .updated, .deleted][random.next(3)]
            let record = Self.record("r\(change)", type: type, fields: ["n": .int64(Int64(random.next(100))), "tag": .string("t\(random.next(5))")])
            let recordChange = RecordChange(database: Self.database, zoneName: "Z\(random.next(2))", kind: kind,
                                            record: kind == .deleted ? Self.record(record.recordName, type: type, fields: [:]) : record,
                                            previous: kind == .created ? nil : record, changedBy: "_owner")
            let fired = index.match([.record(recordChange)])
            let expected = subscriptions.filter { QueryMatch.fires($0, on: recordChange) }
            #expect(fired.map(\.subscription.subscriptionID) == expected.map(\.subscriptionID))
            indexed += fired.count
            brute += expected.count
        }
        #expect(indexed == brute)
        #expect(indexed > 1_000)
    }

    @Test func deletionsAreMatchedOnTheRecordAsItWas() {
        let subscription = StoredSubscription(database: Self.database, subscriber: "_u", subscriptionID: "s", kind: .query,
                                              query: WireQuery(recordType: "Note", filterBy: [WireFilter(comparator: .equals, key: .field("tag"), fieldValue: .string("a"))]),
                                              firesOn: .all, createdAt: 0)
        let before = Self.record("r", type: "Note", fields: ["tag": .string("a")])
        let tombstone = Self.record("r", type: "Note", fields: [:])
        #expect(QueryMatch.fires(subscription, on: RecordChange(database: Self.database, zoneName: "_defaultZone", kind: .deleted, record: tombstone, previous: before, changedBy: "")))
        let other = Self.record("r", type: "Note", fields: ["tag": .string("b")])
        #expect(!QueryMatch.fires(subscription, on: RecordChange(database: Self.database, zoneName: "_defaultZone", kind: .deleted, record: tombstone, previous: other, changedBy: "")))
    }

    @Test func announcementsRoundTripAndSplit() {
        var heads: [NotificationLogKey: Int64] = [:]
        for index in 0..<500 { heads[NotificationLogKey(container: "iCloud.c", environment: .production, user: "_user\(index)")] = Int64(index) }
        let payloads = PushAnnouncement.encode(heads, limit: 1_000)
        #expect(payloads.count > 1)
        #expect(payloads.allSatisfy { $0.utf8.count <= 1_000 })
        var decoded: [NotificationLogKey: Int64] = [:]
        for payload in payloads { decoded.merge(PushAnnouncement.decode(payload)) { max($0, $1) } }
        #expect(decoded == heads)
        #expect(PushAnnouncement.decode("garbage\nmore\tgarbage").isEmpty)
    }

    /// A transaction's changes are told apart by their records' zones and sequence numbers, not
    /// by hashing the records (fields, inline content) whole.
    @Test func aTransactionsChangesAreKeyedByZoneAndSequence() {
        func change(_ name: String, sequence: Int64, content: String) -> StoreChange {
            var record = Self.record(name, type: "T", fields: ["content": .bytes(Data(content.utf8))])
            record.sequence = sequence
            return .record(RecordChange(database: Self.database, zoneName: "Z", kind: .created, record: record, previous: nil, changedBy: ""))
        }
        let first = [change("a", sequence: 1, content: "x"), change("b", sequence: 2, content: "y")]
        #expect(ChangesKey(first) == ChangesKey([change("a", sequence: 1, content: "other"), change("b", sequence: 2, content: "y")]))
        #expect(ChangesKey(first) != ChangesKey([change("a", sequence: 3, content: "x"), change("b", sequence: 4, content: "y")]))
        #expect(ChangesKey(first) != ChangesKey(Array(first.prefix(1))))
    }
}
