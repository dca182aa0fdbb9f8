// SPDX-License-Identifier: Apache-2.0
import GRDB

/// What sync reads of an index row instead of the disk: the path, the stat it compares, the
/// mode, a link's target, whether the row stands for an evicted file's stub. The rest of the
/// record (name, content type, dates, ubiquitous attributes) is left unread: a whole pass over
/// 100,000 rows holds 100,000 of these, not of ``IndexRecord``.
package struct IndexFileFacts: Sendable, Hashable {
    /// The absolute path.
    package var path: String
    /// Whether the item is a folder.
    package var isDirectory: Bool
    /// The size in bytes (a stub's: its document's).
    package var size: Int64
    /// The modification time in nanoseconds since 1970.
    package var mtimeNanoseconds: Int64
    /// The inode number.
    package var inode: UInt64
    /// `st_mode` (0 when the row was written before the index kept it).
    package var mode: UInt32
    /// A symbolic link's target.
    package var linkTarget: String?
    /// Whether the row stands for an evicted file's stub.
    package var isStub: Bool
    /// The birth time in nanoseconds since 1970, when the file system reported one (kept as
    /// seconds in a `REAL`: to within a microsecond).
    package var birthNanoseconds: Int64?

    /// Whether the item is a symbolic link.
    package var isSymbolicLink: Bool { mode & 0o170000 == 0o120000 }

    /// The last path component.
    package var name: String { IndexRecord.lastComponent(of: path) }

    /// The facts of a row whose first columns are ``MetadataIndex/factColumns(of:)``'s.
    package init(_ row: Row) {
        path = row[0]
        isDirectory = row[1]
        size = row[2]
        mtimeNanoseconds = row[3]
        inode = UInt64(bitPattern: row[4] as Int64)
        mode = UInt32(truncatingIfNeeded: row[5] as Int64)
        linkTarget = row[6]
        isStub = row[7]
        birthNanoseconds = (row[8] as Double?).map { Int64(($0 * 1e9).rounded()) }
    }

    /// How many columns ``init(_:)`` reads.
    package static let columnCount = MetadataIndex.factColumnNames.count
}

extension MetadataIndex {
    /// The columns ``IndexFileFacts`` reads, in its order.
    static let factColumns = factColumns(of: nil)

    /// The columns ``IndexFileFacts`` reads, in its order, of the items table named `table` in
    /// a query (a join's alias), or unqualified.
    package static func factColumns(of table: String?) -> String {
        factColumnNames.map { column in table.map { "\($0).\(column)" } ?? column }.joined(separator: ", ")
    }

    /// The columns ``IndexFileFacts`` reads, in its order, unqualified.
    static let factColumnNames = ["path", "is_directory", "size", "mtime_ns", "inode", "mode", "link_target", "stub", "creation_date"]

    /// The facts of the rows strictly under `root`, sorted by path.
    package func facts(under root: String) throws -> [IndexFileFacts] {
        let range = Self.subtreeRange(of: Self.normalize(root))
        return try read("facts lookup") { db in
            try Array(Row.fetchCursor(db.cachedStatement(sql: "SELECT \(Self.factColumns) FROM items WHERE path >= ? AND path < ? ORDER BY path"),
                                      arguments: [range.lower, range.upper]).map(IndexFileFacts.init))
        }
    }

    /// The facts of the rows at `paths` (absolute) that are indexed, by path.
    package func facts(atPaths paths: [String]) throws -> [String: IndexFileFacts] {
        guard !paths.isEmpty else { return [:] }
        return try read("facts lookup") { db in
            try Self.fetchByPath(paths.map(Self.normalize), columns: Self.factColumns, db: db) { row in
                let facts = IndexFileFacts(row)
                return (facts.path, facts)
            }
        }
    }
}
