// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The server's history of the synced folder, on both stores, through the engine with the
/// recorder as its observer: uploads become versions (renames do not), deletions go to Recently
/// Deleted with what was deleted with them, and restoring either is a new change of the record.
@Suite struct DocumentHistoryTests {
    static let user = "_0123456789abcdef0123456789abcdef"
    static let container = DocumentItemRecord.container

    /// A clock the engine and the recorder share (milliseconds), moved by the test.
    final class Clock: Sendable {
        let value = Mutex<Int64>(1_700_000_000_000)
        func advance(_ milliseconds: Int64) { value.withLock { $0 += milliseconds } }
        var now: Int64 { value.withLock { $0 } }
    }

    struct Rig {
        let store: any RecordStore
        let engine: RecordsEngine
        let history: DocumentHistory
        let clock: Clock

        var context: RecordsEngine.Context {
            RecordsEngine.Context(container: DocumentHistoryTests.container, environment: .development, scope: .private,
                                  caller: RecordsCaller(identity: .user(accountID: 1, userRecordName: DocumentHistoryTests.user)))
        }

        /// Saves (creates or replaces) an item record; the content is inline.
        @discardableResult
        func save(_ name: String, path: String, kind: String = "file", content: String = "", asset: (String, Int64)? = nil) async throws -> JSONValue {
            var fields: [String: WireFieldValue] = [
                "path": .string(path), "kind": .string(kind), "size": .int64(Int64(content.utf8.count)),
                "modified": .int64(clock.now), "contentHash": .string(kind == "file" ? SHA256.hexHash(content.utf8) : ""),
                "mode": .int64(0o644),
            ]
            if kind == "file", !content.isEmpty { fields["inline"] = .bytes(Data(content.utf8)) }
            if let asset { fields["content"] = .asset(WireAsset(fileChecksum: asset.0, size: asset.1)) }
            let record = WireRecord(recordName: name, recordType: DocumentItemRecord.recordType, fields: fields)
            let reply = try await engine.modifyRecords(WireModifyRecordsRequest(operations: [WireRecordOperation(.forceReplace, record)],
                                                                                zoneID: WireZoneID(zoneName: DocumentItemRecord.zoneName)), context: context)
            #expect(reply.objectValue?["records"]?.arrayValue?.first?.objectValue?["serverErrorCode"] == nil, "\(reply)")
            return reply
        }

        func delete(_ names: [String]) async throws {
            let reply = try await engine.modifyRecords(WireModifyRecordsRequest(
                operations: names.map { WireRecordOperation(.forceDelete, WireRecord(recordName: $0)) },
                zoneID: WireZoneID(zoneName: DocumentItemRecord.zoneName)), context: context)
            for record in reply.objectValue?["records"]?.arrayValue ?? [] { #expect(record.objectValue?["deleted"] == .bool(true), "\(record)") }
        }

        /// The live record's fields (nil when deleted or missing).
        func fields(_ name: String) async throws -> [String: WireFieldValue]? {
            let key = DatabaseKey(container: DocumentHistoryTests.container, environment: .development, scope: .private, owner: DocumentHistoryTests.user)
            let record = try await store.read { tx -> StoredRecord? in
                guard let zone = try await tx.zone(key: key, name: DocumentItemRecord.zoneName) else { return nil }
                return try await tx.record(zone: zone.id, name: name)
            }
            guard let record, !record.deleted else { return nil }
            return record.fields
        }

        func versions(_ body: [String: JSONValue]) async throws -> [JSONValue] {
            try await history.versions(.object(body), context: context).objectValue?["versions"]?.arrayValue ?? []
        }

        func trash() async throws -> [[String: JSONValue]] {
            (try await history.trash(context: context).objectValue?["items"]?.arrayValue ?? []).compactMap(\.objectValue)
        }
    }

    static func withRig(_ kind: StoreKind, quota: Int64? = nil, _ body: (Rig) async throws -> Void) async throws {
        try await StoreFixture.withStore(kind) { store in
            var logger = Logger(label: "test.history")
            logger.logLevel = .warning
            let clock = Clock()
            let quotas = StorageQuotas(privateBytes: quota)
            let engine = RecordsEngine(store: store, logger: logger,
                                       changeObserver: DocumentHistoryRecorder(quotas: quotas, now: { clock.now }),
                                       quotas: quotas, now: { clock.now })
            try await body(Rig(store: store, engine: engine, history: DocumentHistory(engine: engine, trashDays: 30), clock: clock))
        }
    }

    static func number(_ value: JSONValue?) -> Int64 { Int64(value?.doubleValue ?? -1) }

    @Test(arguments: StoreKind.available)
    func uploadsAreVersionsAndRestoringOneIsANewUpload(kind: StoreKind) async throws {
        try await Self.withRig(kind) { rig in
            try await rig.save("a", path: "notes.txt", content: "one")
            rig.clock.advance(1000)
            try await rig.save("a", path: "notes.txt", content: "two")
            rig.clock.advance(1000)
            try await rig.save("a", path: "renamed.txt", content: "two")  // a rename: no version
            rig.clock.advance(1000)
            try await rig.save("a", path: "renamed.txt", content: "three")
            var versions = try await rig.versions(["path": .string("renamed.txt")])
            #expect(versions.count == 3)
            #expect(versions.first?.objectValue?["current"] == .bool(true))
            #expect(versions.dropFirst().allSatisfy { $0.objectValue?["current"] == .bool(false) })
            let first = try #require(versions.last?.objectValue)
            #expect(first["contentHash"] == .string(SHA256.hexHash("one".utf8)))

            // restoring the first: the record's content is "one" again at its current path, as a new version
            rig.clock.advance(1000)
            _ = try await rig.history.restoreVersion(.object(["versionID": first["id"]!]), context: rig.context)
            let fields = try #require(try await rig.fields("a"))
            #expect(fields["inline"] == .bytes(Data("one".utf8)))
            #expect(fields["path"] == .string("renamed.txt"))
            versions = try await rig.versions(["recordName": .string("a")])
            #expect(versions.count == 4)
            #expect(versions.first?.objectValue?["contentHash"] == .string(SHA256.hexHash("one".utf8)))

            // no such version, another user's version: not found
            await #expect(throws: WireError.self) { try await rig.history.restoreVersion(.object(["versionID": .number(99_999)]), context: rig.context) }
            await #expect(throws: WireError.self) { try await rig.versions(["path": .string("nothing-here.txt")]) }
        }
    }

    @Test(arguments: StoreKind.available)
    func versionsAreThinnedAsTheyAge(kind: StoreKind) async throws {
        try await Self.withRig(kind) { rig in
            // one upload a minute for two hours: the first hour's keep one per minute, the older one per hour
            for minute in 0..<120 {
                try await rig.save("a", path: "log.txt", content: "minute \(minute)")
                rig.clock.advance(60_000)
            }
            let versions = try await rig.versions(["recordName": .string("a")])
            #expect(versions.count >= 60 && versions.count <= 63, "\(versions.count)")
            // an hour later the next upload thins them to one per hour (they are 1 to 3 hours old)
            rig.clock.advance(3_600_000)
            try await rig.save("a", path: "log.txt", content: "an hour later")
            let later = try await rig.versions(["recordName": .string("a")])
            #expect(later.count >= 2 && later.count <= 4, "\(later.count)")
            let times = later.map { Self.number($0.objectValue?["savedAt"]) }
            for (newer, older) in zip(times.dropFirst(), times.dropFirst(2)) { #expect(newer - older >= 3_600_000) }
            // two days later: the older ones are all in one day's band: one stays beside the newest
            rig.clock.advance(2 * 86_400_000)
            try await rig.save("a", path: "log.txt", content: "two days later")
            #expect(try await rig.versions(["recordName": .string("a")]).count == 2)
        }
    }

    @Test(arguments: StoreKind.available)
    func deletedItemsAreRestoredWithWhatWasDeletedWithThem(kind: StoreKind) async throws {
        try await Self.withRig(kind) { rig in
            try await rig.save("d", path: "drafts", kind: "folder")
            try await rig.save("x", path: "drafts/x.txt", content: "x")
            try await rig.save("y", path: "drafts/sub", kind: "folder")
            try await rig.save("z", path: "drafts/sub/z.txt", content: "z")
            try await rig.save("n", path: "notes.txt", content: "n")
            rig.clock.advance(1000)
            try await rig.delete(["z", "y", "x", "d"])
            rig.clock.advance(5000)
            try await rig.delete(["n"])
            var trash = try await rig.trash()
            #expect(trash.map { $0["path"] } == [.string("notes.txt"), .string("drafts")])
            #expect(Self.number(trash.last?["contains"]) == 3)
            #expect(Self.number(trash.first?["expiresAt"]) == rig.clock.now + 30 * 86_400_000)

            // restoring the folder brings back what was in it, under the same record names
            _ = try await rig.history.restoreTrashed(.object(["ids": .array([trash.last!["id"]!])]), context: rig.context)
            for name in ["d", "x", "y", "z"] { #expect(try await rig.fields(name) != nil, "\(name)") }
            #expect(try await rig.fields("z")?["inline"] == .bytes(Data("z".utf8)))
            trash = try await rig.trash()
            #expect(trash.map { $0["path"] } == [.string("notes.txt")])

            // a file whose folder is gone too brings the folder back
            try await rig.delete(["z", "y"])
            trash = try await rig.trash()
            let z = try #require(trash.first { $0["path"] == .string("drafts/sub") })
            #expect(Self.number(z["contains"]) == 1)
            try await rig.delete(["x", "d"])
            rig.clock.advance(120_000)
            // (x and d deleted two minutes after: restoring the file x alone needs its folder d)
            let x = try #require(try await rig.trash().first { $0["path"] == .string("drafts") })
            _ = try await rig.history.restoreTrashed(.object(["ids": .array([x["id"]!])]), context: rig.context)
            #expect(try await rig.fields("x") != nil)

            // deleting for good, then emptying
            let n = try #require(try await rig.trash().first { $0["path"] == .string("notes.txt") })
            let deleted = try await rig.history.deleteTrashed(.object(["ids": .array([n["id"]!])]), context: rig.context)
            #expect(Self.number(deleted.objectValue?["deleted"]) == 1)
            #expect(try await rig.versions(["recordName": .string("n")]).isEmpty)
            await #expect(throws: WireError.self) {
                try await rig.history.restoreTrashed(.object(["ids": .array([n["id"]!])]), context: rig.context)
            }
            _ = try await rig.history.deleteTrashed(.object(["all": .bool(true)]), context: rig.context)
            #expect(try await rig.trash().isEmpty)
        }
    }

    @Test(arguments: StoreKind.available)
    func historyKeepsItsAssetsAndExpires(kind: StoreKind) async throws {
        try await Self.withRig(kind) { rig in
            try await rig.save("a", path: "big.bin", content: "v1", asset: ("CHECKSUM1", 100_000))
            rig.clock.advance(1000)
            try await rig.save("a", path: "big.bin", content: "v2", asset: ("CHECKSUM2", 100_000))
            try await rig.save("b", path: "gone.bin", content: "b", asset: ("CHECKSUM3", 100_000))
            try await rig.delete(["b"])
            let referenced = try await rig.store.read { tx in try await tx.referencedAssetChecksums() }
            #expect(referenced.isSuperset(of: ["CHECKSUM1", "CHECKSUM2", "CHECKSUM3"]))

            // after the trash's days, the deleted item and its versions are gone; the live one's stay
            rig.clock.advance(31 * 86_400_000)
            #expect(try await rig.history.pruneTrash(now: rig.clock.now) == 1)
            #expect(try await rig.trash().isEmpty)
            #expect(try await rig.versions(["recordName": .string("b")]).isEmpty)
            #expect(try await rig.versions(["recordName": .string("a")]).count == 2)
            let after = try await rig.store.read { tx in try await tx.referencedAssetChecksums() }
            #expect(!after.contains("CHECKSUM3"))
        }
    }

    @Test(arguments: StoreKind.available)
    func aQuotaDropsTheOldestFormerVersionsFirst(kind: StoreKind) async throws {
        // 10 versions of 1,000 bytes in a quota of about 5,000: the oldest go, the current stays
        try await Self.withRig(kind, quota: 5_000) { rig in
            for index in 0..<10 {
                try await rig.save("a", path: "q.bin", content: String(repeating: Character(String(index)), count: 1000))
                rig.clock.advance(1000)
            }
            let versions = try await rig.versions(["recordName": .string("a")])
            #expect(versions.count < 5, "\(versions.count)")
            #expect(versions.first?.objectValue?["current"] == .bool(true))
            #expect(versions.first?.objectValue?["contentHash"] == .string(SHA256.hexHash(String(repeating: "9", count: 1000).utf8)))
        }
    }
}
