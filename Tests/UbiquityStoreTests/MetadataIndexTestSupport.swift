import Foundation
import GRDB
import Logging
@testable import UbiquityStore

/// Helpers for the metadata index tests.
enum MetadataIndexTestSupport {
    static let logger = Logger(label: "MetadataIndexTests")

    /// A fresh index in memory.
    static func memoryIndex() throws -> MetadataIndex { try MetadataIndex.inMemory(logger: logger) }

    /// A unique empty temporary folder.
    static func temporaryFolder() -> String {
        let path = "/tmp/ubiq-store-test-" + UUID().uuidString
        try! FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: false)
        return path
    }

    /// A file record at `path`.
    static func file(_ path: String, size: Int64 = 10, inode: UInt64 = 1, mtime: Int64 = 1_000_000_000) -> IndexRecord {
        IndexRecord(path: path, size: size, isDirectory: false, inode: inode, mtimeNanoseconds: mtime, ctimeNanoseconds: mtime)
    }

    /// A folder record at `path`.
    static func folder(_ path: String, inode: UInt64 = 2) -> IndexRecord {
        IndexRecord(path: path, size: 0, isDirectory: true, inode: inode, mtimeNanoseconds: 5, ctimeNanoseconds: 5)
    }

    /// Paths whose folded name contains `needle` according to the trigram index alone.
    static func trigramMatches(_ index: MetadataIndex, _ needle: String) throws -> [String] {
        try index.writer.read { db in
            try String.fetchAll(db, sql: """
                SELECT path FROM items WHERE id IN (SELECT rowid FROM names_fts WHERE names_fts MATCH ?) ORDER BY path
                """, arguments: ["\"" + needle.replacingOccurrences(of: "\"", with: "\"\"") + "\""])
        }
    }

    /// Runs FTS5's integrity check (which compares the index with the `items` table).
    static func checkFTS(_ index: MetadataIndex) throws {
        try index.writer.write { db in
            try db.execute(sql: "INSERT INTO names_fts(names_fts, rank) VALUES ('integrity-check', 1)")
        }
    }
}
