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
