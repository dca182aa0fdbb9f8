import Foundation
import GRDB
import UbiquityCore

extension MetadataIndex {
    /// The connection set-up: pragmas and the predicate SQL functions.
    static func configuration() -> Configuration {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "MetadataIndex"
        // readers: the engine, queries, the control socket (each connection keeps a page cache)
        config.maximumReaderCount = 3
        config.prepareDatabase { db in
            // 16 MiB of page cache for the writer (a pass over 100,000 journal rows reads each page
            // once); readers keep 4 MiB each: a daemon's memory is mostly page caches otherwise
            try db.execute(sql: """
                PRAGMA synchronous = NORMAL;
                PRAGMA temp_store = MEMORY;
                PRAGMA cache_size = \(db.configuration.readonly ? -4096 : -16384);
                """)
            PredicateSQLFunctions.register(in: db)
        }
        return config
    }

    /// The schema migrations.
    static let migrator: DatabaseMigrator = {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE items (
                    id INTEGER PRIMARY KEY,
                    path TEXT NOT NULL UNIQUE,
                    name TEXT NOT NULL,
                    name_folded TEXT NOT NULL,
                    size INTEGER NOT NULL,
                    creation_date REAL,
                    content_change_date REAL NOT NULL,
                    content_type TEXT NOT NULL,
                    is_directory INTEGER NOT NULL,
                    inode INTEGER NOT NULL,
                    mtime_ns INTEGER NOT NULL,
                    ctime_ns INTEGER NOT NULL,
                    is_uploaded INTEGER NOT NULL DEFAULT 0,
                    is_uploading INTEGER NOT NULL DEFAULT 0,
                    percent_uploaded REAL NOT NULL DEFAULT 0,
                    downloading_status TEXT NOT NULL DEFAULT 'NSMetadataUbiquitousItemDownloadingStatusCurrent',
                    is_downloading INTEGER NOT NULL DEFAULT 0,
                    percent_downloaded REAL NOT NULL DEFAULT 0,
                    has_unresolved_conflicts INTEGER NOT NULL DEFAULT 0,
                    is_excluded_from_backup INTEGER NOT NULL DEFAULT 0,
                    scan_generation INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX items_name ON items(name);
                CREATE INDEX items_name_folded ON items(name_folded);
                CREATE INDEX items_content_type ON items(content_type);
                CREATE INDEX items_size ON items(size);
                CREATE INDEX items_content_change_date ON items(content_change_date);

                -- Inserts are indexed by `upsert` with one statement per batch (an insert trigger would
                -- make FTS5 flush its pending terms at every row's statement savepoint: 5x slower).
                -- Deletes and renames are kept in sync by these triggers.
                CREATE VIRTUAL TABLE names_fts USING fts5(
                    name_folded, content='items', content_rowid='id', tokenize='trigram'
                );
                CREATE TRIGGER items_fts_delete AFTER DELETE ON items BEGIN
                    INSERT INTO names_fts(names_fts, rowid, name_folded) VALUES ('delete', old.id, old.name_folded);
                END;
                CREATE TRIGGER items_fts_update AFTER UPDATE OF name_folded ON items BEGIN
                    INSERT INTO names_fts(names_fts, rowid, name_folded) VALUES ('delete', old.id, old.name_folded);
                    INSERT INTO names_fts(rowid, name_folded) VALUES (new.id, new.name_folded);
                END;

                CREATE TABLE roots (
                    path TEXT PRIMARY KEY NOT NULL,
                    last_scan_started REAL,
                    last_scan_finished REAL,
                    rescan_pending INTEGER NOT NULL DEFAULT 0,
                    message TEXT
                );
                """)
        }
        migrator.registerMigration("v2-transfer-errors") { db in
            // The upload and download errors sync reports (NSMetadataUbiquitousItem…ErrorKey).
            try db.execute(sql: """
                ALTER TABLE items ADD COLUMN uploading_error TEXT;
                ALTER TABLE items ADD COLUMN downloading_error TEXT;
                """)
        }
        migrator.registerMigration("v3-status-covering-index") { db in
            // `ubiq ls` and status listings read every row's sync state under a folder in path
            // order (IndexStatusSnapshot): with every column it reads in one index, that is an
            // index-only scan instead of a table lookup per row (docs/benchmarks.md, issue 7).
            try db.execute(sql: """
                CREATE INDEX items_status ON items(path, is_uploaded, is_uploading, has_unresolved_conflicts,
                    is_excluded_from_backup, is_downloading, is_directory, downloading_status, percent_uploaded,
                    percent_downloaded)
                """)
        }
        migrator.registerMigration("v4-listing-column") { db in
            // The same listing, cheaper: the sync state packed into one virtual column
            // (`IndexStatusSnapshot.listingExpression`), indexed with the path. The index holds
            // the computed value, so the listing still reads the index only (its table seek is
            // deferred and never made) and steps over one column per row instead of nine: the
            // query of 100,000 rows takes about half as long, and the index is smaller.
            try db.execute(sql: """
                ALTER TABLE items ADD COLUMN listing INTEGER GENERATED ALWAYS AS (\(IndexStatusSnapshot.listingExpression)) VIRTUAL;
                CREATE INDEX items_listing ON items(path, listing);
                DROP INDEX items_status;
                """)
        }
        registerSyncJournalMigration(&migrator)  // MetadataIndex+SyncJournals.swift
        migrator.registerMigration("v6-file-facts") { db in
            // What sync reads from the rows instead of walking the folder itself: the mode (type
            // and permissions), a link's target, and whether the row stands for an evicted file's
            // stub. Rows written before stay 0/NULL until their item changes or is rescanned.
            try db.execute(sql: """
                ALTER TABLE items ADD COLUMN mode INTEGER NOT NULL DEFAULT 0;
                ALTER TABLE items ADD COLUMN link_target TEXT;
                ALTER TABLE items ADD COLUMN stub INTEGER NOT NULL DEFAULT 0;
                """)
        }
        migrator.registerMigration("v7-sync-birth-times") { db in
            // The birth time (nanoseconds) of the inode an item was synced with: a file found on
            // that inode under another name with another birth time is a new file that took the
            // freed inode, not a rename (SyncDecision.matchMoves). NULL: not known.
            try db.execute(sql: "ALTER TABLE sync_items ADD COLUMN birth INTEGER")
        }
        return migrator
    }()

    /// The columns every record query selects, in ``decode(_:)`` order.
    static let recordColumns = """
        items.path, items.name, items.size, items.creation_date, items.content_change_date, \
        items.content_type, items.is_directory, items.inode, items.mtime_ns, items.ctime_ns, \
        items.is_uploaded, items.is_uploading, items.percent_uploaded, items.downloading_status, \
        items.is_downloading, items.percent_downloaded, items.has_unresolved_conflicts, \
        items.is_excluded_from_backup, items.id, items.uploading_error, items.downloading_error, \
        items.mode, items.link_target, items.stub
        """

    /// The record of a row selected with ``recordColumns``.
    static func decode(_ row: Row) -> IndexRecord {
        let creation: Double? = row[3]
        let status: String = row[13]
        return IndexRecord(
            path: row[0], name: row[1], size: row[2],
            creationDate: creation.map { Date(timeIntervalSince1970: $0) },
            contentChangeDate: Date(timeIntervalSince1970: row[4]),
            contentType: row[5], isDirectory: row[6], inode: UInt64(bitPattern: row[7]),
            mtimeNanoseconds: row[8], ctimeNanoseconds: row[9],
            ubiquitous: UbiquitousAttributes(
                isUploaded: row[10], isUploading: row[11], percentUploaded: row[12],
                downloadingStatus: UbiquitousDownloadingStatus(rawValue: status) ?? .current,
                isDownloading: row[14], percentDownloaded: row[15], hasUnresolvedConflicts: row[16],
                isExcludedFromBackup: row[17], uploadingError: row[19], downloadingError: row[20]))
            .with(mode: UInt32(truncatingIfNeeded: row[21] as Int64), linkTarget: row[22], isStub: row[23])
    }

    /// The columns ``decodeAttributes(_:)`` reads: the path, then the ubiquitous attributes.
    static let attributeColumns = """
        items.path, items.is_uploaded, items.is_uploading, items.percent_uploaded, items.downloading_status, \
        items.is_downloading, items.percent_downloaded, items.has_unresolved_conflicts, \
        items.is_excluded_from_backup, items.uploading_error, items.downloading_error
        """

    /// The path and ubiquitous attributes of a row selected with ``attributeColumns``.
    static func decodeAttributes(_ row: Row) -> (path: String, value: UbiquitousAttributes) {
        let status: String = row[4]
        return (row[0], UbiquitousAttributes(
            isUploaded: row[1], isUploading: row[2], percentUploaded: row[3],
            downloadingStatus: UbiquitousDownloadingStatus(rawValue: status) ?? .current,
            isDownloading: row[5], percentDownloaded: row[6], hasUnresolvedConflicts: row[7],
            isExcludedFromBackup: row[8], uploadingError: row[9], downloadingError: row[10]))
    }

    /// The folded form of a name, as stored in `name_folded` and searched by the trigram index.
    static func fold(_ name: String) -> String {
        // Most names are ASCII, where folding is ASCII lowercasing (no decompositions, no marks).
        var ascii = true
        var needsLowercasing = false
        for byte in name.utf8 {
            if byte >= 0x80 { ascii = false; break }
            if byte >= 0x41 && byte <= 0x5A { needsLowercasing = true }
        }
        guard ascii else { return PredicateStringMatch.fold(name) }
        guard needsLowercasing else { return name }
        return String(decoding: name.utf8.map { $0 >= 0x41 && $0 <= 0x5A ? $0 + 0x20 : $0 }, as: UTF8.self)
    }

    /// The half-open range `[lower, upper)` of paths strictly inside `path` ("/" sorts just
    /// before "0", so every descendant `path/…` lies in `[path/, path0)`).
    static func subtreeRange(of path: String) -> (lower: String, upper: String) {
        let prefix = path.hasSuffix("/") ? path : path + "/"
        return (prefix, String(prefix.dropLast()) + "0")
    }

    /// `path` without trailing slashes (except for "/").
    static func normalize(_ path: String) -> String {
        var path = path
        while path.count > 1, path.hasSuffix("/") { path.removeLast() }
        return path
    }
}
