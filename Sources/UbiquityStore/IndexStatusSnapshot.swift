// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import GRDBSQLite
import UbiquityCore

/// The ubiquitous attributes (sync state) of every indexed item under one folder, read from an
/// index file in one query through a read-only connection — for listings (`ubiq ls`) that must not
/// open the index for writing (the daemon owns it) nor ask for each item separately.
///
/// The rows are kept sorted byte-wise by path (SQLite's own order for the `path` column), with
/// every path in one contiguous byte buffer: a listing walks them beside a sorted directory walk
/// (``IndexListing``) without hashing a string per item.
package struct IndexStatusSnapshot: Sendable {
    /// All paths' UTF-8 bytes, one after the other.
    let bytes: [UInt8]
    /// Where each row's path starts in `bytes`; one more entry than rows (the end).
    let starts: [Int]
    /// Each row's attributes, packed (no reference-counted fields: 100,000 of them for `ls -R`).
    let rows: [PackedRow]

    /// One row's attributes as the query packs them: ``flags`` bits as in ``listingExpression``.
    struct PackedRow {
        var flags: UInt8
        var percentUploaded: Double
        var percentDownloaded: Double

        init(flags: UInt8, percentUploaded: Double, percentDownloaded: Double) {
            self.flags = flags
            self.percentUploaded = percentUploaded
            self.percentDownloaded = percentDownloaded
        }

        /// The row of a packed `listing` value (``listingExpression``).
        init(listing: Int64) {
            self.init(flags: UInt8(truncatingIfNeeded: listing),
                      percentUploaded: Double((listing >> 8) & 0x3FFF) / 100,
                      percentDownloaded: Double((listing >> 22) & 0x3FFF) / 100)
        }

        init(_ attributes: UbiquitousAttributes, folder: Bool) {
            var flags: UInt8 = 0
            if attributes.isUploaded { flags |= 1 }
            if attributes.isUploading { flags |= 2 }
            if attributes.hasUnresolvedConflicts { flags |= 4 }
            if attributes.isExcludedFromBackup { flags |= 8 }
            if attributes.isDownloading { flags |= 16 }
            if folder { flags |= 32 }
            switch attributes.downloadingStatus {
            case .notDownloaded: flags |= 128
            case .downloaded: flags |= 64
            case .current: break
            }
            self.init(flags: flags, percentUploaded: attributes.percentUploaded, percentDownloaded: attributes.percentDownloaded)
        }

        var attributes: UbiquitousAttributes {
            UbiquitousAttributes(
                isUploaded: flags & 1 != 0, isUploading: flags & 2 != 0, percentUploaded: percentUploaded,
                downloadingStatus: flags & 128 != 0 ? .notDownloaded : flags & 64 != 0 ? .downloaded : .current,
                isDownloading: flags & 16 != 0, percentDownloaded: percentDownloaded,
                hasUnresolvedConflicts: flags & 4 != 0, isExcludedFromBackup: flags & 8 != 0)
        }
    }

    /// The number of rows.
    package var count: Int { rows.count }

    /// Row `row`'s attributes.
    func attributes(ofRow row: Int) -> UbiquitousAttributes { rows[row].attributes }

    /// Whether row `row` is a folder.
    func isFolder(_ row: Int) -> Bool { rows[row].flags & 32 != 0 }

    /// Calls `body` with each row in path order: the absolute path's bytes (valid only during
    /// the call), its attributes, and whether it is a folder.
    package func forEachRow(_ body: (UnsafeBufferPointer<UInt8>, UbiquitousAttributes, Bool) -> Void) {
        bytes.withUnsafeBufferPointer { all in
            for row in 0..<rows.count {
                body(UnsafeBufferPointer(rebasing: all[starts[row]..<starts[row + 1]]), rows[row].attributes, isFolder(row))
            }
        }
    }

    /// The attributes by absolute path (built on demand: for tests and small callers).
    package var attributes: [String: UbiquitousAttributes] {
        var result: [String: UbiquitousAttributes] = [:]
        for row in 0..<rows.count { result[String(decoding: bytes[starts[row]..<starts[row + 1]], as: UTF8.self)] = rows[row].attributes }
        return result
    }

    /// The attributes of the item at the absolute `path`, nil when it is not indexed.
    package subscript(path: String) -> UbiquitousAttributes? {
        var path = path
        return path.withUTF8 { key in
            let row = lowerBound(key, from: 0, to: rows.count)
            guard row < rows.count, compare(row, key) == 0 else { return nil }
            return rows[row].attributes
        }
    }

    /// One row's sync state packed into an integer: bits 0–7 the flags (1 uploaded, 2 uploading,
    /// 4 conflicts, 8 excluded, 16 downloading, 32 folder, 64 downloaded — an older version is
    /// local —, 128 not downloaded), bits 8–21 the percent uploaded and 22–35 the percent
    /// downloaded, each in hundredths. The index's `listing` column (migration
    /// `v4-listing-column`) is this expression.
    static let listingExpression = """
        is_uploaded | (is_uploading << 1) | (has_unresolved_conflicts << 2) \
        | (is_excluded_from_backup << 3) | (is_downloading << 4) | (is_directory << 5) \
        | (CASE downloading_status WHEN '\(UbiquitousDownloadingStatus.notDownloaded.rawValue)' THEN 128 \
        WHEN '\(UbiquitousDownloadingStatus.downloaded.rawValue)' THEN 64 ELSE 0 END) \
        | (max(0, min(10000, CAST(round(percent_uploaded * 100) AS INTEGER))) << 8) \
        | (max(0, min(10000, CAST(round(percent_downloaded * 100) AS INTEGER))) << 22)
        """

    /// The rows' query before its optional clauses: the path and the packed `listing` column,
    /// both in the index `items_listing`, so it is an index-only scan in path order.
    static let selection = "SELECT path, listing FROM items WHERE path >= ? AND path < ?"

    /// The same query for an index the daemon has not migrated yet (no `listing` column): the
    /// expression computed per row from the columns.
    static let compatibleSelection = "SELECT path, \(listingExpression) FROM items WHERE path >= ? AND path < ?"

    /// Reads the rows under `folder` from the index file at `databasePath` without writing to it
    /// (no migration, no checkpoint): its children only, or, when `recursive`, every descendant.
    ///
    /// Throws `UbiquityError(.notFound)` when there is no index file and `.io` when it cannot be
    /// read (not an index, locked for too long, a newer schema).
    package static func read(databasePath: String, under folder: String, recursive: Bool) throws -> IndexStatusSnapshot {
        guard FileManager.default.fileExists(atPath: databasePath) else {
            throw UbiquityError(.notFound, "no index at '\(databasePath)'")
        }
        var configuration = Configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(2)
        configuration.label = "IndexStatusSnapshot"
        configuration.prepareDatabase { db in
            // the rows are read straight from the mapped file: no `pread` and copy per page
            // (`ls -R` of 100,000 items reads ~10 MB of the path index)
            try db.execute(sql: "PRAGMA mmap_size = 268435456")
        }
        do {
            let queue = try DatabaseQueue(path: databasePath, configuration: configuration)
            defer { try? queue.close() }
            return try queue.read { db in
                let range = MetadataIndex.subtreeRange(of: MetadataIndex.normalize(folder))
                var clauses = ""
                var arguments: StatementArguments = [range.lower, range.upper]
                if !recursive {
                    clauses += " AND instr(substr(path, length(?) + 1), '/') = 0"
                    arguments += [range.lower]
                }
                clauses += " ORDER BY path"
                var builder = Builder()
                // stepped directly (no `Row` nor `Data` per row: 100,000 rows for `ls -R`)
                let statement: Statement
                do {
                    statement = try db.makeStatement(sql: Self.selection + clauses)
                } catch {
                    statement = try db.makeStatement(sql: Self.compatibleSelection + clauses)
                }
                try statement.setArguments(arguments)
                let raw = statement.sqliteStatement
                defer { sqlite3_reset(raw) }
                while true {
                    let code = sqlite3_step(raw)
                    if code == SQLITE_DONE { break }
                    guard code == SQLITE_ROW else {
                        throw DatabaseError(resultCode: ResultCode(rawValue: code), message: String(cString: sqlite3_errmsg(db.sqliteConnection)))
                    }
                    let row = PackedRow(listing: sqlite3_column_int64(raw, 1))
                    guard let text = sqlite3_column_text(raw, 0) else { continue }
                    let length = Int(sqlite3_column_bytes(raw, 0))
                    builder.append(path: UnsafeRawBufferPointer(start: text, count: length), row)
                }
                return builder.snapshot()
            }
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "cannot read the index '\(databasePath)'", underlying: error)
        }
    }

    /// A snapshot of the given attributes (tests, callers that already have them); `folders`
    /// names the paths that are folders.
    package init(attributes: [String: UbiquitousAttributes], folders: Set<String> = []) {
        var builder = Builder()
        let sorted = attributes.keys.sorted { Array($0.utf8).lexicographicallyPrecedes(Array($1.utf8)) }
        for path in sorted {
            Array(path.utf8).withUnsafeBytes { builder.append(path: $0, PackedRow(attributes[path]!, folder: folders.contains(path))) }
        }
        self = builder.snapshot()
    }

    init(bytes: [UInt8], starts: [Int], rows: [PackedRow]) {
        self.bytes = bytes
        self.starts = starts
        self.rows = rows
    }

    /// Collects rows in path order.
    struct Builder {
        var bytes: [UInt8] = []
        var starts: [Int] = [0]
        var rows: [PackedRow] = []

        init() {
            bytes.reserveCapacity(1 << 16)
            starts.reserveCapacity(1 << 10)
            rows.reserveCapacity(1 << 10)
        }

        mutating func append(path: UnsafeRawBufferPointer, _ row: PackedRow) {
            bytes.append(contentsOf: path)
            starts.append(bytes.count)
            rows.append(row)
        }

        func snapshot() -> IndexStatusSnapshot {
            IndexStatusSnapshot(bytes: bytes, starts: starts, rows: rows)
        }
    }
}

extension IndexStatusSnapshot {
    /// Byte-wise comparison of row `row`'s path with `key` (as `strcmp`: a prefix sorts first).
    func compare(_ row: Int, _ key: UnsafeBufferPointer<UInt8>) -> Int {
        let start = starts[row], length = starts[row + 1] - start
        return bytes.withUnsafeBufferPointer { all in
            let common = min(length, key.count)
            if common > 0 {
                let result = memcmp(all.baseAddress! + start, key.baseAddress!, common)
                if result != 0 { return Int(result) }
            }
            return length - key.count
        }
    }

    /// The first row in `lower..<upper` whose path is not below `key` (byte-wise).
    func lowerBound(_ key: UnsafeBufferPointer<UInt8>, from lower: Int, to upper: Int) -> Int {
        var low = lower, high = upper
        while low < high {
            let middle = (low + high) / 2
            if compare(middle, key) < 0 { low = middle + 1 } else { high = middle }
        }
        return low
    }
}
