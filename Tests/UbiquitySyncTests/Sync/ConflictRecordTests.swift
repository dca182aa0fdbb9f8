// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityStore
@testable import UbiquitySync
import UbiquityCloudKit

/// The shared conflict version's record format and its journal table, without I/O beyond a
/// temporary journal file.
@Suite struct ConflictRecordTests {
    @Test func aRecordRoundTripsAndReferencesItsItemWithDeleteSelf() throws {
        let version = ConflictRecord.Version(recordName: ConflictRecord.recordName(forVersion: "V1"), itemID: "ITEM", path: "a/b.txt",
                                             device: "beta", modifiedMilliseconds: 1_700_000_000_123, size: 5, contentHash: "abc")
        let record = ConflictRecord.record(version)
        #expect(record.recordType == "UbiquityConflictVersion")
        #expect(record.recordID.recordName == "conflict-V1" && record.recordID.zoneID == SyncRecord.zoneID)
        let reference = try #require(record[ConflictRecord.Field.item]?.referenceValue)
        #expect(reference.recordID.recordName == "ITEM" && reference.action == .deleteSelf)
        #expect(ConflictRecord.version(from: record) == version)
        #expect(ConflictRecord.milliseconds(version.modificationDate) == 1_700_000_000_123)
        // an item record, or a conflict record without its item, is not a conflict version
        #expect(ConflictRecord.version(from: Record(recordType: SyncRecord.recordType, zoneID: SyncRecord.zoneID)) == nil)
        #expect(ConflictRecord.version(from: Record(recordType: ConflictRecord.recordType, zoneID: SyncRecord.zoneID)) == nil)
    }

    @Test func theJournalKeepsConflictsAcrossReopening() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-conflicts-\(UUID().uuidString)")
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("journal.sqlite").path
        let journal = try SyncJournal.test(at: path)
        #expect(try journal.conflicts().isEmpty)
        try journal.putConflict(JournalConflict(record: "conflict-1", item: "I", version: "V", published: false))
        try journal.putConflict(JournalConflict(record: "conflict-2", item: "I", version: "W", published: true))
        var first = try #require(try journal.conflict(record: "conflict-1"))
        #expect(!first.published && first.version == "V")
        first.published = true
        try journal.putConflict(first)
        let reopened = try SyncJournal.test(at: path)
        #expect(try reopened.conflicts().map(\.record) == ["conflict-1", "conflict-2"])
        #expect(try reopened.conflict(record: "conflict-1")?.published == true)
        try reopened.removeConflict(record: "conflict-1")
        #expect(try reopened.conflicts().map(\.record) == ["conflict-2"])
        #expect(try reopened.conflict(record: "conflict-1") == nil)
    }
}
