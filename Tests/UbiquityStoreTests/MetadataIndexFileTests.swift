import Foundation
import GRDB
import Testing
import UbiquityCore
@testable import UbiquityStore

@Suite struct MetadataIndexFileTests {
    typealias S = MetadataIndexTestSupport

    @Test func createsFoldersAndPersists() throws {
        let folder = S.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/nested/deeper/index.sqlite"
        do {
            let index = try MetadataIndex(path: path, logger: S.logger)
            #expect(!index.wasRebuilt)
            _ = try index.apply([S.file("/r/a.txt")])
            #expect(try index.status().databaseBytes > 0)
        }
        let reopened = try MetadataIndex(path: path, logger: S.logger)
        #expect(try reopened.record(at: "/r/a.txt") != nil)
        let mode = try reopened.writer.read { db in try String.fetchOne(db, sql: "PRAGMA journal_mode") }
        #expect(mode == "wal")
    }

    /// A first scan into an empty index loads in bulk: the secondary indexes are made at its
    /// end, nothing unseen is looked for, a row the watcher wrote meanwhile is updated in place;
    /// a bulk load a crash interrupted is finished when the file is opened again.
    @Test func aBulkLoadEndsWithItsIndexesEvenAfterACrash() throws {
        let folder = S.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/index.sqlite"
        func indexes(_ index: MetadataIndex) throws -> Set<String> {
            try index.writer.read { db in Set(try String.fetchAll(db, sql: "SELECT name FROM sqlite_master WHERE type = 'index' AND name LIKE 'items_%'")) }
        }
        let expected = Set(MetadataIndex.secondaryIndexes.map(\.name))
        do {
            let index = try MetadataIndex(path: path, logger: S.logger)
            #expect(try index.isEmpty())
            try index.beginBulkLoad()
            #expect(try indexes(index).isDisjoint(with: expected))
            let session = try index.beginScan(root: "/r", bulk: true)
            _ = try index.apply([S.file("/r/b.txt", size: 1)])  // the watcher's row, during the scan
            let delta = try index.addScanned([S.file("/r/a.txt"), S.file("/r/b.txt", size: 2)], to: session)
            #expect(delta.added.map(\.path) == ["/r/a.txt"] && delta.changed.map(\.size) == [2])
            #expect(try index.finishScan(session).isEmpty)
            try index.finishBulkLoad()
            #expect(try indexes(index).isSuperset(of: expected))
            #expect(try S.trigramMatches(index, "b.t") == ["/r/b.txt"])
            try index.beginBulkLoad()  // then "crashes"
        }
        let reopened = try MetadataIndex(path: path, logger: S.logger)
        #expect(try indexes(reopened).isSuperset(of: expected))
        #expect(try reopened.status().roots.allSatisfy { $0.path != MetadataIndex.bulkLoadMarker })
        #expect(try reopened.count(under: "/r") == 2)
    }

    @Test func garbageFileIsMovedAsideAndRebuilt() throws {
        let folder = S.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/index.sqlite"
        let garbage = Data((0..<8192).map { UInt8(truncatingIfNeeded: $0 &* 7 &+ 13) })
        try garbage.write(to: URL(fileURLWithPath: path))

        let index = try MetadataIndex(path: path, logger: S.logger)
        #expect(index.wasRebuilt)
        #expect(try index.status().wasRebuilt)
        #expect(try index.count(under: nil) == 0)
        _ = try index.apply([S.file("/r/a")])
        let aside = try FileManager.default.contentsOfDirectory(atPath: folder).filter { $0.hasPrefix("index.sqlite.corrupt-") }
        #expect(aside.count == 1)
        #expect(try Data(contentsOf: URL(fileURLWithPath: folder + "/" + aside[0])) == garbage)
    }

    @Test func corruptedDatabaseIsRebuilt() throws {
        let folder = S.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/index.sqlite"
        do {
            let index = try MetadataIndex(path: path, logger: S.logger)
            _ = try index.apply((0..<100).map { S.file("/r/\($0)") })
        }
        // Overwrite the header (and the schema page) with garbage.
        let handle = try FileHandle(forWritingTo: URL(fileURLWithPath: path))
        try handle.write(contentsOf: Data(repeating: 0xA5, count: 4096))
        try handle.close()
        let index = try MetadataIndex(path: path, logger: S.logger)
        #expect(index.wasRebuilt)
        #expect(try index.count(under: nil) == 0)
    }

    /// The index file deleted while open: connections already open keep using the unlinked
    /// inode, but new reader connections fail to open ("unable to open database file", thrown as
    /// `UbiquityError(.io)`) and nothing reaches the path any more. Nothing crashes; reopening
    /// creates a fresh, empty index that works (the indexer then rescans).
    @Test func fileDeletedWhileOpenThenReopened() throws {
        let folder = S.temporaryFolder()
        defer { try? FileManager.default.removeItem(atPath: folder) }
        let path = folder + "/index.sqlite"
        do {
            let index = try MetadataIndex(path: path, logger: S.logger)
            _ = try index.apply([S.file("/r/a")])
            for suffix in ["", "-wal", "-shm"] { unlink(path + suffix) }
            _ = try? index.record(at: "/r/a")
            _ = try? index.apply([S.file("/r/b")])
            _ = try? index.status()
        }
        let reopened = try MetadataIndex(path: path, logger: S.logger)
        #expect(!reopened.wasRebuilt)
        #expect(try reopened.record(at: "/r/a") == nil)
        _ = try reopened.apply([S.file("/r/c")])
        #expect(try reopened.count(under: "/r") == 1)
    }
}
