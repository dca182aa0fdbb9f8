// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// Records inside a folder this device keeps back (marked skip-backup) are held back: nothing is
/// written there, and the local pass, which syncs nothing under such a folder, never takes
/// them for items marked here and deletes their records, on the server and on the device that
/// made them (sync simulator seed 838). Two devices on one real server (in process), each pass
/// run by hand.
@Suite(.serialized) struct KeptBackFolderTests {
    typealias Harness = SyncBatchTests.Harness
    typealias Device = SyncBatchTests.Device

    static func path(_ device: Device, _ relative: String) -> String { device.folder.appendingPathComponent(relative).path }

    /// The paths of the server's items.
    static func serverPaths(_ harness: Harness) async throws -> Set<String> {
        Set(try await harness.server.items(token: try await harness.server.token()).map(\.path))
    }

    /// `docs/a.txt` synced on A and B, then A's new `docs/new.txt` sent, and B marking `docs`
    /// skip-backup before it passes again.
    static func markedOnBWhileAFileArrives(_ a: Device, _ b: Device) async throws {
        try a.write("docs/a.txt", Data("a".utf8))
        try await a.engine.pass()
        try await b.engine.pass()
        try a.write("docs/new.txt", Data("new on A".utf8))
        try await a.engine.pass()
        try BackupExclusion.setExcluded(true, path(b, "docs"))
    }

    /// A and B with `n.md` synced, and A keeping `docs` back (`docs/keep.txt` in it).
    static func keptBackOnA(_ harness: Harness) async throws -> (Device, Device) {
        let a = try await harness.device("a"), b = try await harness.device("b")
        try a.write("n.md", Data("only bytes".utf8))
        try await a.engine.pass()
        try await b.engine.pass()
        try a.write("docs/keep.txt", Data("kept here".utf8))
        try BackupExclusion.setExcluded(true, path(a, "docs"))
        try await a.engine.pass()
        return (a, b)
    }

    /// B passes, then A twice (its local part after the pull), then B again.
    static func settle(_ a: Device, _ b: Device) async throws {
        try await b.engine.pass()
        try await a.engine.pass()
        try await a.engine.pass()
        try await b.engine.pass()
    }

    /// A keeps `docs` back again: its next passes include it, and B's pass brings what that sent.
    static func includeOnA(_ a: Device, _ b: Device) async throws {
        try BackupExclusion.setExcluded(false, path(a, "docs"))
        try await a.engine.pass()
        try await a.engine.pass()
        try await b.engine.pass()
    }

    @Test func aFileMovedElsewhereIntoAFolderKeptBackHereStaysEverywhere() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.keptBackOnA(harness)
            try FileManager.default.createDirectory(atPath: Self.path(b, "docs"), withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: Self.path(b, "n.md"), toPath: Self.path(b, "docs/n.md"))
            try await Self.settle(a, b)
            #expect(b.read("docs/n.md") == Data("only bytes".utf8), "the other device keeps it")
            #expect(try await Self.serverPaths(harness).contains("docs/n.md"), "its record stays")
            #expect(a.read("n.md") == nil)
            #expect(a.read("docs/n.md") == Data("only bytes".utf8), "its bytes went into the kept-back folder")
            #expect(try a.openJournal().entry(path: "docs/n.md") == nil, "not synced here")
            // included again: the same content is adopted, one record for it, nothing lost
            try await Self.includeOnA(a, b)
            #expect(a.read("docs/n.md") == Data("only bytes".utf8))
            #expect(b.read("docs/keep.txt") == Data("kept here".utf8))
            #expect(b.read("docs/n.md") == Data("only bytes".utf8))
            let records = try await harness.server.items(token: try await harness.server.token()).filter { $0.path == "docs/n.md" }
            #expect(records.count == 1)
        }
    }

    @Test func aNewFileMadeElsewhereInAFolderKeptBackHereWaits() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.keptBackOnA(harness)
            try b.write("docs/new.txt", Data("made on b".utf8))
            try b.write("docs/deeper/more.txt", Data("more on b".utf8))
            try await Self.settle(a, b)
            #expect(a.read("docs/new.txt") == nil && a.read("docs/deeper/more.txt") == nil, "nothing written into a kept-back folder")
            #expect(b.read("docs/new.txt") == Data("made on b".utf8) && b.read("docs/deeper/more.txt") == Data("more on b".utf8))
            #expect(try await Self.serverPaths(harness).isSuperset(of: ["docs", "docs/new.txt", "docs/deeper", "docs/deeper/more.txt"]))
            // included again: what waited comes
            try await Self.includeOnA(a, b)
            #expect(a.read("docs/new.txt") == Data("made on b".utf8))
            #expect(a.read("docs/deeper/more.txt") == Data("more on b".utf8))
            #expect(b.read("docs/keep.txt") == Data("kept here".utf8))
        }
    }

    /// An evicted file renamed elsewhere into a folder this device keeps back: the rename landed
    /// its stub there, and the local part of the pass took what is under a kept-back folder for
    /// gone, so its delete went out with only the stub left here and the other device's copy
    /// deleted (sync simulator seed 923). Its stub goes now (the content is on the server, the
    /// record held back), and it comes when the folder is included again.
    @Test func anEvictedFileRenamedElsewhereIntoAFolderKeptBackHereStaysOnTheServer() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.keptBackOnA(harness)
            #expect(try await a.engine.evict(Self.path(a, "n.md")) == [Self.path(a, "n.md")])
            try FileManager.default.createDirectory(atPath: Self.path(b, "docs"), withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: Self.path(b, "n.md"), toPath: Self.path(b, "docs/n.md"))
            try await Self.settle(a, b)
            #expect(b.read("docs/n.md") == Data("only bytes".utf8), "the other device keeps it")
            #expect(try await Self.serverPaths(harness).contains("docs/n.md"))
            #expect(Placeholder.read(stubAt: Placeholder.stubPath(for: Self.path(a, "docs/n.md"))) == nil)
            #expect(Placeholder.read(stubAt: Placeholder.stubPath(for: Self.path(a, "n.md"))) == nil)
            try await Self.includeOnA(a, b)
            #expect(a.read("docs/n.md") == Data("only bytes".utf8))
        }
    }

    /// A folder moved elsewhere into one kept back here, while this device made a file in it
    /// that the moving device did not know of: that file's record keeps its old path, so it is
    /// written there again (the folder made again) instead of leaving with the folder (sync
    /// simulator seed 838: it left, evicted, and the device never had it again).
    @Test func aFileTheMovingDeviceDidNotKnowOfStaysAtItsRecordsPath() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("work/one.txt", Data("one".utf8))
            try a.write("media/own.txt", Data("a's own".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            try BackupExclusion.setExcluded(true, Self.path(a, "media"))
            try await a.engine.pass()
            try await b.engine.pass()  // B's media goes (marked skip-backup on A)
            try FileManager.default.createDirectory(atPath: Self.path(b, "media"), withIntermediateDirectories: true)
            try FileManager.default.moveItem(atPath: Self.path(b, "work"), toPath: Self.path(b, "media/work"))
            try a.write("work/two.txt", Data("two, made on a".utf8))
            try await a.engine.pass()  // sent before B's move went out
            try await Self.settle(a, b)
            try await Self.settle(a, b)
            let server = try await Self.serverPaths(harness)
            #expect(server.contains("media/work/one.txt"), "\(server.sorted())")
            #expect(b.read("media/work/one.txt") == Data("one".utf8))
            #expect(a.read("media/work/one.txt") == Data("one".utf8), "its bytes went into the kept-back folder")
            #expect(a.read("media/own.txt") == Data("a's own".utf8))
            // two.txt: wherever its record is, both devices have it there
            let two = try #require(try await harness.server.items(token: try await harness.server.token()).first { $0.path.hasSuffix("two.txt") })
            #expect(b.read(two.path) == Data("two, made on a".utf8), "\(two.path)")
            if !two.path.hasPrefix("media/") { #expect(a.read(two.path) == Data("two, made on a".utf8), "\(two.path)") }
        }
    }
}

extension KeptBackFolderTests {
    /// A synced file marked skip-backup here while another device renames it and writes a big
    /// content (an asset): this device's delete of its record is refused (changed elsewhere),
    /// and the record the refusal carries has no download URL. Its download failed, with the
    /// item already forgotten here and the change token past the record, and this device never
    /// had the other's file (sync simulator seed 1715). The record is read again with its URL,
    /// and held back until journaled.
    @Test func aFileMarkedHereWhileRenamedAndRewrittenElsewhereArrivesUnderItsNewName() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("notes.md", Data("small".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            try BackupExclusion.setExcluded(true, Self.path(b, "notes.md"))
            try FileManager.default.moveItem(atPath: Self.path(a, "notes.md"), toPath: Self.path(a, "big.txt"))
            let big = Data((0..<(SyncRecord.inlineLimit + 4096)).map { UInt8(truncatingIfNeeded: $0 &* 31) })
            try a.write("big.txt", big)
            try await a.engine.pass()
            for _ in 0..<2 { try? await b.engine.pass() }
            #expect(b.read("big.txt") == big, "A's file reached B")
            #expect(b.read("notes.md") == Data("small".utf8), "B's own stays")
            #expect(try BackupExclusion.isExcluded(Self.path(b, "notes.md")), "kept back")
            #expect(try await Self.serverPaths(harness) == ["big.txt"])
            #expect(try await b.engine.heldBack().isEmpty)
        }
    }
}

extension KeptBackFolderTests {
    /// A synced folder marked skip-backup here in the pass that holds back a file another device
    /// just put in it: the folder's record was deleted, and the server had the other device's
    /// file under no folder (sync simulator seed 1841, left so when that device then signed in
    /// to another account). The folder's record waits with the file's, here, and stays there.
    @Test func aFolderMarkedHereWhileAFileArrivesInItKeepsItsRecord() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try await Self.markedOnBWhileAFileArrives(a, b)
            try await b.engine.pass()
            let server = try await Self.serverPaths(harness)
            #expect(server.contains("docs"), "\(server.sorted())")
            #expect(server.contains("docs/new.txt"))
            try await Self.includedAgainOnB(a, b, file: "docs/new.txt", folder: "docs")
        }
    }

    /// A and B with `docs/old/a.txt` synced, and a new `docs/old/new.txt` ("new on A") sent by A
    /// only.
    static func newFileDeeperOnA(_ harness: Harness) async throws -> (Device, Device) {
        let a = try await harness.device("a"), b = try await harness.device("b")
        try a.write("docs/old/a.txt", Data("a".utf8))
        try await a.engine.pass()
        try await b.engine.pass()
        try a.write("docs/old/new.txt", Data("new on A".utf8))
        try await a.engine.pass()
        return (a, b)
    }

    /// A has `file` ("new on A"); B includes `docs` again: both converge, with one record for
    /// `folder` and nothing held back on B.
    static func includedAgainOnB(_ a: Device, _ b: Device, file: String, folder: String) async throws {
        try await a.engine.pass()
        #expect(a.read(file) == Data("new on A".utf8))
        try BackupExclusion.setExcluded(false, path(b, "docs"))
        for device in [b, a, b, a] { try await device.engine.pass() }
        #expect(b.read(file) == Data("new on A".utf8))
        #expect(SyncBatchTests.files(in: a.folder) == SyncBatchTests.files(in: b.folder))
        #expect(try a.openJournal().entry(path: folder)?.id == b.openJournal().entry(path: folder)?.id, "one record for \(folder)")
        #expect(try await b.engine.heldBack().isEmpty)
    }
}

extension KeptBackFolderTests {
    /// The same with the file arriving in a folder inside the one marked here: that folder's
    /// record waits with the file's too. Before, it was deleted on the server as gone from this
    /// device's scan, and the file was left under no folder (sync simulator seed 6206).
    @Test func aFolderMarkedHereWhileAFileArrivesDeeperInItKeepsTheFoldersOnTheWay() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.newFileDeeperOnA(harness)
            try BackupExclusion.setExcluded(true, Self.path(b, "docs"))
            try await b.engine.pass()
            let server = try await Self.serverPaths(harness)
            #expect(server.isSuperset(of: ["docs", "docs/old", "docs/old/new.txt"]), "\(server.sorted())")
            try await Self.includedAgainOnB(a, b, file: "docs/old/new.txt", folder: "docs/old")
        }
    }

    /// A synced folder marked skip-backup here while another device renames it and makes a new
    /// folder with a file at its old name: the new folder's records wait here for the name, and
    /// so did the renamed folder's, for the name it had here. It never came back, and the folder
    /// its file moved into here was sent as new, dropped as a duplicate, and sent again (sync
    /// simulator seed 1813). It waits for the server's path, and comes under its new name.
    @Test func aFolderMarkedHereWhileRenamedElsewhereComesBackUnderItsNewName() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/a.txt", Data("a".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let renamed = try #require(try a.openJournal().entry(path: "docs")?.id)
            try FileManager.default.moveItem(atPath: Self.path(a, "docs"), toPath: Self.path(a, "papers"))
            try a.write("docs/new.txt", Data("new on A".utf8))
            try await a.engine.pass()
            try await a.engine.pass()  // the new folder goes once the rename has left its name
            try BackupExclusion.setExcluded(true, Self.path(b, "docs"))
            for device in [b, a, b, a, b, a, b] { try await device.engine.pass() }
            let items = try await harness.server.items(token: try await harness.server.token())
            #expect(items.filter { $0.path == "papers" }.count == 1, "\(items.map(\.path).sorted())")
            #expect(try a.openJournal().entry(path: "papers")?.id == b.openJournal().entry(path: "papers")?.id, "one record for papers")
            #expect(b.read("papers/a.txt") == Data("a".utf8))
            #expect(try await b.engine.heldBack()[renamed] == nil, "the renamed folder's record is not waiting for docs")
            #expect(try BackupExclusion.isExcluded(Self.path(b, "docs")), "kept back")
        }
    }
}

extension KeptBackFolderTests {
    /// A synced folder marked skip-backup here in a pass whose fetch failed, while another
    /// device had put a file in it: nothing was held back yet, so the folder's record was
    /// deleted, and the server had the file under no folder, for good once that device stopped
    /// syncing the account (sync simulator seed 2456). The delete waits for a pass that fetches.
    @Test func aFolderMarkedHereInAPassThatDidNotFetchKeepsItsRecord() async throws {
        try await Harness.with { harness in
            let offline = Mutex(false)
            let a = try await harness.device("a")
            let b = try await harness.device("b", rewrite: SyncBatchTests.refusing { request in
                offline.withLock { $0 } && request.path.hasSuffix("changes/zone")
            })
            try await Self.markedOnBWhileAFileArrives(a, b)
            offline.withLock { $0 = true }
            try? await b.engine.pass()
            var server = try await Self.serverPaths(harness)
            #expect(server.contains("docs"), "\(server.sorted())")
            #expect(server.contains("docs/new.txt"))
            offline.withLock { $0 = false }
            try await b.engine.pass()
            server = try await Self.serverPaths(harness)
            #expect(server.contains("docs"), "\(server.sorted())")
            #expect(try await b.engine.heldBack().values.contains("docs/new.txt"))
        }
    }
}

extension KeptBackFolderTests {
    /// The same for a synced folder inside the one marked here, in a pass whose fetch failed,
    /// while another device had put a file in it: the inner folder is outside the scan, and its
    /// record was deleted, leaving the file under no folder on the server (sync simulator seed
    /// 11251). It waits with the marked folder for a pass that fetches.
    @Test func aFolderInsideOneMarkedHereInAPassThatDidNotFetchKeepsItsRecord() async throws {
        try await Harness.with { harness in
            let offline = Mutex(false)
            let a = try await harness.device("a")
            let b = try await harness.device("b", rewrite: SyncBatchTests.refusing { request in
                offline.withLock { $0 } && request.path.hasSuffix("changes/zone")
            })
            try a.write("docs/old/a.txt", Data("a".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            try a.write("docs/old/new.txt", Data("new on A".utf8))
            try await a.engine.pass()
            try BackupExclusion.setExcluded(true, Self.path(b, "docs"))
            offline.withLock { $0 = true }
            try? await b.engine.pass()
            var server = try await Self.serverPaths(harness)
            #expect(server.isSuperset(of: ["docs", "docs/old", "docs/old/new.txt"]), "\(server.sorted())")
            offline.withLock { $0 = false }
            try await b.engine.pass()
            try await b.engine.pass()
            server = try await Self.serverPaths(harness)
            #expect(server.isSuperset(of: ["docs", "docs/old", "docs/old/new.txt"]), "\(server.sorted())")
            #expect(server.allSatisfy { !$0.contains("/") || server.contains(($0 as NSString).deletingLastPathComponent) }, "every item under its folder: \(server.sorted())")
            #expect(try await b.engine.heldBack().values.contains("docs/old/new.txt"))
            try await Self.includedAgainOnB(a, b, file: "docs/old/new.txt", folder: "docs/old")
        }
    }

    /// The same with the folder inside moved out of the one marked here before it was marked
    /// (in one pass): the moved folder is a new folder where it went, and the folder's record
    /// stays where the file waits in it. Before, the record moved away with the folder, and the
    /// file was left under no folder on the server (sync simulator seed 6618).
    @Test func aFolderMovedOutOfOneMarkedHereWhileAFileArrivesInItStaysForTheFile() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.newFileDeeperOnA(harness)
            try FileManager.default.createDirectory(atPath: Self.path(b, "media"), withIntermediateDirectories: false)
            try FileManager.default.moveItem(atPath: Self.path(b, "docs/old"), toPath: Self.path(b, "media/old"))
            try BackupExclusion.setExcluded(true, Self.path(b, "docs"))
            try await b.engine.pass()
            try await b.engine.pass()
            let server = try await Self.serverPaths(harness)
            #expect(server.isSuperset(of: ["docs", "docs/old", "docs/old/new.txt", "media/old", "media/old/a.txt"]), "\(server.sorted())")
            #expect(server.allSatisfy { !$0.contains("/") || server.contains(($0 as NSString).deletingLastPathComponent) }, "every item under its folder: \(server.sorted())")
            try await a.engine.pass()
            #expect(a.read("media/old/a.txt") == Data("a".utf8))
            try await Self.includedAgainOnB(a, b, file: "docs/old/new.txt", folder: "docs/old")
        }
    }
}
