// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// A power loss keeps only what the disk made durable (``SimDisk``, the sync simulator's model
/// of it), and the engine makes durable whatever it journals as done: a file downloaded into
/// new folders, a remote rename, a remote delete. Undone by a power loss, each would be judged
/// a local change by the next pass (files gone: deleted everywhere; a rename undone: sent back;
/// a delete undone: the file sent again as new).
@Suite(.serialized) struct PowerLossTests {
    typealias Harness = SyncBatchTests.Harness
    typealias Device = SyncBatchTests.Device

    /// The model itself, on a plain folder: what was synced stays, what was not goes.
    @Test func aPowerLossKeepsOnlyWhatWasMadeDurable() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-power-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/old", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        try Data("kept".utf8).write(to: URL(fileURLWithPath: folder + "/old/kept.txt"))
        let disk = SimDisk(folder: try CanonicalPath.canonicalize(folder, resolveLast: true), seed: 1, ledger: SimLedger(seed: 1))
        defer { disk.stop() }
        func inode(_ path: String) -> UInt64? { FileStamp.of(folder + "/" + path).map { UInt64($0.inode) } }
        let keptInode = inode("old/kept.txt")

        // saved safely (bytes, then the folder): whole
        try SafeSave.write(Data("safe".utf8), to: folder + "/safe.txt")
        // its name synced (with its folder's), its bytes not: there, empty; a folder made there,
        // itself never synced: there, empty
        try SyncFiles.writeNew(folder + "/name-only.txt", Data("name".utf8))
        try FileManager.default.createDirectory(atPath: folder + "/made", withIntermediateDirectories: false)
        try Data("inside".utf8).write(to: URL(fileURLWithPath: folder + "/made/inside.txt"))
        try Durability.syncFolder(folder)
        // never synced: gone
        try Data("new".utf8).write(to: URL(fileURLWithPath: folder + "/unsynced.txt"))
        // bytes synced, name not: gone
        try SyncFiles.writeNew(folder + "/bytes-only.txt", Data("bytes".utf8))
        try Durability.syncFile(at: folder + "/bytes-only.txt")
        // renamed, neither folder synced since: back at its old name, the same file
        #expect(rename(folder + "/old/kept.txt", folder + "/moved.txt") == 0)
        // a user's change counts as durable at once
        try Data("user".utf8).write(to: URL(fileURLWithPath: folder + "/user.txt"))
        disk.userChanged(["user.txt"])

        #expect(try disk.powerLoss() > 0)
        let fm = FileManager.default
        #expect(fm.contents(atPath: folder + "/safe.txt") == Data("safe".utf8))
        #expect(fm.contents(atPath: folder + "/name-only.txt") == Data())
        #expect(try fm.contentsOfDirectory(atPath: folder + "/made").isEmpty)
        #expect(!fm.fileExists(atPath: folder + "/unsynced.txt"))
        #expect(!fm.fileExists(atPath: folder + "/bytes-only.txt"))
        #expect(!fm.fileExists(atPath: folder + "/moved.txt"))
        #expect(fm.contents(atPath: folder + "/old/kept.txt") == Data("kept".utf8) && inode("old/kept.txt") == keptInode)
        #expect(fm.contents(atPath: folder + "/user.txt") == Data("user".utf8))
        // and what is left is all durable: a second power loss changes nothing
        #expect(try disk.powerLoss() == 0)
    }

    /// A folder has one durable name in the model: one made by a user where the inode of a
    /// removed folder is taken again (here a rename stands in for it: the same inode at a new
    /// name, the old name durable) comes back at its new name with what the user put in it, not
    /// at the old name (sync simulator seed 532, where the old name was the engine's folder of
    /// temporaries, cleared at start with the user's files in it).
    @Test func aFolderMadeByAUserHasOneDurableName() throws {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-power-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: folder + "/.temporaries/0", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let disk = SimDisk(folder: try CanonicalPath.canonicalize(folder, resolveLast: true), seed: 1, ledger: SimLedger(seed: 1))
        defer { disk.stop() }
        try Durability.syncFolder(folder)
        try FileManager.default.removeItem(atPath: folder + "/.temporaries/0")
        #expect(rename(folder + "/.temporaries", folder + "/docs") == 0)
        try FileManager.default.createDirectory(atPath: folder + "/docs/old", withIntermediateDirectories: false)
        try Data("user".utf8).write(to: URL(fileURLWithPath: folder + "/docs/old/a.txt"))
        disk.userChanged(["docs/old/a.txt"])

        _ = try disk.powerLoss()
        let fm = FileManager.default
        #expect(fm.contents(atPath: folder + "/docs/old/a.txt") == Data("user".utf8))
        #expect(try fm.contentsOfDirectory(atPath: folder).sorted() == ["docs"])
        #expect(try fm.contentsOfDirectory(atPath: folder + "/docs") == ["old"])
    }

    /// `b` stopped, its folder as the power loss leaves it, and started again.
    static func powerLoss(_ harness: Harness, _ device: Device, disk: SimDisk, name: String) async throws -> Device {
        await device.engine.stopAndRelease()
        try disk.powerLoss()
        return try await harness.device(name)
    }

    static func disk(of device: Device) -> SimDisk {
        SimDisk(folder: device.engine.folder, seed: 2, ledger: SimLedger(seed: 2))
    }

    @Test func filesDownloadedIntoNewFoldersSurviveAPowerLoss() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            let paths = ["new/one.txt", "new/deeper/two.txt", "new/deeper/still/three.txt"]
            for path in paths { try a.write(path, Data("content of \(path)".utf8)) }
            try await a.engine.pass()
            try await b.engine.pass()
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            for path in paths { #expect(restarted.read(path) == Data("content of \(path)".utf8), "\(path) survived the power loss") }
            try await restarted.engine.pass()
            try await a.engine.pass()
            for path in paths { #expect(a.read(path) == Data("content of \(path)".utf8), "\(path) was not deleted everywhere") }
        }
    }

    /// Found by the sync simulator (seed 17 once it had power losses): a download renamed into
    /// place, its folder's fsync failing, was adopted by the next pass (the same content as the
    /// server's), came back as the older version after a power loss, and that was sent over it.
    @Test func aDownloadWhoseFolderSyncFailedIsDurableBeforeItIsAdopted() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("doc.txt", Data("first".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            try a.write("doc.txt", Data("second, from a".utf8))
            try await a.engine.pass()
            // the download lands, then the disk fails the fsync of its folder
            disk.refuse { call in if case .folder = call { true } else { false } }
            await #expect(throws: (any Error).self) { try await b.engine.pass() }
            #expect(b.read("doc.txt") == Data("second, from a".utf8))
            disk.refuse(nil)
            try await b.engine.pass()
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            #expect(restarted.read("doc.txt") == Data("second, from a".utf8), "what was adopted survived the power loss")
            try await restarted.engine.pass()
            try await a.engine.pass()
            #expect(a.read("doc.txt") == Data("second, from a".utf8), "the older version was not sent over it")
        }
    }

    /// Found by the sync simulator (seed 174): a download of an evicted file removed its stub
    /// after the journal write, without syncing the folder; a power loss brought the stub back
    /// beside the downloaded file, for good (no pass looks at a stub beside its file).
    @Test func aDownloadedEvictedFileLeavesNoStubAfterAPowerLoss() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("doc.txt", Data("evicted, then downloaded".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let file = b.folder.appendingPathComponent("doc.txt").path
            #expect(try await b.engine.evict(file) == [file])
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            #expect(try await b.engine.startDownloading(file) == [file])
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            try await restarted.engine.pass()
            #expect(restarted.read("doc.txt") == Data("evicted, then downloaded".utf8))
            #expect(restarted.read(".doc.txt.icloud") == nil, "no stub beside the file")
        }
    }

    /// Found by the sync simulator (seed 879): downloads renamed into a new folder whose fsync
    /// then failed were journaled as synced by the same pass's look at its landings; a power
    /// loss took them back, and the next pass sent them as deleted, everywhere. They are made
    /// durable before they are journaled; when they cannot be, the note stays.
    @Test func aLandingWhoseFolderSyncFailedIsNotJournaledAsSynced() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("new/doc.txt", Data("only on the server".utf8))
            try await a.engine.pass()
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            disk.refuse { call in if case .folder(let path) = call { path.hasSuffix("/new") } else { false } }
            await #expect(throws: (any Error).self) { try await b.engine.pass() }
            disk.refuse(nil)
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            try await restarted.engine.pass()
            try await a.engine.pass()
            #expect(a.read("new/doc.txt") == Data("only on the server".utf8), "not deleted by b")
            #expect(restarted.read("new/doc.txt") == Data("only on the server".utf8), "downloaded again")
        }
    }

    /// Found by the sync simulator (seed 1755): a folder made by the remote part whose parent's
    /// fsync failed stayed, found by the local part as new and sent, journaled as synced with
    /// its name not durable; a power loss took it with the file downloaded into it since, and
    /// the next pass sent both as deleted, the other device's only copy with them. A new
    /// folder's name is durable before it is journaled, or it waits.
    @Test func aFolderWhoseNameIsNotDurableIsNotJournaledAsSynced() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try FileManager.default.createDirectory(at: a.folder.appendingPathComponent("media"), withIntermediateDirectories: true)
            try await a.engine.pass()
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            let root = b.engine.folder
            disk.refuse { call in if case .folder(let path) = call { path == root } else { false } }
            for _ in 0..<2 { _ = try? await b.engine.pass() }
            try a.write("media/a.txt", Data("only copy".utf8))
            try await a.engine.pass()
            for _ in 0..<2 { _ = try? await b.engine.pass() }
            disk.refuse(nil)
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            for _ in 0..<2 { _ = try? await restarted.engine.pass() }
            try await a.engine.pass()
            #expect(a.read("media/a.txt") == Data("only copy".utf8), "not deleted by b")
            #expect(restarted.read("media/a.txt") == Data("only copy".utf8))
        }
    }

    /// Found by the sync simulator (seed 322): an eviction whose stub was renamed into place
    /// before its folder's fsync failed left the stub beside the file, not evicted; renamed
    /// later, the file left its name to the stub, which no pass downloads.
    @Test func anEvictionWhoseFolderSyncFailedLeavesNoStub() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            try a.write("c.bin", Data("content".utf8))
            try await a.engine.pass()
            let disk = Self.disk(of: a)
            defer { disk.stop() }
            disk.refuse { call in if case .folder = call { true } else { false } }
            let file = a.folder.appendingPathComponent("c.bin").path
            await #expect(throws: (any Error).self) { try await a.engine.evict(file) }
            disk.refuse(nil)
            #expect(a.read(".c.bin.icloud") == nil, "no stub beside the file")
            #expect(a.read("c.bin") == Data("content".utf8))
        }
    }

    /// Found by the sync simulator (seed 314): the stub of an evicted file deleted elsewhere was
    /// removed without syncing its folder; back after a power loss, it stood for no journaled
    /// item.
    @Test func theStubOfAFileDeletedElsewhereStaysGoneAfterAPowerLoss() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("a.txt", Data("deleted on a".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let file = b.folder.appendingPathComponent("a.txt").path
            #expect(try await b.engine.evict(file) == [file])
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            try FileManager.default.removeItem(at: a.folder.appendingPathComponent("a.txt"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read(".a.txt.icloud") == nil)
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            #expect(restarted.read(".a.txt.icloud") == nil, "the stub's removal survived the power loss")
        }
    }

    @Test func aRemoteRenameAndARemoteDeleteSurviveAPowerLoss() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try a.write("docs/moved.txt", Data("moved".utf8))
            try a.write("docs/deleted.txt", Data("deleted".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            let disk = Self.disk(of: b)
            defer { disk.stop() }
            #expect(rename(a.folder.appendingPathComponent("docs").path, a.folder.appendingPathComponent("papers").path) == 0)
            try FileManager.default.removeItem(at: a.folder.appendingPathComponent("papers/deleted.txt"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("papers/moved.txt") == Data("moved".utf8) && b.read("papers/deleted.txt") == nil)
            let restarted = try await Self.powerLoss(harness, b, disk: disk, name: "b")
            #expect(restarted.read("papers/moved.txt") == Data("moved".utf8), "the rename survived")
            #expect(restarted.read("papers/deleted.txt") == nil, "the delete survived")
            try await restarted.engine.pass()
            try await a.engine.pass()
            #expect(a.read("papers/moved.txt") == Data("moved".utf8) && a.read("docs/moved.txt") == nil, "the rename was not sent back")
            #expect(a.read("papers/deleted.txt") == nil, "the deleted file was not sent again")
        }
    }
}
