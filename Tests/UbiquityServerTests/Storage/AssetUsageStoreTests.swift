// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The stores keep each database's usage and asset references up to date on every record write,
/// delete and zone delete (no scan), counting each distinct asset once per database.
@Suite struct AssetUsageStoreTests {
    static func context(_ name: String = "_0123456789abcdef0123456789abcdef") -> RecordsEngine.Context {
        RecordsEngine.Context(container: "iCloud.org.example.Usage", environment: .development, scope: .private,
                              caller: RecordsCaller(identity: .user(accountID: 1, userRecordName: name)))
    }

    static func save(_ engine: RecordsEngine, _ name: String, zone: String, assets: [(String, Int64)], list: Bool = false) async throws {
        let values = assets.map { WireFieldValue.asset(WireAsset(fileChecksum: $0.0, size: $0.1)) }
        let field: WireFieldValue = list ? .list(element: .asset, values) : values[0]
        let record = WireRecord(recordName: name, recordType: "Photo", fields: [list ? "pages" : "image": field])
        let reply = try await engine.modifyRecords(WireModifyRecordsRequest(operations: [WireRecordOperation(.forceReplace, record)],
                                                                            zoneID: WireZoneID(zoneName: zone)), context: context())
        #expect(reply.objectValue?["records"]?.arrayValue?.first?.objectValue?["serverErrorCode"] == nil, "\(reply)")
    }

    static func usage(_ store: any RecordStore, zone: String) async throws -> (StoredUsage, Set<String>) {
        try await store.read { tx in
            let key = DatabaseKey(container: "iCloud.org.example.Usage", environment: .development, scope: .private,
                                  owner: "_0123456789abcdef0123456789abcdef")
            guard let database = try await tx.database(key) else { return (StoredUsage(), []) }
            return (try await tx.databaseUsage(database: database.id), try await tx.referencedAssetChecksums())
        }
    }

    @Test(arguments: StoreKind.available)
    func usageFollowsWritesDeletesAndZoneDeletes(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            var logger = Logger(label: "test.usage")
            logger.logLevel = .warning
            let engine = RecordsEngine(store: store, logger: logger)
            let zones = try await engine.modifyZones([WireZoneOperation(.create, WireZoneID(zoneName: "Album"))], context: Self.context())
            #expect(zones.objectValue?["zones"]?.arrayValue?.first?.objectValue?["serverErrorCode"] == nil)

            try await Self.save(engine, "a", zone: "_defaultZone", assets: [("A", 1000)])
            try await Self.save(engine, "b", zone: "Album", assets: [("A", 1000), ("B", 500)], list: true)
            var (usage, referenced) = try await Self.usage(store, zone: "Album")
            #expect(usage.assetBytes == 1500)
            #expect(usage.recordBytes > 0)
            #expect(referenced == ["A", "B"])
            let twoRecords = usage.recordBytes

            // replacing b's assets: B is no longer referenced, C is
            try await Self.save(engine, "b", zone: "Album", assets: [("C", 200)])
            (usage, referenced) = try await Self.usage(store, zone: "Album")
            #expect(usage.assetBytes == 1200)
            #expect(referenced == ["A", "C"])

            // deleting a: A stays only if another record refers to it (none now)
            let deleted = try await engine.modifyRecords(WireModifyRecordsRequest(operations: [
                WireRecordOperation(.forceDelete, WireRecord(recordName: "a"))]), context: Self.context())
            #expect(deleted.objectValue?["records"]?.arrayValue?.first?.objectValue?["deleted"] == .bool(true))
            (usage, referenced) = try await Self.usage(store, zone: "Album")
            #expect(usage.assetBytes == 200)
            #expect(referenced == ["C"])
            #expect(usage.recordBytes < twoRecords)

            // deleting the zone releases everything in it
            _ = try await engine.modifyZones([WireZoneOperation(.delete, WireZoneID(zoneName: "Album"))], context: Self.context())
            (usage, referenced) = try await Self.usage(store, zone: "Album")
            #expect(usage == StoredUsage())
            #expect(referenced.isEmpty)
        }
    }

    @Test func byteCountsAcceptSuffixes() throws {
        #expect(try StorageQuotas.parseBytes("5G", argument: "--private-quota") == 5 << 30)
        #expect(try StorageQuotas.parseBytes("100 MiB", argument: "--q") == 100 << 20)
        #expect(try StorageQuotas.parseBytes("1234", argument: "--q") == 1234)
        #expect(try StorageQuotas.parseBytes("2t", argument: "--q") == 2 << 40)
        #expect(throws: UbiquityError.self) { try StorageQuotas.parseBytes("5X", argument: "--q") }
        #expect(throws: UbiquityError.self) { try StorageQuotas.parseBytes("-1", argument: "--q") }
    }
}
