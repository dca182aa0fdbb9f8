// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// An evicted file is a hidden stub `.NAME.icloud` (``Placeholder``), and nothing written where
/// it was ever replaces the server's content: two devices on one real server (in process), each
/// pass run by hand, so every case is one interleaving, reproducible.
@Suite(.serialized) struct EvictionStubTests {
    typealias Harness = SyncBatchTests.Harness
    typealias Device = SyncBatchTests.Device

    static func path(_ device: Device, _ relative: String) -> String { device.folder.appendingPathComponent(relative).path }
    static func stub(_ device: Device, _ relative: String) -> Placeholder? {
        Placeholder.read(stubAt: Placeholder.stubPath(for: path(device, relative)))
    }
    static func unresolved(_ device: Device, _ relative: String) -> [FileVersion] {
        FileVersion.unresolvedConflictVersionsOfItem(at: device.folder.appendingPathComponent(relative)) ?? []
    }
    static func serverHash(_ device: Device, _ relative: String) async throws -> String? {
        try await device.engine.journal.entry(path: relative).map(\.contentHash)
    }

    /// A and B with `doc.txt` ("the server's bytes") synced, then evicted on A.
    static func evictedOnA(_ harness: Harness, content: String = "the server's bytes") async throws -> (Device, Device) {
        let a = try await harness.device("a"), b = try await harness.device("b")
        try a.write("doc.txt", Data(content.utf8))
        try await a.engine.pass()
        try await b.engine.pass()
        #expect(b.read("doc.txt") == Data(content.utf8))
        #expect(try await a.engine.evict(path(a, "doc.txt")) == [path(a, "doc.txt")])
        return (a, b)
    }

    @Test func anEvictedFileIsAStubAndItsNameIsFree() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            let file = Self.path(a, "doc.txt")
            #expect(FileStamp.of(file) == nil, "nothing at the name: no program reads a placeholder as the document")
            #expect(open(file, O_RDONLY) == -1 && errno == ENOENT)
            let stub = try #require(Self.stub(a, "doc.txt"))
            #expect(stub.name == "doc.txt" && stub.size == 18 && stub.hash == SyncRig.sha("the server's bytes"))
            #expect(Placeholder.isEvicted(file))
            let state = try a.engine.itemState(file)
            #expect(state.downloadingStatus == .notDownloaded && state.sync == .uploaded)
            // passes on both sides change nothing, upload nothing
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Data("the server's bytes".utf8))
            #expect(a.read(".doc.txt.icloud") != nil && a.read("doc.txt") == nil)
            // and the download brings it back, the stub goes
            #expect(try await a.engine.startDownloading(file) == [file])
            #expect(a.read("doc.txt") == Data("the server's bytes".utf8))
            #expect(Self.stub(a, "doc.txt") == nil && a.read(".doc.txt.icloud") == nil)
            #expect(try a.engine.itemState(file).downloadingStatus == .current)
        }
    }

    @Test func appendingToAnEvictedFileKeepsTheServersBytesAndWhatWasWritten() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            // `echo x >> doc.txt`
            let fd = open(Self.path(a, "doc.txt"), O_WRONLY | O_APPEND | O_CREAT, 0o644)
            #expect(fd >= 0)
            _ = "x\n".withCString { write(fd, $0, 2) }
            close(fd)
            try await a.engine.pass()
            #expect(a.read("doc.txt") == Data("the server's bytes".utf8), "the server's version is back under the name")
            let versions = Self.unresolved(a, "doc.txt")
            #expect(versions.count == 1)
            #expect(versions.first.flatMap { FileManager.default.contents(atPath: $0.url.path) } == Data("x\n".utf8), "what was written is a conflict version")
            #expect(Self.stub(a, "doc.txt") == nil)
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Data("the server's bytes".utf8), "every other device keeps the content")
            #expect(try await Self.serverHash(b, "doc.txt") == SyncRig.sha("the server's bytes"))
            #expect(Self.unresolved(b, "doc.txt").count == 1, "the conflict version is shared")
        }
    }

    @Test func aNewFileAtAnEvictedNameIsAConflictVersionAndTheSameContentIsAdopted() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            // `> doc.txt` / a program writing a new file of that name
            try a.write("doc.txt", Data("something else".utf8))
            try await a.engine.pass()
            #expect(a.read("doc.txt") == Data("the server's bytes".utf8))
            #expect(Self.unresolved(a, "doc.txt").count == 1)
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Data("the server's bytes".utf8))

            // the same content written back: simply downloaded, no conflict
            try a.write("same.txt", Data("same".utf8))
            try await a.engine.pass()
            #expect(try await a.engine.evict(Self.path(a, "same.txt")).count == 1)
            try a.write("same.txt", Data("same".utf8))
            try await a.engine.pass()
            #expect(Self.unresolved(a, "same.txt").isEmpty)
            #expect(Self.stub(a, "same.txt") == nil)
            #expect(try a.engine.itemState(Self.path(a, "same.txt")).downloadingStatus == .current)
        }
    }

    /// Found by the sync simulator (seed 9 once power losses and edits during downloads ran):
    /// a file written at an evicted file's name that another record then took left the stub
    /// beside the download, standing for nothing.
    @Test func aFileWrittenAtAnEvictedNameThatAnotherRecordTakesLeavesNoStub() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            // B replaces the file by a new one (another record) at the same name
            try FileManager.default.removeItem(atPath: Self.path(b, "doc.txt"))
            try await b.engine.pass()
            try b.write("doc.txt", Data("a new file on b".utf8))
            try await b.engine.pass()
            // A writes a file at the evicted one's name before it hears of either
            try a.write("doc.txt", Data("written on a".utf8))
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(a.read("doc.txt") == Data("a new file on b".utf8))
            #expect(Self.stub(a, "doc.txt") == nil && a.read(".doc.txt.icloud") == nil, "no stub beside the file")
        }
    }

    /// B renames the evicted file away, another file onto its name, then edits the first: A
    /// fetches the rename onto the evicted file's name before that file's own rename (the zone's
    /// changes come in the order of each record's last change). The stub there is a taken name:
    /// it moves aside, then its own record renames it. Put beside it, the file took the journal
    /// row's path, the journal's update failed on every pass and the evicted file's download
    /// never landed (sync simulator seed 19). Both names end right, the evicted file still
    /// evicted, nothing left aside.
    @Test func aRenameOntoAnEvictedFilesNameBeforeItsOwnRenameConverges() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            try b.write("other.txt", Data("another file".utf8))
            try await b.engine.pass()
            try await a.engine.pass()
            try FileManager.default.moveItem(atPath: Self.path(b, "doc.txt"), toPath: Self.path(b, "moved.txt"))
            try await b.engine.pass()
            try FileManager.default.moveItem(atPath: Self.path(b, "other.txt"), toPath: Self.path(b, "doc.txt"))
            try await b.engine.pass()
            try b.write("moved.txt", Data("the server's bytes, edited".utf8))
            try await b.engine.pass()
            _ = try? await a.engine.pass()
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(a.read("doc.txt") == Data("another file".utf8))
            #expect(Self.stub(a, "doc.txt") == nil && Self.stub(a, "moved.txt")?.hash == SyncRig.sha("the server's bytes, edited"))
            #expect(SyncBatchTests.files(in: a.folder).sorted() == [".moved.txt.icloud", "doc.txt"], "A: \(SyncBatchTests.files(in: a.folder))")
            #expect(SyncBatchTests.files(in: b.folder).sorted() == ["doc.txt", "moved.txt"], "B: \(SyncBatchTests.files(in: b.folder))")
            let moved = Self.path(a, "moved.txt")
            #expect(try await a.engine.startDownloading(moved) == [moved])
            #expect(a.read("moved.txt") == Data("the server's bytes, edited".utf8))
        }
    }

    /// A renames the folder of a file evicted there (case only) and loses the answer: the server
    /// has both records renamed, A's journal the old names. The next fetch brings A's own renames
    /// back, to items no longer at their journaled paths: taken for deletes, A deleted both
    /// records and then removed the stub as no longer journaled, and B deleted its copy; the
    /// content was gone everywhere (sync simulator seed 178). The items are at the records' paths
    /// already, the same inodes: the journal follows.
    @Test func anOwnFolderRenameWhoseAnswerWasLostKeepsAnEvictedFileInIt() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/old/a.txt", Data("only copy".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(try await a.engine.evict(Self.path(a, "docs/old/a.txt")) == [Self.path(a, "docs/old/a.txt")])
            try FileManager.default.moveItem(atPath: Self.path(a, "docs/old"), toPath: Self.path(a, "docs/Old"))
            a.transport.losing.withLock { $0["records/modify"] = 1 }  // both renames go in one request
            _ = try? await a.engine.pass()  // the server took them; A never heard
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(Self.stub(a, "docs/Old/a.txt") != nil)
            let items = try await harness.server.items(token: harness.server.token())
            #expect(items.map(\.path).sorted() == ["docs", "docs/Old", "docs/Old/a.txt"])
            try await b.engine.pass()
            #expect(b.read("docs/Old/a.txt") == Data("only copy".utf8))
            let file = Self.path(a, "docs/Old/a.txt")
            #expect(try await a.engine.startDownloading(file) == [file])
            #expect(a.read("docs/Old/a.txt") == Data("only copy".utf8))
        }
    }

    /// The evicted file's own content written back at its name is adopted and its stub goes:
    /// the stub's removal was not made durable, so a power loss brought it back beside the file,
    /// hidden by it and standing for no item, never downloaded or removed (sync simulator seed
    /// 1161, where the content came back by a download whose folder's fsync failed).
    @Test func theStubOfAnEvictedFileWrittenBackGoesForGood() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/old/a.txt", Data("the server's bytes".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(try await b.engine.evict(Self.path(b, "docs/old/a.txt")) == [Self.path(b, "docs/old/a.txt")])
            try b.write("docs/old/a.txt", Data("the server's bytes".utf8))
            let disk = PowerLossTests.disk(of: b)  // what is on the disk now is durable
            defer { disk.stop() }
            try await b.engine.pass()
            #expect(Self.stub(b, "docs/old/a.txt") == nil)
            let restarted = try await PowerLossTests.powerLoss(harness, b, disk: disk, name: "b")
            try await restarted.engine.pass()
            #expect(restarted.read("docs/old/a.txt") == Data("the server's bytes".utf8))
            #expect(Self.stub(restarted, "docs/old/a.txt") == nil, "no stub beside the file")
        }
    }

    /// An evicted file whose folder was renamed here (case only, no pass yet) while another
    /// device moved it: the pull, before the local part, finds nothing at its journaled name and
    /// took that for a delete here that wins over a rename there; its record went, then its
    /// stub (for no record any more), and the other devices deleted their copies: the content was
    /// lost everywhere (sync simulator seed 1497). It is downloaded at the record's path now.
    @Test func anEvictedFileMovedThereWhileItsFolderWasRenamedHereIsKept() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("media/c.bin", Data("only bytes".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(try await b.engine.evict(Self.path(b, "media/c.bin")) == [Self.path(b, "media/c.bin")])
            try FileManager.default.moveItem(atPath: Self.path(b, "media"), toPath: Self.path(b, "Media"))
            try FileManager.default.createDirectory(atPath: Self.path(a, "old"), withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: Self.path(a, "media"), toPath: Self.path(a, "old/media"))
            try await a.engine.pass()
            _ = try? await b.engine.pass()
            for _ in 0..<2 {
                try await a.engine.pass()
                _ = try? await b.engine.pass()
            }
            #expect(a.read("old/media/c.bin") == Data("only bytes".utf8), "the other device keeps it")
            let records = try await harness.server.items(token: try await harness.server.token())
            #expect(records.contains { $0.path.hasSuffix("c.bin") && $0.contentHash == SyncRig.sha("only bytes") })
        }
    }

    @Test func theStubFollowsRemoteEditsRenamesAndDeletes() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            // B edits: A's stub follows, nothing is downloaded
            try b.write("doc.txt", Data("version two, longer".utf8))
            try await b.engine.pass()
            try await a.engine.pass()
            #expect(a.read("doc.txt") == nil)
            #expect(Self.stub(a, "doc.txt")?.hash == SyncRig.sha("version two, longer"))
            #expect(Self.stub(a, "doc.txt")?.size == 19)
            // B renames: the stub moves
            try FileManager.default.moveItem(atPath: Self.path(b, "doc.txt"), toPath: Self.path(b, "renamed.txt"))
            try await b.engine.pass()
            try await a.engine.pass()
            #expect(Self.stub(a, "doc.txt") == nil && Self.stub(a, "renamed.txt") != nil)
            #expect(a.read("renamed.txt") == nil)
            #expect(try a.engine.itemState(Self.path(a, "renamed.txt")).downloadingStatus == .notDownloaded)
            // B deletes: the stub goes
            try FileManager.default.removeItem(atPath: Self.path(b, "renamed.txt"))
            try await b.engine.pass()
            try await a.engine.pass()
            #expect(Self.stub(a, "renamed.txt") == nil && a.read("renamed.txt") == nil)
        }
    }

    @Test func localChangesToTheStubAreMovesTouchesAndDeletesNeverContent() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            // a touched stub is not an edit
            var times = [timespec(tv_sec: 1_500_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
            #expect(utimensat(AT_FDCWD, Placeholder.stubPath(for: Self.path(a, "doc.txt")), &times, 0) == 0)
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Data("the server's bytes".utf8))
            // a stub renamed as a stub: the file is renamed everywhere, its content untouched
            try FileManager.default.moveItem(atPath: Placeholder.stubPath(for: Self.path(a, "doc.txt")),
                                             toPath: Placeholder.stubPath(for: Self.path(a, "moved.txt")))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("doc.txt") == nil && b.read("moved.txt") == Data("the server's bytes".utf8))
            // a stub renamed to a document's name: the file stays evicted, what was renamed is new
            try FileManager.default.moveItem(atPath: Placeholder.stubPath(for: Self.path(a, "moved.txt")), toPath: Self.path(a, "copy.json"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(Self.stub(a, "moved.txt") != nil, "its stub is written again")
            #expect(b.read("moved.txt") == Data("the server's bytes".utf8), "never replaced by the stub's bytes")
            // the stub deleted: the file is deleted, as any file deleted here
            try FileManager.default.removeItem(atPath: Placeholder.stubPath(for: Self.path(a, "moved.txt")))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("moved.txt") == nil)
        }
    }

    @Test func aFileWrittenOverAnEvictedOneThatTheServerDeletedIsNew() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            try FileManager.default.removeItem(atPath: Self.path(b, "doc.txt"))
            try await b.engine.pass()
            // before A hears of the delete, something is written at the name
            try a.write("doc.txt", Data("new here".utf8))
            try await a.engine.pass()
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(a.read("doc.txt") == Data("new here".utf8))
            #expect(b.read("doc.txt") == Data("new here".utf8))
            #expect(Self.stub(a, "doc.txt") == nil)
        }
    }

    @Test func aPinnedItemIsDownloadedAndNeverEvicted() async throws {
        try await Harness.with { harness in
            let (a, _) = try await Self.evictedOnA(harness)
            let file = Self.path(a, "doc.txt")
            #expect(try await a.engine.pin(file) == [file], "pinning downloads it")
            #expect(a.read("doc.txt") == Data("the server's bytes".utf8))
            #expect(try a.engine.itemState(file).isPinned == true)
            await #expect(throws: UbiquityError.self) { try await a.engine.evict(file) }
            try await a.engine.unpin(file)
            #expect(try a.engine.itemState(file).isPinned == false)
            #expect(try await a.engine.evict(file) == [file])

            // a folder: everything in it, also what is renamed into it; its items are unpinned with it
            try a.write("keep/one.txt", Data("one".utf8))
            try await a.engine.pass()
            _ = try await a.engine.pin(Self.path(a, "keep"))
            #expect(try a.engine.itemState(Self.path(a, "keep/one.txt")).isPinned == true)
            #expect(try await a.engine.evict(Self.path(a, "keep")).isEmpty, "a pinned folder's files stay")
            #expect(a.read("keep/one.txt") == Data("one".utf8))
            await #expect(throws: UbiquityError.self) { try await a.engine.unpin(Self.path(a, "keep/one.txt")) }
            try await a.engine.unpin(Self.path(a, "keep"))
            #expect(try await a.engine.evict(Self.path(a, "keep")).count == 1)
            await #expect(throws: UbiquityError.self) { try await a.engine.pin(a.folder.path) }
        }
    }

    @Test func aFileOpenInAnotherProgramIsNotEvicted() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            try a.write("open.txt", Data("being read".utf8))
            try await a.engine.pass()
            let fd = open(Self.path(a, "open.txt"), O_RDONLY)
            #expect(fd >= 0)
            await #expect(throws: UbiquityError.self) { try await a.engine.evict(Self.path(a, "open.txt")) }
            #expect(a.read("open.txt") == Data("being read".utf8) && Self.stub(a, "open.txt") == nil)
            close(fd)
            #expect(try await a.engine.evict(Self.path(a, "open.txt")).count == 1)
        }
    }

    @Test func stubNamesAreReserved() {
        #expect(Placeholder.isStubName(".a.icloud") && !Placeholder.isStubName(".icloud") && !Placeholder.isStubName("a.icloud"))
        #expect(Placeholder.stubPath(for: "/f/x/notes.txt") == "/f/x/.notes.txt.icloud")
        #expect(Placeholder.stubPath(for: "notes.txt") == ".notes.txt.icloud")
        #expect(Placeholder.documentPath(ofStub: "/f/.notes.txt.icloud") == "/f/notes.txt")
        #expect(Placeholder.documentPath(ofStub: "/f/notes.txt") == nil)
        #expect(!SyncFiles.isValid(relativePath: "x/.notes.txt.icloud"), "a record never takes a stub's name")
        #expect(!Placeholder.canStand(forName: String(repeating: "n", count: 250)))
    }
}

extension EvictionStubTests {
    /// A writes `docs/old/c.bin` and `Notes.md`; both devices sync them.
    static func syncCAndNotes(_ a: Device, _ b: Device) async throws {
        try a.write("docs/old/c.bin", Data("c, first".utf8))
        try a.write("Notes.md", Data("notes".utf8))
        try await a.engine.pass()
        try await b.engine.pass()
    }

    /// B evicts `docs/old/c.bin`, moves `Notes.md` onto its name (the stub hidden behind it) and
    /// renames `docs/old` to `Media/old`, no pass between; A edits `c.bin` and sends it.
    static func hideStubBehindAMovedFile(_ a: Device, _ b: Device) async throws {
        #expect(try await b.engine.evict(path(b, "docs/old/c.bin")) == [path(b, "docs/old/c.bin")])
        try FileManager.default.moveItem(atPath: path(b, "Notes.md"), toPath: path(b, "docs/old/c.bin"))
        try FileManager.default.createDirectory(atPath: path(b, "Media"), withIntermediateDirectories: true)
        try FileManager.default.moveItem(atPath: path(b, "docs/old"), toPath: path(b, "Media/old"))
        try a.write("docs/old/c.bin", Data("c, edited on a".utf8))
        try await a.engine.pass()
    }

    /// After B downloads everything: no stub left, both devices the same, A's edit and the
    /// notes both kept.
    static func expectStubSettledBesideTheFile(_ a: Device, _ b: Device) async throws {
        _ = try? await b.engine.startDownloading(b.folder.path)
        #expect(stub(b, "Media/old/c.bin") == nil, "no stub left")
        let files = SyncBatchTests.files(in: b.folder)
        #expect(files == SyncBatchTests.files(in: a.folder))
        let contents = Set(files.compactMap { b.read($0) })
        #expect(contents.contains(Data("c, edited on a".utf8)) && contents.contains(Data("notes".utf8)), "\(files)")
    }

    /// A file moved onto an evicted file's name (beside its stub), the folder then renamed, no
    /// pass between, while another device edits the evicted file: the edit comes back at the old
    /// path (deleted here, edited there), and the stub moved with the folder is a copy of it
    /// (`SyncEngine+OrphanStubs.swift`), hidden behind the moved file, which the scans list in
    /// its place. Nothing looked at it, and it stayed after every download (sync simulator seed
    /// 1817). It becomes a copy beside the file.
    @Test func aStubHiddenBehindAFileMovedOntoItsNameIsSettled() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try await Self.syncCAndNotes(a, b)
            try await Self.hideStubBehindAMovedFile(a, b)
            for device in [b, a, b, a] { try await device.engine.pass() }
            try await Self.expectStubSettledBesideTheFile(a, b)
        }
    }
}

extension EvictionStubTests {
    /// The same stub hidden behind a moved file, its settling failed once (the server's answer
    /// about its record lost): the file in front is journaled, and no scan lists the stub behind
    /// it again. Noted, it is settled by a later pass.
    @Test func aHiddenStubWhoseSettlingFailedIsSettledLater() async throws {
        try await Harness.with { harness in
            let refused = Mutex<String?>(nil)
            let a = try await harness.device("a")
            let b = try await harness.device("b", rewrite: SyncBatchTests.refusing { request in
                guard request.path.hasSuffix("records/lookup"), let id = refused.withLock({ $0 }) else { return false }
                return String(decoding: request.body, as: UTF8.self).contains(id)
            })
            try await Self.syncCAndNotes(a, b)
            let id = try #require(try b.openJournal().entry(path: "docs/old/c.bin")?.id)
            try await Self.hideStubBehindAMovedFile(a, b)
            refused.withLock { $0 = id }
            for _ in 0..<2 { try? await b.engine.pass() }
            #expect(Self.stub(b, "Media/old/c.bin") != nil, "still there while its record cannot be read")
            refused.withLock { $0 = nil }
            for device in [a, b, a, b, a] { try? await device.engine.pass() }
            try await Self.expectStubSettledBesideTheFile(a, b)
            #expect(try b.openJournal().keys(withPrefix: SyncEngine.hiddenStubPrefix).isEmpty, "nothing noted left")
        }
    }
}

extension EvictionStubTests {
    /// A file written over an evicted one (beside its stub), and its folder marked skip-backup
    /// before any pass: the folder's evicted files are downloaded before their records go, and
    /// the download, finding a file at the name, was refused as a local change at every pass;
    /// the server's content was on no device (sync simulator seed 3131). It is settled as any
    /// file written over an evicted one: the server's version takes the name, what was written
    /// is a conflict version, and the folder is kept back with both.
    @Test func aFileWrittenOverAnEvictedOneInAFolderThenMarkedSkipBackupKeepsBoth() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/c.bin", Data("the server's bytes".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let file = Self.path(a, "docs/c.bin")
            #expect(try await a.engine.evict(file) == [file])
            try a.write("docs/c.bin", Data("written over".utf8))
            try BackupExclusion.setExcluded(true, Self.path(a, "docs"))
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(a.read("docs/c.bin") == Data("the server's bytes".utf8))
            let versions = Self.unresolved(a, "docs/c.bin").compactMap { FileManager.default.contents(atPath: $0.url.path) }
            #expect(versions == [Data("written over".utf8)], "what was written is a conflict version")
            #expect(Self.stub(a, "docs/c.bin") == nil, "the stub is gone")
            try await b.engine.pass()
        }
    }
}

extension EvictionStubTests {
    /// A file written over an evicted one, then marked skip-backup, while another device deletes
    /// the item: the stub, which stands for nothing any more, goes with the journal's entry, and
    /// the file marked here stays. Before, the stub was left beside it for good (sync simulator
    /// seed 6329).
    @Test func theStubOfAFileDeletedElsewhereGoesWhenAFileMarkedSkipBackupHoldsItsName() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.evictedOnA(harness)
            try a.write("doc.txt", Data("written here".utf8))
            try BackupExclusion.setExcluded(true, Self.path(a, "doc.txt"))
            try FileManager.default.removeItem(at: b.folder.appendingPathComponent("doc.txt"))
            try await b.engine.pass()
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(Self.stub(a, "doc.txt") == nil && a.read(".doc.txt.icloud") == nil, "no stub left")
            #expect(a.read("doc.txt") == Data("written here".utf8))
            #expect(try await harness.server.items(token: harness.server.token()).isEmpty)
        }
    }
}

extension EvictionStubTests {
    /// As above, with the folder renamed here before the pass: the journal's entry is at the old
    /// path, where nothing is, and the stub moved with the folder behind the file marked
    /// skip-backup (which no scan lists as new). It goes all the same, the file marked here
    /// stays. Before, the stub was left beside it for good (sync simulator seed 7364).
    @Test func theStubOfAFileDeletedElsewhereGoesFromBehindAMarkedFileInAFolderRenamedHere() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("box/doc.txt", Data("the server's bytes".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(try await a.engine.evict(Self.path(a, "box/doc.txt")) == [Self.path(a, "box/doc.txt")])
            try a.write("box/doc.txt", Data("written here".utf8))
            try BackupExclusion.setExcluded(true, Self.path(a, "box/doc.txt"))
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("box"), to: a.folder.appendingPathComponent("Box"))
            try FileManager.default.removeItem(at: b.folder.appendingPathComponent("box"))
            try await b.engine.pass()
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(Self.stub(a, "Box/doc.txt") == nil && a.read("Box/.doc.txt.icloud") == nil, "no stub left")
            #expect(a.read("Box/doc.txt") == Data("written here".utf8))
            try await b.engine.pass()
            #expect(b.read("Box/doc.txt") == nil && FileStamp.of(Self.path(b, "Box")) != nil, "the folder is sent again, not the file marked")
        }
    }
}

extension EvictionStubTests {
    /// A file moved onto an evicted file's name (free: an evicted file is a stub), then their
    /// folder renamed, no pass between: the stub, hidden behind the file, moved with the folder,
    /// and no scan lists it. The evicted file moves aside as a conflicted copy (still evicted),
    /// and the file is a new item: both kept. Before, the evicted file was deleted as gone and
    /// its stub left behind the file for good (sync simulator seed 10026); paired with the file
    /// by its name, its stub was written again at the old path, which failed every pass (seed
    /// 10117).
    @Test func anEvictedFileAFileTookTheNameOfInAFolderRenamedHereMovesAside() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/Notes.md", Data("the notes".utf8))
            try a.write("b.txt", Data("b's bytes".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(try await a.engine.evict(Self.path(a, "docs/Notes.md")) == [Self.path(a, "docs/Notes.md")])
            try FileManager.default.moveItem(atPath: Self.path(a, "b.txt"), toPath: Self.path(a, "docs/Notes.md"))
            try FileManager.default.moveItem(atPath: Self.path(a, "docs"), toPath: Self.path(a, "papers"))
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(a.read("papers/.Notes.md.icloud") == nil, "no stub behind the file")
            #expect(a.read("papers/Notes.md") == Data("b's bytes".utf8))
            let aside = try #require(SyncBatchTests.files(in: a.folder).first { $0.hasPrefix("papers/.Notes (conflicted copy a ") })
            #expect(Self.stub(a, "papers/" + String(aside.dropFirst("papers/.".count).dropLast(".icloud".count))) != nil, "still evicted, aside")
            try await b.engine.pass()
            #expect(b.read("papers/Notes.md") == Data("b's bytes".utf8))
            let copies = SyncBatchTests.files(in: b.folder).filter { $0.hasPrefix("papers/Notes (conflicted copy a ") }
            #expect(copies.map { b.read($0) } == [Data("the notes".utf8)], "\(SyncBatchTests.files(in: b.folder))")
            #expect(SyncBatchTests.files(in: b.folder).count == 2 && b.read("docs/Notes.md") == nil)
        }
    }

    /// A file deleted here, then another evicted, whose stub took the deleted file's inode, then
    /// the evicted file's folder moved, no pass between (sync simulator seed 10625): the stub
    /// is the evicted file's, moved with its folder, and the deleted file is what goes. Paired
    /// with the deleted file by the inode, the evicted file's record was deleted instead, and
    /// with it the only copy of its content.
    @Test func aStubThatTookADeletedFilesInodeStaysTheEvictedFiles() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/old/c.bin", Data("deleted here".utf8))
            try a.write("media/c.bin", Data("evicted, only on the server".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let deleted = try #require(try a.openJournal().entry(path: "docs/old/c.bin"))
            let evicted = try #require(try a.openJournal().entry(path: "media/c.bin"))
            try FileManager.default.removeItem(atPath: Self.path(a, "docs/old/c.bin"))
            #expect(try await a.engine.evict(Self.path(a, "media/c.bin")) == [Self.path(a, "media/c.bin")])
            // (ext4 hands the freed inode to the stub at once, unless a test beside this one took it)
            guard FileStamp.of(Self.path(a, "media/.c.bin.icloud"))?.inode == deleted.stat.inode else { return }
            try FileManager.default.moveItem(atPath: Self.path(a, "media"), toPath: Self.path(a, "docs/old/media"))
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(try a.openJournal().entry(path: "docs/old/media/c.bin")?.id == evicted.id, "the evicted file moved with its folder")
            #expect(try a.openJournal().entry(id: deleted.id) == nil)
            #expect(Self.stub(a, "docs/old/media/c.bin") != nil, "still evicted")
            try await b.engine.pass()
            #expect(b.read("docs/old/media/c.bin") == Data("evicted, only on the server".utf8))
            #expect(b.read("docs/old/c.bin") == nil && b.read("media/c.bin") == nil)
        }
    }

    /// An evicted file's folder deleted here while a new file with the evicted content is
    /// written elsewhere, no pass between: the new file pairs with the evicted entry by its
    /// content, and the stub cannot be written again where the folder was (sync simulator seed
    /// 10956, by a reused inode: every pass failed for good). The entry goes with its folder,
    /// the new file is a new item.
    @Test func anEvictedFileWhoseFolderIsGoneGoesWithIt() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/C.bin", Data("the content".utf8))
            try a.write("n.md", Data("n".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(try await a.engine.evict(Self.path(a, "docs/C.bin")) == [Self.path(a, "docs/C.bin")])
            try FileManager.default.removeItem(atPath: Self.path(a, "docs"))
            try a.write("media/b.txt", Data("the content".utf8))
            try await a.engine.pass()
            try await a.engine.pass()
            #expect(a.read("media/b.txt") == Data("the content".utf8))
            try await b.engine.pass()
            #expect(b.read("media/b.txt") == Data("the content".utf8))
            #expect(b.read("docs/C.bin") == nil)
            #expect(SyncBatchTests.files(in: a.folder) == SyncBatchTests.files(in: b.folder))
        }
    }
}
