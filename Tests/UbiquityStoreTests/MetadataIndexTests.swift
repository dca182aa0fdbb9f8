import Foundation
import GRDB
import Testing
import UbiquityCore
@testable import UbiquityStore

@Suite struct MetadataIndexTests {
    typealias S = MetadataIndexTestSupport

    @Test func schemaHasTheDocumentedColumns() throws {
        let index = try S.memoryIndex()
        let columns = try index.writer.read { db in try db.columns(in: "items").map(\.name) }
        #expect(columns == [
            "id", "path", "name", "name_folded", "size", "creation_date", "content_change_date", "content_type",
            "is_directory", "inode", "mtime_ns", "ctime_ns", "is_uploaded", "is_uploading", "percent_uploaded",
            "downloading_status", "is_downloading", "percent_downloaded", "has_unresolved_conflicts",
            "is_excluded_from_backup", "scan_generation", "uploading_error", "downloading_error", "listing", "mode", "link_target", "stub",
        ])
        #expect(try index.writer.read { db in try db.tableExists("names_fts") && db.tableExists("roots") })
        // the device's one database: the sync journals live beside the rows
        #expect(try index.writer.read { db in try db.tableExists("sync_journals") && db.tableExists("sync_items") })
    }

    /// What sync reads from a row instead of the disk: the mode, a link's target, a stub; a row
    /// without a mode (written before the index kept modes) is brought up to date by the next
    /// scan even though its stat did not move.
    @Test func rowsKeepTheSyncFactsAndOlderRowsGetThem() throws {
        let index = try S.memoryIndex()
        let link = S.file("/r/link").with(mode: 0o120777, linkTarget: "target.txt")
        let stub = S.file("/r/away.txt").with(mode: 0o100600, linkTarget: nil, isStub: true)
        let old = S.file("/r/old.txt")  // mode 0: as written before
        _ = try index.apply([link, stub, old])
        let read = try index.records(atPaths: ["/r/link", "/r/away.txt", "/r/old.txt"])
        #expect(read["/r/link"]?.isSymbolicLink == true && read["/r/link"]?.linkTarget == "target.txt")
        #expect(read["/r/away.txt"]?.isStub == true && read["/r/away.txt"]?.mode == 0o100600)
        #expect(read["/r/old.txt"]?.mode == 0)
        let rescanned = try index.apply([old.with(mode: 0o100644, linkTarget: nil)])
        #expect(rescanned.changed.map(\.mode) == [0o100644])
        #expect(try index.apply([old.with(mode: 0o100644, linkTarget: nil)]).isEmpty, "then the quick-check holds again")
    }

    /// `ubiq ls` reads every row's sync state under a folder: an index-only scan in path order.
    @Test func statusListingIsAnIndexOnlyScan() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([S.folder("/r/docs"), S.file("/r/docs/a.txt")])
        let plan = try index.writer.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN QUERY PLAN " + IndexStatusSnapshot.selection + " ORDER BY path", arguments: ["/r/", "/r0"])
                .map { String(describing: $0["detail"] as String? ?? "") }.joined(separator: "; ")
        }
        #expect(plan.contains("INDEX items_listing") && !plan.contains("TEMP B-TREE"), "\(plan)")
        // the table's row is never read: its seek is deferred and no column comes from it
        let program = try index.writer.read { db in
            try Row.fetchAll(db, sql: "EXPLAIN " + IndexStatusSnapshot.selection + " ORDER BY path", arguments: ["/r/", "/r0"])
        }
        let tableCursor = program.first { $0["opcode"] as String? == "OpenRead" && ($0["p4"] as String?).map { !$0.hasPrefix("k(") } ?? true }?["p1"] as Int?
        #expect(tableCursor != nil)
        #expect(!program.contains { $0["opcode"] as String? == "Column" && $0["p1"] as Int? == tableCursor }, "\(program)")
        #expect(!program.contains { ["SeekRowid", "NotExists", "Seek"].contains($0["opcode"] as String? ?? "") }, "\(program)")
    }

    /// The packed `listing` column reads back as the attributes written.
    @Test func listingColumnPacksTheAttributes() throws {
        let database = MetadataIndexTestSupport.temporaryFolder() + ".sqlite"
        defer { unlink(database) }
        let attributes = UbiquitousAttributes(isUploaded: false, isUploading: true, percentUploaded: 42.5,
                                              downloadingStatus: .downloaded, isDownloading: true, percentDownloaded: 99.99,
                                              hasUnresolvedConflicts: true, isExcludedFromBackup: false)
        do {
            let index = try MetadataIndex(path: database, logger: MetadataIndexTestSupport.logger)
            _ = try index.apply([S.folder("/r/docs"), S.file("/r/docs/a.txt"), S.file("/r/b.pdf")])
            _ = try index.updateUbiquitousAttributes(path: "/r/docs/a.txt", attributes)
            _ = try index.updateUbiquitousAttributes(path: "/r/b.pdf", UbiquitousAttributes(isUploaded: true, percentUploaded: 100,
                                                                                          downloadingStatus: .notDownloaded))
        }
        let snapshot = try IndexStatusSnapshot.read(databasePath: database, under: "/r", recursive: true)
        #expect(snapshot["/r/docs/a.txt"] == attributes)
        #expect(snapshot["/r/b.pdf"]?.downloadingStatus == .notDownloaded && snapshot["/r/b.pdf"]?.percentUploaded == 100)
        #expect(!snapshot.isFolder(0) && snapshot.isFolder(1))  // /r/b.pdf, /r/docs, /r/docs/a.txt
    }

    @Test func applyInsertsThenQuickCheckSkipsUnchangedRows() throws {
        let index = try S.memoryIndex()
        let records = [S.folder("/r/docs"), S.file("/r/docs/a.txt"), S.file("/r/b.pdf", size: 99)]
        let first = try index.apply(records)
        #expect(first.added.map(\.path) == records.map(\.path))
        #expect(first.changed.isEmpty && first.removed.isEmpty)

        let second = try index.apply(records)
        #expect(second.isEmpty)

        var touched = S.file("/r/docs/a.txt", size: 11)
        touched.ctimeNanoseconds += 1
        let third = try index.apply([touched, records[2]])
        #expect(third.added.isEmpty)
        #expect(third.changed.map(\.path) == ["/r/docs/a.txt"])
        #expect(try index.record(at: "/r/docs/a.txt")?.size == 11)
        #expect(try index.count(under: nil) == 3)
        #expect(try index.count(under: "/r/docs") == 1)
    }

    @Test func recordRoundTripsEveryField() throws {
        let index = try S.memoryIndex()
        var record = IndexRecord(
            path: "/r/Résumé.md", name: "Résumé.md", size: 1234,
            creationDate: Date(timeIntervalSince1970: 1_600_000_000.5),
            contentChangeDate: Date(timeIntervalSince1970: 1_700_000_000.25), contentType: "net.daringfireball.markdown",
            isDirectory: false, inode: UInt64.max - 3, mtimeNanoseconds: 1_700_000_000_250_000_000,
            ctimeNanoseconds: 1_700_000_001_000_000_000)
        record.ubiquitous = UbiquitousAttributes(isUploaded: true, percentUploaded: 100, downloadingStatus: .downloaded,
                                                 percentDownloaded: 50, hasUnresolvedConflicts: true, isExcludedFromBackup: true,
                                                 uploadingError: "over quota", downloadingError: "the asset is gone")
        _ = try index.apply([record])
        #expect(try index.record(at: "/r/Résumé.md") == record)
        #expect(try index.record(at: "/r/missing") == nil)
    }

    @Test func metadataValuesCoverEveryAttribute() {
        let record = S.file("/r/a b.txt", size: 7)
        // a creation date the file system did not report, and errors only while there are some
        let optional: Set<MetadataAttribute> = [.fsCreationDate, .uploadingError, .downloadingError]
        for attribute in MetadataAttribute.allCases where !optional.contains(attribute) {
            #expect(record.metadataValue(for: attribute) != nil, "\(attribute)")
        }
        #expect(record.metadataValue(for: .url) == .string("file:///r/a%20b.txt"))
        #expect(record.metadataValue(for: .fsSize) == .integer(7))
        #expect(record.metadataValue(for: .isDownloaded) == .bool(true))
        #expect(record.metadataValue(for: .contentType) == .string("public.plain-text"))
        #expect(record.metadataValue(for: .percentUploaded) == .double(0))
    }

    @Test func ftsFollowsInsertUpdateMoveAndDelete() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([S.file("/r/Quarterly Report.pdf"), S.file("/r/notes.txt"), S.folder("/r/Reports")])
        #expect(try S.trigramMatches(index, "report") == ["/r/Quarterly Report.pdf", "/r/Reports"])

        // A content change keeps the name indexed.
        _ = try index.apply([S.file("/r/notes.txt", size: 500)])
        #expect(try S.trigramMatches(index, "note") == ["/r/notes.txt"])

        // A rename re-indexes the name.
        _ = try index.move(from: "/r/notes.txt", to: "/r/minutes.txt")
        #expect(try S.trigramMatches(index, "note").isEmpty)
        #expect(try S.trigramMatches(index, "minute") == ["/r/minutes.txt"])

        // Deletion drops it.
        _ = try index.remove(pathsAndSubtrees: ["/r/Quarterly Report.pdf"])
        #expect(try S.trigramMatches(index, "report") == ["/r/Reports"])
        try S.checkFTS(index)
    }

    @Test func movingAFolderRenamesItsSubtree() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([
            S.folder("/r/a"), S.folder("/r/a/sub"), S.file("/r/a/sub/x.txt"), S.file("/r/a/y.md"),
            S.file("/r/ab.txt"), S.file("/r/a0"),
        ])
        let delta = try index.move(from: "/r/a", to: "/r/b.d")
        #expect(Set(delta.moved.map(\.from)) == ["/r/a", "/r/a/sub", "/r/a/sub/x.txt", "/r/a/y.md"])
        #expect(Set(delta.moved.map(\.record.path)) == ["/r/b.d", "/r/b.d/sub", "/r/b.d/sub/x.txt", "/r/b.d/y.md"])
        #expect(delta.added.isEmpty && delta.removed.isEmpty)
        let all = try index.records(under: nil).map(\.path)
        #expect(all == ["/r/a0", "/r/ab.txt", "/r/b.d", "/r/b.d/sub", "/r/b.d/sub/x.txt", "/r/b.d/y.md"])
        let moved = try #require(try index.record(at: "/r/b.d"))
        #expect(moved.name == "b.d" && moved.contentType == ContentType.folder)
        try S.checkFTS(index)
    }

    @Test func movingAFileUpdatesNameAndTypeAndReplacesTheTarget() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([S.file("/r/draft.txt", size: 1), S.file("/r/final.md", size: 2)])
        let delta = try index.move(from: "/r/draft.txt", to: "/r/final.md")
        #expect(delta.removed == ["/r/final.md"])
        #expect(delta.moved == [MovedRecord(from: "/r/draft.txt", record: try #require(try index.record(at: "/r/final.md")))])
        let record = try #require(try index.record(at: "/r/final.md"))
        #expect(record.size == 1 && record.name == "final.md" && record.contentType == "net.daringfireball.markdown")
        #expect(try index.move(from: "/r/nothing", to: "/r/else").isEmpty)
        #expect(throws: UbiquityError.self) { try index.move(from: "/r", to: "/r/inside") }
    }

    @Test func removingASubtreeListsEveryRow() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([S.folder("/r/a"), S.file("/r/a/1"), S.folder("/r/a/b"), S.file("/r/a/b/2"), S.file("/r/a.txt")])
        let delta = try index.remove(pathsAndSubtrees: ["/r/a/", "/r/none"])
        #expect(delta.removed == ["/r/a", "/r/a/1", "/r/a/b", "/r/a/b/2"])
        #expect(try index.records(under: "/r").map(\.path) == ["/r/a.txt"])
        try S.checkFTS(index)
    }

    @Test func reconcileDeletesVanishedRowsAndKeepsOthers() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([S.file("/r/keep"), S.file("/r/gone"), S.folder("/r/d"), S.file("/r/d/gone2"), S.file("/other/x")])
        let delta = try index.reconcile(root: "/r", seen: [S.file("/r/keep"), S.folder("/r/d"), S.file("/r/new")])
        #expect(delta.added.map(\.path) == ["/r/new"])
        #expect(delta.changed.isEmpty)
        #expect(delta.removed == ["/r/d/gone2", "/r/gone"])
        #expect(try index.records(under: nil).map(\.path) == ["/other/x", "/r/d", "/r/keep", "/r/new"])
        #expect(try index.reconcile(root: "/r", seen: [S.file("/r/keep"), S.folder("/r/d"), S.file("/r/new")]).isEmpty)
    }

    @Test func rowsAppliedDuringAScanCountAsSeen() throws {
        let index = try S.memoryIndex()
        let session = try index.beginScan(root: "/r")
        _ = try index.addScanned([S.file("/r/scanned")], to: session)
        _ = try index.apply([S.file("/r/fromWatcher")])
        let delta = try index.finishScan(session)
        #expect(delta.isEmpty)
        #expect(try index.count(under: "/r") == 2)
        #expect(throws: UbiquityError.self) { try index.addScanned([S.file("/r/late")], to: session) }
    }

    /// Sync's states of a pass, many paths at once, inside a transaction of the device database
    /// (read a chunk of paths per query): each row changed as asked, a path named twice sees the
    /// first change, missing paths reported. The changed records go on the change feed only
    /// when somebody follows it (`listening`); otherwise only the attributes are read.
    @Test(arguments: [false, true])
    func ubiquitousAttributesUpdateManyPaths(listening: Bool) async throws {
        let index = try S.memoryIndex()
        let count = MetadataIndex.lookupChunk * 2 + 3
        _ = try index.apply((0..<count).map { S.file("/r/f\($0)") })
        let feed = listening ? index.changes() : nil
        var changes: [(path: String, change: @Sendable (inout UbiquitousAttributes) -> Void)] = (0..<count).map { index in
            ("/r/f\(index)", { $0.isUploaded = true; $0.percentUploaded = Double(index % 100) })
        }
        changes.append(("/r/f0", { $0.isUploading = !$0.isUploaded }))  // sees the first change
        changes.append(("/r/missing", { $0.isUploaded = true }))
        changes.append(("/r/f1/", { $0.hasUnresolvedConflicts = true }))  // normalized
        func update(_ changes: [(path: String, change: @Sendable (inout UbiquitousAttributes) -> Void)]) throws
            -> (changed: [String], missing: [String], delta: IndexDelta) {
            try index.write("test", publishing: { db, delta in
                let result = try index.changeAttributes(changes, db: db, delta: &delta)
                return (result.changed, result.missing, delta)
            })
        }
        let (changed, missing, delta) = try update(changes)
        #expect(missing == ["/r/missing"])
        #expect(changed.count == count && Set(changed).count == count)
        for position in 0..<count {
            let stored = try index.record(at: "/r/f\(position)")?.ubiquitous
            #expect(stored?.isUploaded == true)
            #expect(stored?.percentUploaded == Double(position % 100))
        }
        #expect(try index.record(at: "/r/f0")?.ubiquitous.isUploading == false)
        #expect(try index.record(at: "/r/f1")?.ubiquitous.hasUnresolvedConflicts == true)
        // as stored: the next pass with the same states changes nothing
        let again = try update((0..<count).map { index in
            ("/r/f\(index)", { $0.isUploaded = true; $0.percentUploaded = Double(index % 100) })
        })
        #expect(again.changed.isEmpty && again.missing.isEmpty)
        if let feed {
            var delta2 = IndexDelta()
            try index.write("test", publishing: { db, delta in
                try index.changeAttributes([("/r/f2", { $0.isUploading = true })], db: db, delta: &delta)
                delta2 = delta
            })
            #expect(delta2.changed.map(\.path) == ["/r/f2"] && delta2.changed.first?.ubiquitous.isUploading == true)
            var iterator = feed.makeAsyncIterator()
            _ = await iterator.next()  // the apply of the rows
            #expect(await iterator.next() == delta2)
        } else {
            #expect(delta.isEmpty, "nobody follows the feed: no records read")
        }
    }

    @Test func ubiquitousAttributesUpdate() throws {
        let index = try S.memoryIndex()
        _ = try index.apply([S.file("/r/a")])
        let attrs = UbiquitousAttributes(isUploaded: true, percentUploaded: 100)
        let delta = try index.updateUbiquitousAttributes(path: "/r/a", attrs)
        #expect(delta.changed.map(\.ubiquitous) == [attrs])
        #expect(try index.updateUbiquitousAttributes(path: "/r/a", attrs).isEmpty)
        #expect(try index.updateUbiquitousAttributes(path: "/r/missing", attrs).isEmpty)
        // A content change keeps the ubiquitous state (sync owns it).
        let changed = try index.apply([S.file("/r/a", size: 77)])
        #expect(changed.changed.first?.ubiquitous == attrs)
        #expect(try index.record(at: "/r/a")?.ubiquitous == attrs)
    }

    @Test func statusCountsItemsAndRoots() throws {
        let index = try S.memoryIndex()
        try index.registerRoot("/r")
        _ = try index.reconcile(root: "/r", seen: [S.folder("/r/d"), S.file("/r/d/f")])
        try index.setRescanPending(root: "/r", true, message: "watch limit")
        let status = try index.status()
        #expect(status.itemCount == 2 && status.folderCount == 1)
        let root = try #require(status.roots.first)
        #expect(root.path == "/r" && root.rescanPending && root.message == "watch limit")
        #expect(root.lastScanStarted != nil && root.lastScanFinished != nil)
    }

    @Test func bulkInsertOfManyRowsInOneTransaction() throws {
        let index = try S.memoryIndex()
        let records = (0..<20_000).map { S.file("/r/dir\($0 % 50)/file-\($0).txt", inode: UInt64($0)) }
        #expect(try index.apply(records).added.count == 20_000)
        #expect(try index.apply(records).isEmpty)
        #expect(try S.trigramMatches(index, "file-1999").count == 11)
    }
}

@Suite struct MetadataIndexFoldTests {
    @Test func asciiFastPathAgreesWithPredicateFolding() {
        for name in ["README.md", "already lower", "MiXeD-Case_123.TXT", "", "Résumé.PDF", "İstanbul", "ÀÉÎ", "ß", "ǅ"] {
            #expect(MetadataIndex.fold(name) == PredicateStringMatch.fold(name), "\(name)")
        }
    }
}
