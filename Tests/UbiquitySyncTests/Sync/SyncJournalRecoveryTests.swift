// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityStore
@testable import UbiquitySync

/// A damaged device database (the index with the sync journals) is moved aside and made again:
/// the journals start empty and are rebuilt from the folder and the server; nothing is lost, the
/// devices converge, the user is told (the log's lines).
@Suite(.serialized) struct SyncJournalRecoveryTests {
    @Test func aDamagedDatabaseIsMovedAsideAndTheJournalStartsEmpty() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-journal-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("index.sqlite").path
        try Data(repeating: 0x5A, count: 8192).write(to: URL(fileURLWithPath: path))
        let journal = try SyncJournal.test(at: path)
        #expect(journal.database.wasRebuilt)
        let kept = try #require(try FileManager.default.contentsOfDirectory(atPath: folder.path).first { $0.hasPrefix("index.sqlite.corrupt-") })
        #expect(FileManager.default.contents(atPath: folder.path + "/" + kept) == Data(repeating: 0x5A, count: 8192))
        #expect(try journal.entries().isEmpty)
        // a sound database is opened as it is
        try journal.setValue("v", "k")
        let again = try SyncJournal.test(at: path)
        #expect(!again.database.wasRebuilt)
        #expect(try again.value("k") == "v")
    }

    /// A journal file of an earlier version (one SQLite file per folder) is brought into the
    /// device database once, with its items, states, token, queue and exclusions, and kept as
    /// `….imported`.
    @Test func aJournalFileOfAnEarlierVersionIsBroughtIn() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-legacy-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let legacy = folder.appendingPathComponent("com.example-0123.sqlite").path
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = ["python3", "-c", """
            import sqlite3, sys
            db = sqlite3.connect(sys.argv[1])
            db.executescript('''
            CREATE TABLE items (id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, size INTEGER NOT NULL,
                mtime INTEGER NOT NULL, inode INTEGER NOT NULL, mode INTEGER NOT NULL, hash TEXT NOT NULL, target TEXT, tag TEXT, base TEXT NOT NULL);
            CREATE TABLE meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
            CREATE TABLE pending (path TEXT PRIMARY KEY, since INTEGER NOT NULL);
            CREATE TABLE excluded (path TEXT PRIMARY KEY);
            CREATE TABLE excluded_inode (path TEXT PRIMARY KEY, inode INTEGER NOT NULL);
            INSERT INTO items VALUES ('1', 'a.txt', 'file', 1, 1, 1, 420, 'h', NULL, 't1', 'h');
            INSERT INTO items VALUES ('2', 'b.txt', 'file', 1, 1, 2, 420, 'h', NULL, NULL, 'h');
            INSERT INTO meta VALUES ('zoneChangeToken', 'token-7'), ('folder', '/old');
            INSERT INTO pending VALUES ('b.txt', 5);
            INSERT INTO excluded VALUES ('secret.txt');
            INSERT INTO excluded_inode VALUES ('secret.txt', 99);
            ''')
            db.commit()
            """, legacy]
        try process.run()
        process.waitUntilExit()
        try #require(process.terminationStatus == 0)
        let journal = try SyncJournal.test(at: folder.appendingPathComponent("index.sqlite").path)
        #expect(journal.importLegacyFile(legacy, logger: Logger(label: "test")))
        #expect(try journal.entries().map(\.path).sorted() == ["a.txt", "b.txt"])
        #expect(try journal.state(path: "a.txt") == .uploaded)
        #expect(try journal.state(path: "b.txt") == .uploading)
        #expect(try journal.state(path: "secret.txt") == .excluded)
        #expect(try journal.value(SyncEngine.tokenKey) == "token-7")
        #expect(try journal.pending() == ["b.txt"])
        #expect(try journal.excludedInodes() == ["secret.txt": 99])
        #expect(!FileManager.default.fileExists(atPath: legacy))
        #expect(FileManager.default.fileExists(atPath: legacy + ".imported"))
        // once only
        #expect(!journal.importLegacyFile(legacy + ".imported", logger: Logger(label: "test")))
    }

    @Test func aDeviceWithADamagedDatabaseConvergesWithoutLoss() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("x.txt", "x1")
        try a.write("y.txt", "y1")
        #expect(SyncRig.eventually("B has x and y") { b.read("x.txt") == "x1" && b.read("y.txt") == "y1" })
        b.stop()
        await AccountSync.waitForLock(b.folder.path + "/.ubiquity-sync.lock")

        // B's device database is destroyed while it is down; meanwhile both sides change things
        let state = b.device.root.appendingPathComponent("state/ubiquity")
        for suffix in ["-wal", "-shm"] { try? FileManager.default.removeItem(atPath: state.path + "/index.sqlite" + suffix) }
        try Data("this is not a database, it is garbage".utf8).write(to: state.appendingPathComponent("index.sqlite"))
        try a.write("x.txt", "x2 from A")
        try b.write("y.txt", "y2 from B")
        try b.write("z.txt", "z from B")

        try b.start()
        #expect(SyncRig.eventually("B has A's edit") { b.read("x.txt") == "x2 from A" })
        #expect(SyncRig.eventually("A has B's new file") { a.read("z.txt") == "z from B" })
        #expect((try FileManager.default.contentsOfDirectory(atPath: state.path)).contains { $0.hasPrefix("index.sqlite.corrupt-") })
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
