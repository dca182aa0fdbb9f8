// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// A damaged sync journal is moved aside and rebuilt from the folder and the server: nothing is
/// lost, the devices converge, the user is told (the log's error line).
@Suite(.serialized) struct SyncJournalRecoveryTests {
    @Test func aDamagedJournalIsMovedAsideAndAFreshOneMade() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("journal.sqlite").path
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        let (journal, aside) = try SyncJournal.openRecovering(path: path, logger: Logger(label: "test"))
        let kept = try #require(aside)
        #expect(FileManager.default.contents(atPath: kept) == Data(repeating: 0x5A, count: 8192))
        #expect(try journal.entries().isEmpty)
        // a sound journal is opened as it is
        try journal.setValue("v", "k")
        let (again, none) = try SyncJournal.openRecovering(path: path, logger: Logger(label: "test"))
        #expect(none == nil)
        #expect(try again.value("k") == "v")
    }

    @Test func aDeviceWithADamagedJournalConvergesWithoutLoss() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("x.txt", "x1")
        try a.write("y.txt", "y1")
        #expect(SyncRig.eventually("B has x and y") { b.read("x.txt") == "x1" && b.read("y.txt") == "y1" })
        b.stop()
        await AccountSync.waitForLock(b.folder.path + "/.ubiquity-sync.lock")

        // B's journal is destroyed while it is down; meanwhile both sides change things
        let journals = b.device.root.appendingPathComponent("state/ubiquity/sync")
        let journal = try #require(try FileManager.default.contentsOfDirectory(atPath: journals.path).first { $0.hasSuffix(".sqlite") })
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: journals.path + "/" + journal + suffix) }
        try Data("this is not a database, it is garbage".utf8).write(to: journals.appendingPathComponent(journal))
        try a.write("x.txt", "x2 from A")
        try b.write("y.txt", "y2 from B")
        try b.write("z.txt", "z from B")

        try b.start()
        #expect(SyncRig.eventually("B has A's edit") { b.read("x.txt") == "x2 from A" })
        #expect(SyncRig.eventually("A has B's new file") { a.read("z.txt") == "z from B" })
        #expect((try FileManager.default.contentsOfDirectory(atPath: journals.path)).contains { $0.hasPrefix(journal + ".corrupt-") })
        // B's edit of y, made when its journal was lost, is kept: as y itself or as a conflict version
        let store = b.device.dataHome.appendingPathComponent("ubiquity/versions", isDirectory: true)
        #expect(SyncRig.eventually("B's y edit is kept") {
            if b.read("y.txt") == "y2 from B" { return true }
            let conflicts = VersionStoreLocation.$override.withValue(store) { FileVersion.unresolvedConflictVersionsOfItem(at: b.url("y.txt")) ?? [] }
            return conflicts.contains { (try? String(contentsOf: $0.url, encoding: .utf8)) == "y2 from B" }
        })
        a.stop()
        b.stop()
    }
}
