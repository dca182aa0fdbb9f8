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

    /// What an update sent is noted before it goes (the latest few per item) and forgotten
    /// with the answer, in the answer's transaction.
    @Test func sentContentIsNotedUntilItsAnswerIsJournaled() async throws {
        try await Self.withJournal { journal, _ in
            try journal.noteSent([(id: "1", hash: "h1"), (id: "2", hash: "x")])
            try journal.noteSent([(id: "1", hash: "h2"), (id: "1", hash: "h1")])
            #expect(try journal.sentHashes(id: "1") == ["h1", "h2"] && journal.sentHashes(id: "2") == ["x"])
            try journal.noteSent((0..<20).map { (id: "3", hash: "h\($0)") })
            #expect(try journal.sentHashes(id: "3") == Set((12..<20).map { "h\($0)" }))
            try journal.putAll([JournalEntry(id: "1", path: "a.txt", stat: Self.stat, contentHash: "h2", changeTag: "t")], forgettingSent: ["1"]) { _ in .uploaded }
            #expect(try journal.sentHashes(id: "1").isEmpty && journal.sentHashes(id: "2") == ["x"])
        }
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

    /// A whole pass as a comparison in the database: only what differs comes back — new items
    /// (new plain files in a list of their own), changed ones, queued ones, those carrying the
    /// skip-backup attribute — with the entries of items gone from the index or left out
    /// (ignored); unchanged items and their entries stay in the database.
    @Test func aWholePassReadsOnlyWhatDiffers() async throws {
        try await Self.withJournal { journal, folder in
            try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            func row(_ name: String, inode: UInt64, size: Int64 = 3) -> IndexRecord {
                IndexRecord(path: folder + "/" + name, size: size, isDirectory: false, inode: inode, mtimeNanoseconds: 1_000,
                            ctimeNanoseconds: 1_000).with(mode: 0o100644, linkTarget: nil)
            }
            func entry(_ name: String, inode: UInt64, size: Int64 = 3) -> JournalEntry {
                JournalEntry(id: "id-" + name, path: name, stat: SyncStat(kind: .file, size: size, modifiedNanoseconds: 1_000, inode: inode, mode: 0o644),
                             contentHash: "h", changeTag: "t")
            }
            let same = (0..<50).map { "same\($0).txt" }
            _ = try journal.database.apply(same.enumerated().map { row($1, inode: UInt64($0 + 100)) }
                + [row("grown.txt", inode: 1, size: 9), row("new.txt", inode: 2), row("queued.txt", inode: 3), row("ignored.swp", inode: 4)])
            try journal.putAll(same.enumerated().map { entry($1, inode: UInt64($0 + 100)) }
                + [entry("grown.txt", inode: 1), entry("queued.txt", inode: 3), entry("ignored.swp", inode: 4), entry("gone.txt", inode: 5)])
            let (scan, entries) = try SyncFiles.differences(journal: journal, root: folder, rules: .defaults, excluded: [], queued: ["queued.txt"])
            #expect(Set(scan.items.keys) == ["grown.txt", "queued.txt"])
            #expect(scan.fresh.map(\.path) == ["new.txt"])  // a new plain file: in the list, not by path
            #expect(Set(entries.map(\.path)) == ["grown.txt", "queued.txt", "ignored.swp", "gone.txt"])
            #expect(scan.leftOut == ["ignored.swp"])
        }
    }

    /// A folder's entries move with it, whatever its name's characters (SQLite counts them, not
    /// bytes).
    @Test func aFolderWithANonASCIINameMovesItsEntries() async throws {
        try await Self.withJournal { journal, _ in
            try journal.putAll(["é", "é/a.txt", "é/b/c.txt", "éé/x.txt"].map {
                JournalEntry(id: "id-" + $0, path: $0, stat: Self.stat, contentHash: "h", changeTag: "t")
            })
            try journal.movePrefix(from: "é", to: "ü")
            #expect(Set(try journal.entries().map(\.path)) == ["ü", "ü/a.txt", "ü/b/c.txt", "éé/x.txt"])
        }
    }
}
