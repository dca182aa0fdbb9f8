import Foundation
import GRDB
import UbiquityCore

extension MetadataIndex {
    /// Inserts or updates `records` by path, in one transaction.
    ///
    /// Quick-check: a row whose size, modification and change times, inode and kind equal the
    /// record's is not written and not in the delta. Ubiquitous attributes of existing rows are
    /// kept (sync owns them: `SyncJournal` sets them with its journal rows).
    package func apply(_ records: [IndexRecord]) throws -> IndexDelta {
        guard !records.isEmpty else { return IndexDelta() }
        let sessions = activeScans.withLock { $0 }
        return try writeDelta("apply") { db in
            var delta = IndexDelta()
            try upsert(records, db: db, generation: 0, sessions: sessions, delta: &delta)
            return delta
        }
    }

    /// Inserts or updates the rows of files (``apply(_:)``) in one transaction, first removing
    /// whatever was indexed under a path whose row was a folder (a folder replaced by a file).
    /// The watcher's batches of written files come here: one transaction for the batch, not one
    /// per file. Folder records are left out (their contents are scanned separately).
    package func applyFiles(_ records: [IndexRecord]) throws -> IndexDelta {
        let files = records.filter { !$0.isDirectory }
        guard !files.isEmpty else { return IndexDelta() }
        let sessions = activeScans.withLock { $0 }
        return try writeDelta("apply files") { db in
            var delta = IndexDelta()
            let wasFolder = try db.cachedStatement(sql: "SELECT is_directory FROM items WHERE path = ?")
            for record in files {
                guard try Bool.fetchOne(wasFolder, arguments: [record.path]) == true else { continue }
                try Self.removeDescendants(of: record.path, db: db, delta: &delta)
            }
            try upsert(files, db: db, generation: 0, sessions: sessions, delta: &delta)
            return delta
        }
    }

    /// Removes each path and everything under it. The delta lists every removed row.
    package func remove(pathsAndSubtrees paths: [String]) throws -> IndexDelta {
        guard !paths.isEmpty else { return IndexDelta() }
        return try writeDelta("remove") { db in
            var delta = IndexDelta()
            for path in paths { try Self.removeSubtree(Self.normalize(path), db: db, delta: &delta) }
            return delta
        }
    }

    /// Renames the row at `from` and every row under it to live under `to`, replacing whatever
    /// was indexed at `to`. The moved row's name and content type follow its new name. The delta
    /// lists every moved row (and any replaced rows as removed); it is empty when `from` is not
    /// indexed.
    package func move(from: String, to: String) throws -> IndexDelta {
        let from = Self.normalize(from), to = Self.normalize(to)
        guard from != to else { return IndexDelta() }
        if to.hasPrefix(from + "/") || from.hasPrefix(to + "/") {
            throw UbiquityError(.invalidArgument, "Cannot move '\(from)' to '\(to)': one contains the other")
        }
        return try writeDelta("move") { db in
            var delta = IndexDelta()
            guard let old = try Self.fetchRecord(path: from, db: db) else { return delta }
            try Self.removeSubtree(to, db: db, delta: &delta)
            let range = Self.subtreeRange(of: from)
            let descendants = try Row.fetchAll(
                db.cachedStatement(sql: "SELECT \(Self.recordColumns) FROM items WHERE path >= ? AND path < ? ORDER BY path"),
                arguments: [range.lower, range.upper]
            ).map(Self.decode)

            var moved = old
            moved.path = to
            moved.name = IndexRecord.lastComponent(of: to)
            moved.contentType = ContentType.identifier(forFileName: moved.name, isDirectory: moved.isDirectory)
            try db.cachedStatement(sql: "UPDATE items SET path = ?, name = ?, name_folded = ?, content_type = ? WHERE path = ?")
                .execute(arguments: [to, moved.name, Self.fold(moved.name), moved.contentType, from])
            delta.moved.append(MovedRecord(from: from, record: moved))
            if !descendants.isEmpty {
                try db.cachedStatement(sql: "UPDATE items SET path = ? || substr(path, length(?) + 1) WHERE path >= ? AND path < ?")
                    .execute(arguments: [to, from, range.lower, range.upper])
                for var record in descendants {
                    let old = record.path
                    record.path = to + String(decoding: old.utf8.dropFirst(from.utf8.count), as: UTF8.self)
                    delta.moved.append(MovedRecord(from: old, record: record))
                }
            }
            return delta
        }
    }

    /// Sets the ubiquitous attributes of the row at `path`. The delta lists the row as changed,
    /// or is empty when the row does not exist or already had these attributes.
    package func updateUbiquitousAttributes(path: String, _ attrs: UbiquitousAttributes) throws -> IndexDelta {
        let path = Self.normalize(path)
        return try writeDelta("update ubiquitous attributes") { db in
            guard var record = try Self.fetchRecord(path: path, db: db), record.ubiquitous != attrs else {
                return IndexDelta()
            }
            try Self.writeUbiquitousAttributes(attrs, path: path, db: db)
            record.ubiquitous = attrs
            return IndexDelta(changed: [record])
        }
    }

    /// Applies attribute `changes` inside a write transaction, reading and writing the attributes
    /// only (decoding whole rows was about half of an update's cost): the paths whose attributes
    /// changed, in order, and those not indexed.
    package static func changeAttributes(_ changes: [(path: String, change: @Sendable (inout UbiquitousAttributes) -> Void)], db: Database) throws
        -> (changed: [String], missing: [String]) {
        var current = try Self.fetchByPath(changes.map { Self.normalize($0.path) }, columns: Self.attributeColumns, db: db,
                                           decode: Self.decodeAttributes)
        var changed: [String] = []
        var seen = Set<String>()
        var missing: [String] = []
        for (original, change) in changes {
            let path = Self.normalize(original)
            guard let before = current[path] else {
                missing.append(original)
                continue
            }
            var attrs = before
            change(&attrs)
            guard attrs != before else { continue }
            try Self.writeUbiquitousAttributes(attrs, path: path, db: db)
            current[path] = attrs
            if seen.insert(path).inserted { changed.append(path) }
        }
        return (changed, missing)
    }

    /// The records at `paths` (normalized) that are indexed, by path: ``lookupChunk`` paths per
    /// query.
    static func fetchRecords(paths: [String], db: Database) throws -> [String: IndexRecord] {
        try fetchByPath(paths, columns: recordColumns, db: db) { row in
            let record = decode(row)
            return (record.path, record)
        }
    }

    /// What `decode` makes of the rows at `paths` (normalized) selected with `columns`, by
    /// path: ``lookupChunk`` paths per query.
    static func fetchByPath<Value>(_ paths: [String], columns: String, db: Database,
                                   decode: (Row) -> (path: String, value: Value)) throws -> [String: Value] {
        let unique = Array(Set(paths))
        guard !unique.isEmpty else { return [:] }
        let placeholders = Array(repeating: "?", count: lookupChunk).joined(separator: ",")
        let lookup = try db.cachedStatement(sql: "SELECT \(columns) FROM items WHERE path IN (\(placeholders))")
        var records: [String: Value] = [:]
        records.reserveCapacity(unique.count)
        var start = 0
        while start < unique.count {
            let end = min(start + lookupChunk, unique.count)
            // padded with the last path to keep one statement
            var values = unique[start..<end].map(\.databaseValue)
            values += Array(repeating: values[values.count - 1], count: lookupChunk - values.count)
            start = end
            for row in try Row.fetchAll(lookup, arguments: StatementArguments(values)) {
                let (path, value) = decode(row)
                records[path] = value
            }
        }
        return records
    }

    /// Writes `attrs` into the row at `path` (normalized).
    static func writeUbiquitousAttributes(_ attrs: UbiquitousAttributes, path: String, db: Database) throws {
        try db.cachedStatement(sql: """
            UPDATE items SET is_uploaded = ?, is_uploading = ?, percent_uploaded = ?, downloading_status = ?,
            is_downloading = ?, percent_downloaded = ?, has_unresolved_conflicts = ?, is_excluded_from_backup = ?,
            uploading_error = ?, downloading_error = ?
            WHERE path = ?
            """).execute(arguments: [
                attrs.isUploaded, attrs.isUploading, attrs.percentUploaded, attrs.downloadingStatus.rawValue,
                attrs.isDownloading, attrs.percentDownloaded, attrs.hasUnresolvedConflicts,
                attrs.isExcludedFromBackup, attrs.uploadingError, attrs.downloadingError, path,
            ])
    }

    // MARK: - Helpers shared with scanning

    /// The record at `path`, if indexed.
    static func fetchRecord(path: String, db: Database) throws -> IndexRecord? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(recordColumns) FROM items WHERE path = ?"), arguments: [path]
        ).map(decode)
    }

    /// How many paths one quick-check query looks up.
    static let lookupChunk = 256

    /// What the quick-check compares, per path (the mode too: a row written before the
    /// `v6-file-facts` migration has none, and gets it at the next scan).
    private struct QuickStat {
        var id: Int64, size: Int64, mtime: Int64, inode: Int64, ctime: Int64, isDirectory: Bool, mode: Int64

        init(id: Int64, _ record: IndexRecord) {
            self.id = id
            size = record.size
            mtime = record.mtimeNanoseconds
            inode = Int64(bitPattern: record.inode)
            ctime = record.ctimeNanoseconds
            isDirectory = record.isDirectory
            mode = Int64(record.mode)
        }

        init(_ row: Row) {
            id = row[1]
            size = row[2]
            mtime = row[3]
            inode = row[4]
            ctime = row[5]
            isDirectory = row[6]
            mode = row[7]
        }

        func matches(_ record: IndexRecord) -> Bool {
            size == record.size && mtime == record.mtimeNanoseconds && inode == Int64(bitPattern: record.inode)
                && ctime == record.ctimeNanoseconds && isDirectory == record.isDirectory && mode == Int64(record.mode)
        }
    }

    /// Upserts `records` with the quick-check (looked up a chunk of paths per query) and marks
    /// their rows seen in `sessions`. `assumingNew` (a bulk scan of an empty subtree) inserts
    /// without looking first; a path that is there after all (the watcher's row, written during
    /// the scan) is then looked up and updated as usual.
    func upsert(
        _ records: [IndexRecord], db: Database, generation: Int64, sessions: Set<Int64>, delta: inout IndexDelta,
        assumingNew: Bool = false
    ) throws {
        let firstAdded = delta.added.count
        let placeholders = Array(repeating: "?", count: Self.lookupChunk).joined(separator: ",")
        let lookup = try db.cachedStatement(sql: """
            SELECT path, id, size, mtime_ns, inode, ctime_ns, is_directory, mode FROM items WHERE path IN (\(placeholders))
            """)
        let insert = try db.cachedStatement(sql: """
            INSERT INTO items (path, name, name_folded, size, creation_date, content_change_date, content_type,
            is_directory, inode, mtime_ns, ctime_ns, is_uploaded, is_uploading, percent_uploaded,
            downloading_status, is_downloading, percent_downloaded, has_unresolved_conflicts,
            is_excluded_from_backup, uploading_error, downloading_error, scan_generation, mode, link_target, stub)
            VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT (path) DO NOTHING
            """)
        var row = RowInsert(insert)  // bound on SQLite's statement (RowInsert.swift)
        let seen = sessions.isEmpty ? nil : try db.cachedStatement(sql: """
            INSERT OR IGNORE INTO temp.scan_seen (session, item_id) VALUES (?, ?)
            """)
        var inserted: [Int64] = []
        var start = 0
        while start < records.count {
            let end = min(start + Self.lookupChunk, records.count)
            let chunk = records[start..<end]
            start = end
            // Look the chunk's paths up in one query (padded with the last path to keep one
            // statement); a bulk scan looks up only what turned out to be there already.
            var existing: [String: QuickStat] = [:]
            if !assumingNew {
                var paths = chunk.map { $0.path.databaseValue }
                paths += Array(repeating: paths[paths.count - 1], count: Self.lookupChunk - paths.count)
                lookup.setUncheckedArguments(StatementArguments(paths))
                existing.reserveCapacity(chunk.count)
                let cursor = try Row.fetchCursor(lookup)
                while let row = try cursor.next() { existing[row[0]] = QuickStat(row) }
            }

            for record in chunk {
                let rowID: Int64
                if let stat = existing[record.path] {
                    rowID = stat.id
                    if !stat.matches(record) {
                        try Self.update(rowID: rowID, with: record, db: db, generation: generation, delta: &delta)
                        existing[record.path] = QuickStat(id: rowID, record)
                    }
                } else {
                    let u = record.ubiquitous
                    row.bind(record.path)
                    row.bind(record.name)
                    row.bind(Self.fold(record.name))
                    row.bind(record.size)
                    row.bind(record.creationDate?.timeIntervalSince1970)
                    row.bind(record.contentChangeDate.timeIntervalSince1970)
                    row.bind(record.contentType)
                    row.bind(record.isDirectory)
                    row.bind(Int64(bitPattern: record.inode))
                    row.bind(record.mtimeNanoseconds)
                    row.bind(record.ctimeNanoseconds)
                    row.bind(u.isUploaded)
                    row.bind(u.isUploading)
                    row.bind(u.percentUploaded)
                    row.bind(u.downloadingStatus.rawValue)
                    row.bind(u.isDownloading)
                    row.bind(u.percentDownloaded)
                    row.bind(u.hasUnresolvedConflicts)
                    row.bind(u.isExcludedFromBackup)
                    row.bind(u.uploadingError)
                    row.bind(u.downloadingError)
                    row.bind(generation)
                    row.bind(Int64(record.mode))
                    row.bind(record.linkTarget)
                    row.bind(record.isStub)
                    guard try row.run(db) else {
                        // there already (only when assuming new): the usual upsert for this one
                        try upsert([record], db: db, generation: generation, sessions: sessions, delta: &delta)
                        continue
                    }
                    rowID = db.lastInsertedRowID
                    inserted.append(rowID)
                    existing[record.path] = QuickStat(id: rowID, record)
                    delta.added.append(record)
                }
                if let seen {
                    for session in sessions {
                        seen.setUncheckedArguments([session, rowID])
                        try seen.execute()
                    }
                }
            }
        }
        try Self.indexNames(ofRows: inserted, db: db)
        if delta.added.count > firstAdded {
            // rows of a synced folder take the state their journal holds (MetadataIndex+SyncJournals.swift)
            var added = Array(delta.added[firstAdded...])
            try Self.fillSyncState(&added, index: self, db: db)
            delta.added.replaceSubrange(firstAdded..., with: added)
        }
    }

    /// Adds the names of freshly inserted rows to `names_fts`: one statement for a contiguous
    /// range of row ids (the usual case), else one per row.
    private static func indexNames(ofRows ids: [Int64], db: Database) throws {
        guard let first = ids.first, let last = ids.last else { return }
        if last - first + 1 == Int64(ids.count), zip(ids, ids.dropFirst()).allSatisfy({ $0 + 1 == $1 }) {
            try db.cachedStatement(sql: "INSERT INTO names_fts (rowid, name_folded) SELECT id, name_folded FROM items WHERE id BETWEEN ? AND ?")
                .execute(arguments: [first, last])
        } else {
            let statement = try db.cachedStatement(sql: "INSERT INTO names_fts (rowid, name_folded) SELECT id, name_folded FROM items WHERE id = ?")
            for id in ids { try statement.execute(arguments: [id]) }
        }
    }

    /// Writes the file-system facts of `record` into row `rowID`, keeping its name and
    /// ubiquitous state, and lists the result as changed.
    private static func update(
        rowID: Int64, with record: IndexRecord, db: Database, generation: Int64, delta: inout IndexDelta
    ) throws {
        try db.cachedStatement(sql: """
            UPDATE items SET size = ?, creation_date = ?, content_change_date = ?, content_type = ?,
            is_directory = ?, inode = ?, mtime_ns = ?, ctime_ns = ?, scan_generation = ?, mode = ?, link_target = ?, stub = ?
            WHERE id = ?
            """).execute(arguments: [
                record.size, record.creationDate?.timeIntervalSince1970,
                record.contentChangeDate.timeIntervalSince1970, record.contentType, record.isDirectory,
                Int64(bitPattern: record.inode), record.mtimeNanoseconds, record.ctimeNanoseconds,
                generation, Int64(record.mode), record.linkTarget, record.isStub, rowID,
            ])
        if let updated = try fetchRecord(path: record.path, db: db) { delta.changed.append(updated) }
    }

    /// Deletes the rows strictly under `path` (not its own), listing them in `delta`.
    static func removeDescendants(of path: String, db: Database, delta: inout IndexDelta) throws {
        let range = subtreeRange(of: path)
        let arguments: StatementArguments = [range.lower, range.upper]
        let condition = "path >= ? AND path < ?"
        let paths = try String.fetchAll(
            db.cachedStatement(sql: "SELECT path FROM items WHERE \(condition) ORDER BY path"), arguments: arguments)
        guard !paths.isEmpty else { return }
        try db.cachedStatement(sql: "DELETE FROM items WHERE \(condition)").execute(arguments: arguments)
        delta.removed.append(contentsOf: paths)
    }

    /// Deletes the row at `path` and every row under it, listing them in `delta`.
    static func removeSubtree(_ path: String, db: Database, delta: inout IndexDelta) throws {
        let range = subtreeRange(of: path)
        let arguments: StatementArguments = [path, range.lower, range.upper]
        let condition = "path = ? OR (path >= ? AND path < ?)"
        let paths = try String.fetchAll(
            db.cachedStatement(sql: "SELECT path FROM items WHERE \(condition) ORDER BY path"), arguments: arguments)
        guard !paths.isEmpty else { return }
        try db.cachedStatement(sql: "DELETE FROM items WHERE \(condition)").execute(arguments: arguments)
        delta.removed.append(contentsOf: paths)
    }
}
