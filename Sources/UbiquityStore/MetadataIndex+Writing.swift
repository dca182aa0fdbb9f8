import Foundation
import GRDB
import UbiquityCore

extension MetadataIndex {
    /// Inserts or updates `records` by path, in one transaction.
    ///
    /// Quick-check: a row whose size, modification and change times, inode and kind equal the
    /// record's is not written and not in the delta. Ubiquitous attributes of existing rows are
    /// kept (sync owns them: ``updateUbiquitousAttributes(path:_:)``).
    public func apply(_ records: [IndexRecord]) throws -> IndexDelta {
        guard !records.isEmpty else { return IndexDelta() }
        let sessions = activeScans.withLock { $0 }
        return try write("apply") { db in
            var delta = IndexDelta()
            for record in records {
                try Self.upsert(record, db: db, generation: 0, sessions: sessions, delta: &delta)
            }
            return delta
        }
    }

    /// Removes each path and everything under it. The delta lists every removed row.
    public func remove(pathsAndSubtrees paths: [String]) throws -> IndexDelta {
        guard !paths.isEmpty else { return IndexDelta() }
        return try write("remove") { db in
            var delta = IndexDelta()
            for path in paths { try Self.removeSubtree(Self.normalize(path), db: db, delta: &delta) }
            return delta
        }
    }

    /// Renames the row at `from` and every row under it to live under `to`, replacing whatever
    /// was indexed at `to`. The moved row's name and content type follow its new name. The delta
    /// lists every moved row (and any replaced rows as removed); it is empty when `from` is not
    /// indexed.
    public func move(from: String, to: String) throws -> IndexDelta {
        let from = Self.normalize(from), to = Self.normalize(to)
        guard from != to else { return IndexDelta() }
        if to.hasPrefix(from + "/") || from.hasPrefix(to + "/") {
            throw UbiquityError(.invalidArgument, "Cannot move '\(from)' to '\(to)': one contains the other")
        }
        return try write("move") { db in
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
    public func updateUbiquitousAttributes(path: String, _ attrs: UbiquitousAttributes) throws -> IndexDelta {
        let path = Self.normalize(path)
        return try write("update ubiquitous attributes") { db in
            guard var record = try Self.fetchRecord(path: path, db: db), record.ubiquitous != attrs else {
                return IndexDelta()
            }
            try db.cachedStatement(sql: """
                UPDATE items SET is_uploaded = ?, is_uploading = ?, percent_uploaded = ?, downloading_status = ?,
                is_downloading = ?, percent_downloaded = ?, has_unresolved_conflicts = ?, is_excluded_from_backup = ?
                WHERE path = ?
                """).execute(arguments: [
                    attrs.isUploaded, attrs.isUploading, attrs.percentUploaded, attrs.downloadingStatus.rawValue,
                    attrs.isDownloading, attrs.percentDownloaded, attrs.hasUnresolvedConflicts,
                    attrs.isExcludedFromBackup, path,
                ])
            record.ubiquitous = attrs
            return IndexDelta(changed: [record])
        }
    }

    // MARK: - Helpers shared with scanning

    /// The record at `path`, if indexed.
    static func fetchRecord(path: String, db: Database) throws -> IndexRecord? {
        try Row.fetchOne(
            db.cachedStatement(sql: "SELECT \(recordColumns) FROM items WHERE path = ?"), arguments: [path]
        ).map(decode)
    }

    /// Upserts one record with the quick-check; marks its row seen in `sessions`.
    static func upsert(
        _ record: IndexRecord, db: Database, generation: Int64, sessions: Set<Int64>, delta: inout IndexDelta
    ) throws {
        // The quick-check reads only what it compares, from a cached statement. `fetchOne` copies
        // the row: a cursor's row is only valid while the cursor lives.
        let check = try db.cachedStatement(sql: "SELECT id, size, mtime_ns, inode, ctime_ns, is_directory FROM items WHERE path = ?")
        check.setUncheckedArguments([record.path])
        var existingID: Int64?
        var unchanged = false
        if let row = try Row.fetchOne(check) {
            existingID = row[0]
            unchanged = record.size == row[1] && record.mtimeNanoseconds == row[2]
                && Int64(bitPattern: record.inode) == row[3] && record.ctimeNanoseconds == row[4]
                && record.isDirectory == row[5]
        }
        let rowID: Int64
        if let existingID {
            rowID = existingID
            if !unchanged, var updated = try fetchRecord(path: record.path, db: db) {
                updated.size = record.size
                updated.creationDate = record.creationDate
                updated.contentChangeDate = record.contentChangeDate
                updated.contentType = record.contentType
                updated.isDirectory = record.isDirectory
                updated.inode = record.inode
                updated.mtimeNanoseconds = record.mtimeNanoseconds
                updated.ctimeNanoseconds = record.ctimeNanoseconds
                try db.cachedStatement(sql: """
                    UPDATE items SET size = ?, creation_date = ?, content_change_date = ?, content_type = ?,
                    is_directory = ?, inode = ?, mtime_ns = ?, ctime_ns = ?, scan_generation = ? WHERE id = ?
                    """).execute(arguments: [
                        updated.size, updated.creationDate?.timeIntervalSince1970,
                        updated.contentChangeDate.timeIntervalSince1970, updated.contentType, updated.isDirectory,
                        Int64(bitPattern: updated.inode), updated.mtimeNanoseconds, updated.ctimeNanoseconds,
                        generation, rowID,
                    ])
                delta.changed.append(updated)
            }
        } else {
            let u = record.ubiquitous
            let insert = try db.cachedStatement(sql: """
                INSERT INTO items (path, name, name_folded, size, creation_date, content_change_date, content_type,
                is_directory, inode, mtime_ns, ctime_ns, is_uploaded, is_uploading, percent_uploaded,
                downloading_status, is_downloading, percent_downloaded, has_unresolved_conflicts,
                is_excluded_from_backup, scan_generation)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            insert.setUncheckedArguments([
                record.path, record.name, fold(record.name), record.size,
                record.creationDate?.timeIntervalSince1970, record.contentChangeDate.timeIntervalSince1970,
                record.contentType, record.isDirectory, Int64(bitPattern: record.inode), record.mtimeNanoseconds,
                record.ctimeNanoseconds, u.isUploaded, u.isUploading, u.percentUploaded,
                u.downloadingStatus.rawValue, u.isDownloading, u.percentDownloaded, u.hasUnresolvedConflicts,
                u.isExcludedFromBackup, generation,
            ])
            try insert.execute()
            rowID = db.lastInsertedRowID
            delta.added.append(record)
        }
        if !sessions.isEmpty {
            let seen = try db.cachedStatement(sql: "INSERT OR IGNORE INTO temp.scan_seen (session, item_id) VALUES (?, ?)")
            for session in sessions {
                seen.setUncheckedArguments([session, rowID])
                try seen.execute()
            }
        }
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
