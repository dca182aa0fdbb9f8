// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// A device's own upload whose answer was lost (a crash, a dropped connection) comes back in a
/// later fetch after another device changed it: the record is this device's own, and what the
/// other device did to it since is applied here like any remote change. Two devices on one
/// real server (in process), each pass run by hand.
@Suite(.serialized) struct OwnLostUploadTests {
    typealias Harness = SyncBatchTests.Harness
    typealias Device = SyncBatchTests.Device

    /// A and B, with B's `docs` synced and its new folder `docs/old` sent with the answer lost.
    static func newFolderWhoseAnswerIsLostOnB(_ harness: Harness) async throws -> (Device, Device) {
        let a = try await harness.device("A")
        let b = try await harness.device("B")
        try b.write("docs/a.txt", Data("a".utf8))
        try await b.engine.pass()
        try FileManager.default.createDirectory(at: b.folder.appendingPathComponent("docs/old"), withIntermediateDirectories: true)
        b.transport.losing.withLock { $0["records/modify"] = 1 }
        try? await b.engine.pass()
        return (a, b)
    }

    /// A new folder whose upload's answer was lost, renamed on another device before this one
    /// heard back: the rename is applied here. Before, the record was taken as synced at the
    /// old name, and the device kept `docs/old` while the server and every other device had
    /// `docs/Old` (sync simulator seed 4164).
    @Test func anOwnNewFolderRenamedElsewhereBeforeItsAnswerCameIsRenamedHere() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.newFolderWhoseAnswerIsLostOnB(harness)
            try await a.engine.pass()
            #expect(FileManager.default.fileExists(atPath: a.folder.appendingPathComponent("docs/old").path))
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("docs/old"), to: a.folder.appendingPathComponent("docs/Old"))
            try await a.engine.pass()
            try await b.engine.pass()
            try await b.engine.pass()
            let paths = try await harness.server.items(token: harness.server.token()).map(\.path)
            #expect(paths.sorted() == ["docs", "docs/Old", "docs/a.txt"])
            let here = try FileManager.default.contentsOfDirectory(atPath: b.folder.appendingPathComponent("docs").path).sorted()
            #expect(here == ["Old", "a.txt"])
        }
    }

    /// The same folder moved here before the next pass, and a folder made at its old name
    /// elsewhere: the record is journaled at the server's name, where the local pass finds the
    /// moved folder by its inode and sends the move. Before, it was journaled at the old name,
    /// whose row the new folder's record then took; the moved folder was sent as a new item and
    /// the renamed record, forgotten here, never came (sync simulator seed 19).
    @Test func anOwnNewFolderMovedHereAndRenamedElsewhereKeepsOneRecord() async throws {
        try await Harness.with { harness in
            let (a, b) = try await Self.newFolderWhoseAnswerIsLostOnB(harness)
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("docs/old"), to: b.folder.appendingPathComponent("docs/moved"))
            try await a.engine.pass()
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("docs/old"), to: a.folder.appendingPathComponent("docs/Old"))
            try FileManager.default.createDirectory(at: a.folder.appendingPathComponent("docs/old"), withIntermediateDirectories: true)
            try await a.engine.pass()
            try await a.engine.pass()  // the new folder at the name the rename left goes second
            try await b.engine.pass()
            try await b.engine.pass()
            try await a.engine.pass()
            try await b.engine.pass()
            let paths = try await harness.server.items(token: harness.server.token()).map(\.path)
            #expect(paths.sorted() == ["docs", "docs/a.txt", "docs/moved", "docs/old"])
            for device in [a, b] {
                let here = try FileManager.default.contentsOfDirectory(atPath: device.folder.appendingPathComponent("docs").path).sorted()
                #expect(here == ["a.txt", "moved", "old"], "\(device.folder.lastPathComponent)")
            }
        }
    }

    /// A new file whose upload's answer was lost, marked skip-backup here before the record
    /// came back: its record, this device's own upload, is deleted on the server, as for a
    /// delete. Before, the unconfirmed entry was let go of at once; the record stayed on the
    /// server, held back here, and every other device had the file (sync simulator seed 3877).
    @Test func aNewFileMarkedSkipBackupBeforeItsAnswerCameLeavesTheServer() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try a.write("kept.txt", Data("kept".utf8))
            try await a.engine.pass()
            try a.write("notes.md", Data("mine only".utf8))
            a.transport.losing.withLock { $0["records/modify"] = 1 }
            try? await a.engine.pass()
            try BackupExclusion.setExcluded(true, a.folder.appendingPathComponent("notes.md").path)
            try await a.engine.pass(pullingRemote: false)
            try await a.engine.pass()
            try await b.engine.pass()
            let paths = try await harness.server.items(token: harness.server.token()).map(\.path)
            #expect(paths == ["kept.txt"])
            #expect(a.read("notes.md") == Data("mine only".utf8))
            #expect(b.read("notes.md") == nil)
        }
    }

    /// A new file whose upload's answer was lost, then marked skip-backup here, while another
    /// device edited and renamed its record: the record was held back behind the entry of the
    /// lost upload, which the local pass then let go of, and was never applied here; no other
    /// pass came for it (sync simulator seed 11489). It is applied in that same pass.
    @Test func anOwnNewFileMarkedSkipBackupBeforeItsAnswerCameGetsItsRecordRenamedElsewhere() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try b.write("docs/a.txt", Data("a".utf8))
            try await b.engine.pass()
            try b.write("docs/b.txt", Data("b's first bytes".utf8))
            b.transport.losing.withLock { $0["records/modify"] = 1 }
            try? await b.engine.pass()
            try BackupExclusion.setExcluded(true, b.folder.appendingPathComponent("docs/b.txt").path)
            try await a.engine.pass()
            #expect(a.read("docs/b.txt") == Data("b's first bytes".utf8))
            try a.write("docs/b.txt", Data("A's edit".utf8))
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("docs/b.txt"), to: a.folder.appendingPathComponent("docs/B.txt"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("docs/B.txt") == Data("A's edit".utf8), "\(SyncBatchTests.files(in: b.folder))")
            #expect(b.read("docs/b.txt") == Data("b's first bytes".utf8), "kept here, marked skip-backup")
            #expect(try await b.engine.heldBack().isEmpty)
            let paths = try await harness.server.items(token: harness.server.token()).map(\.path)
            #expect(paths.sorted() == ["docs", "docs/B.txt", "docs/a.txt"])
        }
    }
}
