// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityCore
import UbiquityStore
@testable import UbiquitySync

/// The journal and the index share one device database: an item's sync state is written with
/// its journal row and reaches its index row in the same transaction, and a row the index makes
/// later (a downloaded file the watcher reports after sync journaled it) takes the journal's
/// state when it is inserted. No state waits for a row; nothing retries.
@Suite struct SyncJournalStateTests {
    static let stat = SyncStat(kind: .file, size: 3, modifiedNanoseconds: 1, inode: 1, mode: 0o644)

    static func record(_ path: String) -> IndexRecord {
        IndexRecord(path: path, size: 3, isDirectory: false, inode: 7, mtimeNanoseconds: 1_000, ctimeNanoseconds: 1_000)
    }

    static func withJournal(_ body: (SyncJournal, String) async throws -> Void) async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-state-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: directory) }
        let database = try MetadataIndex(path: directory.appendingPathComponent("index.sqlite").path, logger: Logger(label: "test"))
        let folder = directory.appendingPathComponent("folder").path
        try await body(try SyncJournal(database: database, name: "drive", folder: folder), folder)
    }

    @Test func aRowIndexedAfterItsJournalRowTakesTheStateWhenInserted() async throws {
        try await Self.withJournal { journal, folder in
            let database = journal.database
            try journal.putAll([JournalEntry(id: "1", path: "done.txt", stat: Self.stat, contentHash: "h", changeTag: "t")])
            try journal.putAll([JournalEntry(id: "2", path: "new.txt", stat: Self.stat, contentHash: "", changeTag: nil)], enqueue: true)
            try journal.setExcluded("secret.txt", true, inode: 9)
            let feed = database.changes()
            let delta = try database.apply(["done.txt", "new.txt", "secret.txt", "unknown.txt"].map { Self.record(folder + "/" + $0) })
            let byName = Dictionary(uniqueKeysWithValues: delta.added.map { ($0.name, $0.ubiquitous) })
            #expect(byName["done.txt"]?.isUploaded == true && byName["done.txt"]?.percentUploaded == 100)
            #expect(byName["new.txt"]?.isUploading == true && byName["new.txt"]?.isUploaded == false)
            #expect(byName["secret.txt"]?.isExcludedFromBackup == true)
            #expect(byName["unknown.txt"] == UbiquitousAttributes())
            // what the rows hold, and what the change feed carried, is the same
            #expect(try database.record(at: folder + "/done.txt")?.ubiquitous.isUploaded == true)
            var iterator = feed.makeAsyncIterator()
            let published = try #require(await iterator.next())
            #expect(published == delta)
            // a row outside the journal's folder is left alone
            let outside = try database.apply([Self.record("/elsewhere/done.txt")])
            #expect(outside.added.first?.ubiquitous == UbiquitousAttributes())
        }
    }

    @Test func aStateChangeReachesTheRowAndTheFeedInItsTransaction() async throws {
        try await Self.withJournal { journal, folder in
            let database = journal.database
            _ = try database.apply([Self.record(folder + "/doc.txt")])
            let before = journal.writeTransactions.load(ordering: .relaxed)
            let feed = database.changes()
            try journal.putAll([JournalEntry(id: "1", path: "doc.txt", stat: Self.stat, contentHash: "h", changeTag: "t")]) { _ in .inConflict }
            #expect(journal.writeTransactions.load(ordering: .relaxed) == before + 1, "one transaction for the row and its state")
            let row = try #require(try database.record(at: folder + "/doc.txt"))
            #expect(row.ubiquitous.hasUnresolvedConflicts && row.ubiquitous.isUploaded)
            #expect(try journal.state(path: "doc.txt") == .inConflict)
            try journal.setEvicted("1", true)
            #expect(try database.record(at: folder + "/doc.txt")?.ubiquitous.downloadingStatus == .notDownloaded)
            try journal.setStatus(.uploaded, paths: ["doc.txt"])
            let after = try #require(try database.record(at: folder + "/doc.txt")?.ubiquitous)
            #expect(!after.hasUnresolvedConflicts && after.downloadingStatus == .notDownloaded, "evicted stays not downloaded")
            try journal.updateTransfer(path: "doc.txt") { $0.downloadError = "offline" }
            #expect(try database.record(at: folder + "/doc.txt")?.ubiquitous.downloadingError == "offline")
            // every change went out on the feed, in order, as it committed
            var iterator = feed.makeAsyncIterator()
            var seen: [UbiquitousAttributes] = []
            while seen.count < 4, let delta = await iterator.next() { seen += delta.changed.map(\.ubiquitous) }
            #expect(seen.map(\.hasUnresolvedConflicts) == [true, true, false, false])
            #expect(seen.last?.downloadingError == "offline")
        }
    }
}
