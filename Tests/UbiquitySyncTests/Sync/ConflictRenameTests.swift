// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityIndex
@testable import UbiquitySync

/// The in-conflict state follows its item through renames (issue 6): after an item with an
/// unresolved conflict version is renamed here, or moved by a remote rename, its new path is
/// reported in conflict (the index's "has unresolved conflicts"), the old one is not, its
/// versions are found (and resolved) at the new path, and the shared record is not withdrawn.
/// Engine-level, two devices against a real `RecordsServer` (``SyncBatchTests/Harness``);
/// passes run by hand, nothing is timed.
@Suite(.serialized) struct ConflictRenameTests {
    typealias Harness = SyncBatchTests.Harness

    static func unresolved(_ device: SyncBatchTests.Device, _ relative: String) -> [FileVersion] {
        FileVersion.unresolvedConflictVersionsOfItem(at: device.folder.appendingPathComponent(relative)) ?? []
    }

    @Test func theConflictStateFollowsALocalAndARemoteRename() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            let b = try await harness.device("b")

            try a.write("doc.txt", Data("base".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Data("base".utf8))

            // both edit: B takes A's version and keeps its own as a conflict version (shared)
            try a.write("doc.txt", Data("from A".utf8))
            try await a.engine.pass()
            try b.write("doc.txt", Data("from B".utf8))
            try await b.engine.pass()
            #expect(b.read("doc.txt") == Data("from A".utf8))
            #expect(Self.unresolved(b, "doc.txt").count == 1)
            #expect(try b.state("doc.txt") == .inConflict)
            try await a.engine.pass()
            #expect(Self.unresolved(a, "doc.txt").count == 1, "A imported B's conflict version")

            // renamed here (a plain rename, found by the scan): the flag and the versions follow
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("doc.txt"), to: b.folder.appendingPathComponent("renamed.txt"))
            try await b.engine.pass()
            #expect(try b.state("renamed.txt") == .inConflict)
            #expect(await b.engine.isConflicted("renamed.txt"))
            #expect(await !b.engine.isConflicted("doc.txt"))
            #expect(Self.unresolved(b, "renamed.txt").count == 1)
            #expect(try await b.engine.journalConflicts().count == 1, "the shared version is not withdrawn by the rename")

            // A gets the rename (a remote rename moves its copy): its flag follows too
            try await a.engine.pass()
            #expect(a.read("renamed.txt") == Data("from A".utf8))
            #expect(try a.state("renamed.txt") == .inConflict)
            #expect(await a.engine.isConflicted("renamed.txt"))
            #expect(Self.unresolved(a, "renamed.txt").count == 1)

            // moved into a folder on A; B applies the remote move
            try FileManager.default.createDirectory(at: a.folder.appendingPathComponent("moved"), withIntermediateDirectories: true)
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("renamed.txt"), to: a.folder.appendingPathComponent("moved/again.txt"))
            try await a.engine.pass()
            #expect(try a.state("moved/again.txt") == .inConflict)
            try await b.engine.pass()
            #expect(b.read("moved/again.txt") == Data("from A".utf8))
            #expect(try b.state("moved/again.txt") == .inConflict)
            #expect(await !b.engine.isConflicted("renamed.txt"))
            #expect(try await b.engine.journalConflicts().count == 1)

            // resolved at the new path on B: settled on B and on A
            let versions = Self.unresolved(b, "moved/again.txt")
            #expect(versions.count == 1)
            for version in versions { try version.markResolved() }
            try await b.engine.pass()
            #expect(try b.state("moved/again.txt") == .uploaded)
            #expect(try await b.engine.journalConflicts().isEmpty)
            try await a.engine.pass()
            #expect(Self.unresolved(a, "moved/again.txt").isEmpty)
            #expect(try a.state("moved/again.txt") == .uploaded)
        }
    }

    /// An editor that saves by renaming a new file over the old one drops the identity
    /// attribute; the pass after the save writes it again, so a plain rename made before the
    /// next pass (no watcher event pairs it) still takes the item's versions along.
    @Test func versionsFollowARenameAfterAnEditorSave() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            let b = try await harness.device("b")
            try a.write("doc.txt", Data("base".utf8))
            try await a.engine.pass()
            try await b.engine.pass()
            try a.write("doc.txt", Data("from A".utf8))
            try await a.engine.pass()
            try b.write("doc.txt", Data("from B".utf8))
            try await b.engine.pass()
            #expect(Self.unresolved(b, "doc.txt").count == 1)

            // saved by rename: a new file without the attribute
            try b.write(".doc.txt.swp", Data("saved".utf8))
            #expect(rename(b.folder.appendingPathComponent(".doc.txt.swp").path, b.folder.appendingPathComponent("doc.txt").path) == 0)
            #expect(Self.unresolved(b, "doc.txt").count == 1, "found through the path index")
            try await b.engine.pass()

            // renamed twice without a pass between: the attribute carries the versions
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("doc.txt"), to: b.folder.appendingPathComponent("moved.txt"))
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("moved.txt"), to: b.folder.appendingPathComponent("again.txt"))
            #expect(Self.unresolved(b, "again.txt").count == 1)
            try await b.engine.pass()
            #expect(Self.unresolved(b, "again.txt").count == 1)
            #expect(try b.state("again.txt") == .inConflict)
        }
    }
}

extension SyncEngine {
    /// The journal's shared conflict versions (tests).
    func journalConflicts() throws -> [JournalConflict] { try journal.conflicts() }
}
