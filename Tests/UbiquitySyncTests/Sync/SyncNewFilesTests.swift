// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
@testable import UbiquitySync

/// The many-file paths of the engine (issue 6): a page of new remote files is written per
/// folder and journaled in one transaction, a failure between the writer's stages leaves
/// nothing under a real name, a name taken locally meanwhile goes the one-by-one way (conflict
/// or adoption), small files are read together on the sender, and a narrowed pass reads the
/// journal by path. Counts only, never time (the harness of ``SyncBatchTests``).
@Suite struct SyncNewFilesTests {
    typealias Harness = SyncBatchTests.Harness

    @Test func aPageOfNewFilesIsJournaledInFewTransactions() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            for index in 0..<300 { try a.write("dir\(index % 10)/file\(index).txt", SyncBatchTests.content(index)) }
            try a.write("empty.txt", Data())
            try await a.engine.pass()

            let journal = await b.engine.journal
            let before = journal.writeTransactions.load(ordering: .relaxed)
            try await b.engine.pass()
            let transactions = journal.writeTransactions.load(ordering: .relaxed) - before
            // the 10 folders one by one (an entry and a transfer state each), the 301 files
            // together (entries, transfer states), the change token: one per file would be 600+
            #expect(transactions <= 30, "journal transactions: \(transactions)")
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            for index in 0..<300 { #expect(b.read("dir\(index % 10)/file\(index).txt") == SyncBatchTests.content(index)) }
            #expect(b.read("empty.txt") == Data())
            #expect(b.events.all.filter { if case .didDownload = $0 { true } else { false } }.count == 311)
            // journaled: the next pass finds nothing to send back
            b.transport.reset()
            try await b.engine.pass()
            #expect(b.transport.count("records/modify") == 0)
            #expect(try journal.count() == 311)
        }
    }

    @Test func aLongListingsNewItemsAreWrittenBeforeItsLastPage() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            // B's pages after the fifth wait for its first new file (a hang guard of 20 s: the
            // receiver fetches ahead, and without the hold could have every page before it writes)
            let firstWrite = Mutex<Int?>(nil)
            let pagesAsked = Mutex(0)
            let b = try await harness.device("B", rewrite: { request in
                guard request.path.hasSuffix("changes/zone"), pagesAsked.withLock({ $0 += 1; return $0 }) > 5 else { return request }
                let deadline = Date(timeIntervalSinceNow: 20)
                while firstWrite.withLock({ $0 == nil }) && Date() < deadline { usleep(2_000) }
                return request
            })
            // 1,500 files in 15 folders: 8 pages of at most 200 records for B
            for index in 0..<1_500 { try a.write("dir\(index % 15)/file\(index).txt", SyncBatchTests.content(index, size: 64)) }
            try await a.engine.pass()
            // on B, before its first pass: a name taken with other content waits for the whole
            // listing and is judged as before (the server's version takes the name)
            try b.write("dir3/file3.txt", Data("made on B".utf8))
            await b.engine.setAfterWrite { [transport = b.transport] _ in
                firstWrite.withLock { $0 = $0 ?? transport.count("changes/zone") }
            }
            b.transport.reset()
            try await b.engine.pass()
            let pages = b.transport.count("changes/zone")
            #expect(pages >= 8)
            // the first files were written after 1,000 records, with pages still to come
            let first = try #require(firstWrite.withLock { $0 })
            #expect(first < pages, "first write after page \(first) of \(pages)")
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            for index in 0..<1_500 { #expect(b.read("dir\(index % 15)/file\(index).txt") == SyncBatchTests.content(index, size: 64)) }
            #expect(b.events.all.contains { if case .conflict(path: "dir3/file3.txt") = $0 { true } else { false } })
            // everything journaled once: nothing goes back, no second record of a folder
            b.transport.reset()
            try await b.engine.pass()
            #expect(b.transport.count("records/modify") == 0)
            #expect(try await b.engine.journal.count() == 1_515)
            a.transport.reset()
            try await a.engine.pass()
            #expect(a.transport.count("changes/zone records") <= 1)  // at most B's conflict version
        }
    }

    @Test func aListingsNextPagesAreFetchedWhileItsFirstNewFilesAreWritten() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            for index in 0..<1_500 { try a.write("dir\(index % 15)/file\(index).txt", SyncBatchTests.content(index, size: 64)) }
            try await a.engine.pass()
            // the first write comes after 5 pages (1,000 records): it waits here until a page
            // beyond those is fetched, which only a listing that goes on meanwhile does (the
            // wait is a hang guard: without the prefetch it ends after 20 s with 5 pages)
            let pagesDuringFirstWrite = Mutex<Int?>(nil)
            await b.engine.setAfterWrite { [transport = b.transport] _ in
                guard pagesDuringFirstWrite.withLock({ $0 == nil }) else { return }
                let deadline = Date(timeIntervalSinceNow: 20)
                while transport.count("changes/zone") <= 5 && Date() < deadline { usleep(2_000) }
                pagesDuringFirstWrite.withLock { $0 = transport.count("changes/zone") }
            }
            b.transport.reset()
            try await b.engine.pass()
            let during = try #require(pagesDuringFirstWrite.withLock { $0 })
            #expect(during > 5, "pages fetched while the first new files were written: \(during)")
            #expect(during <= 5 + SyncEngine.pagesAhead)
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            #expect(try await b.engine.journal.count() == 1_515)
        }
    }

    @Test func aFailureBetweenTheWritersStagesLeavesNothingUnderARealName() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            for index in 0..<50 { try a.write("docs/file\(index).txt", SyncBatchTests.content(index)) }
            try await a.engine.pass()

            struct Injected: Error {}
            await b.engine.setNewFilesFault { stage in if stage == "written" { throw Injected() } }
            await #expect(throws: (any Error).self) { try await b.engine.pass() }
            // the temporaries were written and are gone again; no file under a real name
            #expect(SyncBatchTests.files(in: b.folder) == [])
            #expect(try await b.engine.journal.entries().allSatisfy { $0.stat.kind == .folder })

            await b.engine.setNewFilesFault(nil)
            try await b.engine.pass()
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            for index in 0..<50 { #expect(b.read("docs/file\(index).txt") == SyncBatchTests.content(index)) }
        }
    }

    /// A kill between the renames of a page of new files and their journal write left files the
    /// journal did not know: the next pass uploaded them as new items, so files deleted on
    /// another device meanwhile came back everywhere (ChaosTests, seed 609986: 16 deleted files
    /// back). Their landing is noted before the renames, and the next life journals them
    /// first: the deletes made meanwhile reach them, and nothing is sent back. A failure there
    /// that does not stop the engine (the journal write refused) is settled within the pass,
    /// before its local part could take them for new files.
    @Test(arguments: [true, false]) func filesRenamedIntoPlaceButNotJournaledAreKnownAfter(killed: Bool) async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            var b = try await harness.device("B")
            for index in 0..<40 { try a.write("docs/file\(index).txt", SyncBatchTests.content(index)) }
            // (a link lands alone, noted the same way)
            try FileManager.default.createSymbolicLink(atPath: a.folder.appendingPathComponent("docs/link").path, withDestinationPath: "file1.txt")
            try await a.engine.pass()

            // B fails with the page's files renamed into place and none of them journaled
            struct Refused: Error {}
            await b.engine.setNewFilesFault { stage in
                guard stage == "renamed" else { return }
                if killed { throw CancellationError() }  // the pass stops there, as a SIGKILL would
                throw Refused()
            }
            b.transport.reset()
            await #expect(throws: (any Error).self) { try await b.engine.pass() }
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            let files = try await b.engine.journal.entries().filter { $0.stat.kind != .folder }.count
            if killed {
                #expect(files == 0)
                #expect(try await b.engine.journal.landings().count == 2)  // the link's, then the page's
                await b.engine.stopAndRelease()
            } else {
                #expect(files == 41)
                #expect(b.transport.count("records/modify") == 0)
            }

            // meanwhile A deletes a tenth of them
            for index in stride(from: 3, to: 40, by: 10) {
                try FileManager.default.removeItem(at: a.folder.appendingPathComponent("docs/file\(index).txt"))
            }
            try FileManager.default.removeItem(at: a.folder.appendingPathComponent("docs/link"))
            try await a.engine.pass()

            // B's next pass (in its next life): the deletes reach its files, and it sends nothing back
            if killed { b = try await harness.device("B") } else { await b.engine.setNewFilesFault(nil) }
            b.transport.reset()
            try await b.engine.pass()
            #expect(b.transport.count("records/modify") == 0)
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            try await a.engine.pass()
            #expect(SyncBatchTests.files(in: a.folder).count == 36)
            let server = try await harness.server.items(token: try await harness.server.token())
            #expect(server.filter { $0.kind != .folder }.count == 36)
            #expect(try await b.engine.journal.landings().isEmpty)
        }
    }

    @Test func aNameTakenLocallyIsJudgedAlone() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            for index in 0..<20 { try a.write("file\(index).txt", SyncBatchTests.content(index)) }
            try await a.engine.pass()
            // on B, before its first pass: one name with other content, one with the same
            try b.write("file3.txt", Data("made on B".utf8))
            try b.write("file4.txt", SyncBatchTests.content(4))
            try await b.engine.pass()
            #expect(b.read("file3.txt") == SyncBatchTests.content(3))  // the server's version took the name
            #expect(b.events.all.contains { if case .conflict(path: "file3.txt") = $0 { true } else { false } })
            let url = b.folder.appendingPathComponent("file3.txt")
            let versions = FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []
            #expect(versions.count == 1)
            #expect(b.read("file4.txt") == SyncBatchTests.content(4))  // adopted
            #expect(!b.events.all.contains { if case .conflict(path: "file4.txt") = $0 { true } else { false } })
            for index in 0..<20 where index != 3 { #expect(b.read("file\(index).txt") == SyncBatchTests.content(index)) }
        }
    }

    @Test func smallFilesAreReadTogetherAndEditsStillTravel() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            // small ones, an empty one, one just over the inline limit (an asset)
            for index in 0..<250 { try a.write("s/file\(index).txt", SyncBatchTests.content(index, size: 100)) }
            try a.write("s/empty.txt", Data())
            let big = SyncBatchTests.content(7, size: Int(SyncRecord.inlineLimit) + 1)
            try a.write("big.bin", big)
            try await a.engine.pass()
            #expect(a.transport.count("assets/upload") == 1)
            try await b.engine.pass()
            #expect(SyncBatchTests.files(in: b.folder) == SyncBatchTests.files(in: a.folder))
            #expect(b.read("big.bin") == big)
            // edits of small files on B travel back to A
            for index in 0..<5 { try b.write("s/file\(index).txt", Data("edited \(index)".utf8)) }
            try await b.engine.pass()
            try await a.engine.pass()
            for index in 0..<5 { #expect(a.read("s/file\(index).txt") == Data("edited \(index)".utf8)) }
        }
    }

    @Test func aNarrowedPassReadsTheJournalByPath() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-scope-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = try SyncJournal.test(at: directory.appendingPathComponent("journal.sqlite").path)
        let stat = SyncStat(kind: .file, size: 1, modifiedNanoseconds: 1, inode: 1, mode: 0o644)
        let paths = ["a", "a/b", "a/b/c", "a b", "a0", "ab", "b", "b/c", "c", "é/x", "é"]
        try journal.putAll(paths.map { JournalEntry(id: "id-" + $0, path: $0, stat: stat, contentHash: "h", changeTag: "t") })
        #expect(try journal.count() == paths.count)
        #expect(try journal.contains(path: "a/b"))
        #expect(try !journal.contains(path: "a/x"))

        var scope = LocalScope(full: false)
        scope.subtrees = ["a", "é"]
        scope.paths = ["b", "missing"]
        #expect(Set(try journal.entries(in: scope).map(\.path)) == ["a", "a/b", "a/b/c", "b", "é", "é/x"])
        scope.full = true
        #expect(try journal.entries(in: scope).count == paths.count)
    }

    @Test("a page's journal questions are asked in one read each: known IDs and paths, upload facts")
    func batchedJournalLookups() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-known-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = try SyncJournal.test(at: directory.appendingPathComponent("journal.sqlite").path)
        let stat = SyncStat(kind: .file, size: 1, modifiedNanoseconds: 1, inode: 1, mode: 0o644)
        try journal.putAll([
            JournalEntry(id: "1", path: "a", stat: stat, contentHash: "h", changeTag: "t1"),
            JournalEntry(id: "2", path: "b/c", stat: stat, contentHash: "h", changeTag: nil),
            JournalEntry(id: "3", path: "é", stat: stat, contentHash: "h", changeTag: "t3"),
        ])
        let known = try journal.known(ids: ["1", "2", "9"], paths: ["a", "b", "b/c", "é", "x"])
        #expect(known.ids == ["1", "2"])
        #expect(known.paths == ["a", "b/c", "é"])
        let none = try journal.known(ids: [], paths: [])
        #expect(none.ids.isEmpty && none.paths.isEmpty)

        try journal.updateTransfer(path: "a") { $0.uploadError = "refused" }
        try journal.setEvicted("3", true)
        #expect(try journal.transfers(among: ["a", "b/c", "é", "x"]) == ["a"])
        #expect(try journal.read { db in try journal.evictedPaths(among: ["a", "b/c", "é", "x"], db) } == ["é"])
    }

    @Test("putAll: new entries queued, answers updated in place, another ID at a path replaced, queue and exclusions cleared")
    func journalPutAllKeepsOneEntryPerPath() throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-putall-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let journal = try SyncJournal.test(at: directory.appendingPathComponent("journal.sqlite").path)
        let stat = SyncStat(kind: .file, size: 1, modifiedNanoseconds: 1, inode: 1, mode: 0o644)
        // new items journaled before their upload: queued
        try journal.putAll([JournalEntry(id: "1", path: "a", stat: stat, contentHash: "h", changeTag: nil),
                            JournalEntry(id: "2", path: "b", stat: stat, contentHash: "h", changeTag: nil)], enqueue: true)
        #expect(try journal.pending().sorted() == ["a", "b"])
        try journal.setExcluded("b", true)
        // the answers: in place (same ID and path), off the queue, no longer excluded
        var grown = stat
        grown.size = 5
        try journal.putAll([JournalEntry(id: "1", path: "a", stat: grown, contentHash: "h2", changeTag: "t1"),
                            JournalEntry(id: "2", path: "b", stat: stat, contentHash: "h", changeTag: "t2")])
        #expect(try journal.pending().isEmpty)
        #expect(try journal.excluded().isEmpty)
        let a = try journal.entry(path: "a")
        #expect(a?.id == "1" && a?.stat.size == 5 && a?.contentHash == "h2" && a?.changeTag == "t1")
        // another ID at a journaled path replaces its entry; a moved ID leaves its old path
        try journal.putAll([JournalEntry(id: "3", path: "a", stat: stat, contentHash: "h3", changeTag: "t3"),
                            JournalEntry(id: "2", path: "c", stat: stat, contentHash: "h", changeTag: "t4")])
        #expect(try journal.entries().map { "\($0.id)=\($0.path)" }.sorted() == ["2=c", "3=a"])
    }

    @Test("the new-file writer's lanes return every result in order")
    func concurrentLanesKeepTheOrder() {
        let results = SyncFiles.concurrently(1000, lanes: 16) { index in index * 2 }
        #expect(results == (0..<1000).map { $0 * 2 })
        #expect(SyncFiles.concurrently(1, lanes: 16) { $0 + 7 } == [7])
        #expect(SyncFiles.concurrently(0, lanes: 16) { $0 }.isEmpty)
        #expect(SyncFiles.concurrently(5, lanes: 1) { $0 } == [0, 1, 2, 3, 4])
    }
}
