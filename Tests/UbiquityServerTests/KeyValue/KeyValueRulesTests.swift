// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The key-value store's zone on both stores: last writer wins by timestamp with the server
/// deciding (an older save is answered with the stored record), removals as entries without a
/// value, and the limits per user per container (64-byte keys, 1024 keys, 1 MB).
@Suite struct KeyValueRulesTests {
    static let container = "iCloud.org.example.KeyValue"
    static let zone = WireZoneID(zoneName: KeyValueRecord.zoneName)

    static func context(_ user: String = "_0123456789abcdef0123456789abcdef",
                        environment: CloudKitEnvironment = .development) -> RecordsEngine.Context {
        RecordsEngine.Context(container: container, environment: environment, scope: .private,
                              caller: RecordsCaller(identity: .user(accountID: 1, userRecordName: user)))
    }

    static func engine(_ store: any RecordStore) -> RecordsEngine {
        var logger = Logger(label: "test.kv")
        logger.logLevel = .warning
        return RecordsEngine(store: store, logger: logger)
    }

    static func entry(_ key: String, _ value: String?, modified: Int64, type: String = KeyValueRecord.recordType) -> WireRecord {
        var fields: [String: WireFieldValue] = [KeyValueRecord.modifiedField: .int64(modified)]
        if let value { fields[KeyValueRecord.valueField] = .string(value) }
        return WireRecord(recordName: key, recordType: type, fields: fields)
    }

    /// Saves entries (forceUpdate, as the client's sync does) and returns each item's answer.
    static func save(_ engine: RecordsEngine, _ records: [WireRecord], user: String = "_0123456789abcdef0123456789abcdef",
                     environment: CloudKitEnvironment = .development) async throws -> [[String: JSONValue]] {
        let reply = try await engine.modifyRecords(WireModifyRecordsRequest(operations: records.map { WireRecordOperation(.forceUpdate, $0) },
                                                                            zoneID: zone, atomic: false), context: context(user, environment: environment))
        return reply.objectValue?["records"]?.arrayValue?.compactMap(\.objectValue) ?? []
    }

    static func value(_ item: [String: JSONValue]) -> String? {
        item["fields"]?.objectValue?[KeyValueRecord.valueField]?.objectValue?["value"]?.stringValue
    }

    static func modified(_ item: [String: JSONValue]) -> Int64? {
        guard let value = item["fields"]?.objectValue?[KeyValueRecord.modifiedField]?.objectValue?["value"] else { return nil }
        if let number = value.doubleValue { return Int64(number) }
        return value.stringValue.flatMap { Int64($0) }
    }

    @Test(arguments: StoreKind.available)
    func lastWriterWinsByTimestamp(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let engine = Self.engine(store)
            var items = try await Self.save(engine, [Self.entry("theme", "{\"string\":\"blue\"}", modified: 1000)])
            #expect(items.first?["serverErrorCode"] == nil, "\(items)")
            #expect(Self.value(items[0]) == "{\"string\":\"blue\"}")

            // An older save is not applied: the answer is the stored record, not an error.
            items = try await Self.save(engine, [Self.entry("theme", "{\"string\":\"red\"}", modified: 900)])
            #expect(items.first?["serverErrorCode"] == nil, "\(items)")
            #expect(Self.value(items[0]) == "{\"string\":\"blue\"}")
            #expect(Self.modified(items[0]) == 1000)

            // A later one is; an equal timestamp too (the later arrival).
            items = try await Self.save(engine, [Self.entry("theme", "{\"string\":\"green\"}", modified: 2000)])
            #expect(Self.value(items[0]) == "{\"string\":\"green\"}")
            items = try await Self.save(engine, [Self.entry("theme", "{\"string\":\"teal\"}", modified: 2000)])
            #expect(Self.value(items[0]) == "{\"string\":\"teal\"}")

            // A removal is an entry without a value (replacing, not merging); an older set loses to it.
            items = try await Self.save(engine, [Self.entry("theme", nil, modified: 3000)])
            #expect(items.first?["serverErrorCode"] == nil, "\(items)")
            #expect(Self.value(items[0]) == nil)
            items = try await Self.save(engine, [Self.entry("theme", "{\"string\":\"late\"}", modified: 2500)])
            #expect(Self.value(items[0]) == nil)
            #expect(Self.modified(items[0]) == 3000)

            // Zone changes carry the winner.
            let changes = try await engine.zoneChanges(WireZoneChangesRequest(zones: [WireZoneChangesRequest.Zone(zoneID: Self.zone)]),
                                                       context: Self.context())
            #expect("\(changes)".contains("theme"))
        }
    }

    @Test(arguments: StoreKind.available)
    func badEntriesAreRefusedClearly(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let engine = Self.engine(store)
            let longKey = String(repeating: "é", count: 33)  // 66 bytes
            let okKey = String(repeating: "é", count: 32)  // 64 bytes
            let items = try await Self.save(engine, [
                Self.entry(longKey, "{\"bool\":true}", modified: 1),
                Self.entry(okKey, "{\"bool\":true}", modified: 1),
                Self.entry("typed", "{\"bool\":true}", modified: 1, type: "Note"),
                WireRecord(recordName: "untimed", recordType: KeyValueRecord.recordType,
                           fields: [KeyValueRecord.valueField: .string("{\"bool\":true}")]),
                WireRecord(recordName: "extra", recordType: KeyValueRecord.recordType,
                           fields: [KeyValueRecord.modifiedField: .int64(1), "other": .string("x")]),
            ])
            #expect(items.count == 5)
            #expect(items[0]["serverErrorCode"]?.stringValue == "BAD_REQUEST")
            #expect(items[0]["reason"]?.stringValue?.contains("64") == true)
            #expect(items[1]["serverErrorCode"] == nil)
            #expect(items[2]["serverErrorCode"]?.stringValue == "BAD_REQUEST")
            #expect(items[2]["reason"]?.stringValue?.contains(KeyValueRecord.recordType) == true)
            #expect(items[3]["serverErrorCode"]?.stringValue == "BAD_REQUEST")
            #expect(items[3]["reason"]?.stringValue?.contains(KeyValueRecord.modifiedField) == true)
            #expect(items[4]["serverErrorCode"]?.stringValue == "BAD_REQUEST")
        }
    }

    @Test(arguments: StoreKind.available)
    func limitsHoldPerUser(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let engine = Self.engine(store)
            // 1024 keys fill the store: the 1025th is QUOTA_EXCEEDED; changing a key still works.
            for start in stride(from: 0, to: KeyValueLimits.maximumKeys, by: 200) {
                let records = (start..<min(start + 200, KeyValueLimits.maximumKeys)).map { Self.entry("k\($0)", "{\"integer\":1}", modified: 10) }
                let items = try await Self.save(engine, records)
                #expect(items.allSatisfy { $0["serverErrorCode"] == nil })
            }
            var items = try await Self.save(engine, [Self.entry("one-too-many", "{\"integer\":1}", modified: 10),
                                                     Self.entry("k0", "{\"integer\":2}", modified: 11)])
            #expect(items[0]["serverErrorCode"]?.stringValue == "QUOTA_EXCEEDED")
            #expect(items[0]["reason"]?.stringValue?.contains("1024") == true)
            #expect(items[1]["serverErrorCode"] == nil)
            // Removing a key makes room (in the same request).
            items = try await Self.save(engine, [Self.entry("k1", nil, modified: 12), Self.entry("now-fits", "{\"integer\":1}", modified: 12)])
            #expect(items.allSatisfy { $0["serverErrorCode"] == nil }, "\(items)")
            // Another user has a store of their own.
            items = try await Self.save(engine, [Self.entry("mine", "{\"integer\":1}", modified: 1)], user: "_fedcba9876543210fedcba9876543210")
            #expect(items[0]["serverErrorCode"] == nil)
        }
    }

    @Test(arguments: StoreKind.available)
    func totalSizeIsOneMegabyte(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let engine = Self.engine(store)
            let big = String(repeating: "x", count: 600_000)
            var items = try await Self.save(engine, [Self.entry("a", big, modified: 1)])
            #expect(items[0]["serverErrorCode"] == nil, "\(items[0]["reason"] ?? .null)")
            items = try await Self.save(engine, [Self.entry("b", big, modified: 1)])
            #expect(items[0]["serverErrorCode"]?.stringValue == "QUOTA_EXCEEDED")
            // Replacing the big value by another big one fits (its old bytes are given back).
            items = try await Self.save(engine, [Self.entry("a", big + "y", modified: 2)])
            #expect(items[0]["serverErrorCode"] == nil)
            // A single entry over 1 MB never fits.
            items = try await Self.save(engine, [Self.entry("c", String(repeating: "z", count: 1_000_001), modified: 1)])
            #expect(items[0]["serverErrorCode"]?.stringValue == "QUOTA_EXCEEDED")
        }
    }

    @Test(arguments: StoreKind.available)
    func productionNeedsNoDeploy(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let engine = Self.engine(store)
            let items = try await Self.save(engine, [Self.entry("theme", "{\"string\":\"blue\"}", modified: 1)], environment: .production)
            #expect(items.first?["serverErrorCode"] == nil, "\(items)")
            // Other types stay locked in production, in that zone too.
            let other = try await Self.save(engine, [Self.entry("x", "{\"bool\":true}", modified: 1, type: "Note")], environment: .production)
            #expect(other.first?["serverErrorCode"]?.stringValue == "BAD_REQUEST")
        }
    }
}
