import Foundation
import GRDB
import UbiquityCore

extension MetadataIndex {
    /// The row at `path`, if indexed.
    package func record(at path: String) throws -> IndexRecord? {
        let path = Self.normalize(path)
        return try read("record lookup") { db in try Self.fetchRecord(path: path, db: db) }
    }

    /// The rows at `paths` (absolute) that are indexed, by path: a chunk of paths per query.
    package func records(atPaths paths: [String]) throws -> [String: IndexRecord] {
        guard !paths.isEmpty else { return [:] }
        return try read("records lookup") { db in try Self.fetchRecords(paths: paths.map(Self.normalize), db: db) }
    }

    /// The rows strictly under `root` (every row when nil), sorted by path.
    package func records(under root: String?) throws -> [IndexRecord] {
        try read("records lookup") { db in
            if let root {
                let range = Self.subtreeRange(of: Self.normalize(root))
                return try Row.fetchAll(db, sql: "SELECT \(Self.recordColumns) FROM items WHERE path >= ? AND path < ? ORDER BY path",
                                        arguments: [range.lower, range.upper]).map(Self.decode)
            }
            return try Row.fetchAll(db, sql: "SELECT \(Self.recordColumns) FROM items ORDER BY path").map(Self.decode)
        }
    }

    /// The number of rows strictly under `root`, or of all rows when nil.
    package func count(under root: String?) throws -> Int {
        try read("count") { db in
            if let root {
                let range = Self.subtreeRange(of: Self.normalize(root))
                return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items WHERE path >= ? AND path < ?",
                                        arguments: [range.lower, range.upper]) ?? 0
            }
            return try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") ?? 0
        }
    }

    /// Item and folder counts, the size on disk and the state of every registered root.
    package func status() throws -> IndexStatus {
        let (items, folders, roots) = try read("status") { db in
            let items = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items") ?? 0
            let folders = try Int.fetchOne(db, sql: "SELECT COUNT(*) FROM items WHERE is_directory = 1") ?? 0
            let roots = try Row.fetchAll(db, sql: """
                SELECT path, last_scan_started, last_scan_finished, rescan_pending, message FROM roots ORDER BY path
                """).map { row in
                    let started: Double? = row[1], finished: Double? = row[2]
                    return IndexRootStatus(
                        path: row[0], lastScanStarted: started.map { Date(timeIntervalSince1970: $0) },
                        lastScanFinished: finished.map { Date(timeIntervalSince1970: $0) },
                        rescanPending: row[3], message: row[4])
                }
            return (items, folders, roots)
        }
        var bytes: Int64 = 0
        if let path {
            for suffix in ["", "-wal", "-shm"] {
                var st = stat()
                if stat(path + suffix, &st) == 0 { bytes += Int64(st.st_size) }
            }
        }
        return IndexStatus(itemCount: items, folderCount: folders, databaseBytes: bytes, roots: roots, wasRebuilt: wasRebuilt)
    }
}
