// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// The sync journals' folders in one device database, for the index's writes: which journal (if
/// any) holds an absolute path, and the path relative to its folder. A value with no I/O.
package struct SyncJournalFolders: Sendable {
    /// The journals' IDs by folder (absolute, canonical).
    package private(set) var folders: [(folder: String, journal: Int64)] = []

    /// The folders of `journals` (ID → folder).
    package init(_ journals: [Int64: String] = [:]) {
        // the longest first: a journal's folder inside another's is the one that holds its items
        folders = journals.map { (folder: $0.value, journal: $0.key) }.sorted { $0.folder.utf8.count > $1.folder.utf8.count }
    }

    /// Whether no journal is registered.
    package var isEmpty: Bool { folders.isEmpty }

    /// The journal whose folder holds the absolute `path` (strictly inside it), with the path
    /// relative to that folder; nil when no journal's folder holds it.
    package func journal(holding path: String) -> (journal: Int64, relative: String)? {
        let bytes = path.utf8
        for (folder, journal) in folders {
            let prefix = folder.utf8
            guard bytes.count > prefix.count + 1, bytes.starts(with: prefix),
                  bytes[bytes.index(bytes.startIndex, offsetBy: prefix.count)] == UInt8(ascii: "/") else { continue }
            return (journal, String(decoding: bytes.dropFirst(prefix.count + 1), as: UTF8.self))
        }
        return nil
    }
}

extension MetadataIndex {
    /// Migration `v5-sync-journals`: the sync journals move into the device database, one set of
    /// `sync_` tables for every synced folder, each row keyed by its journal (`sync_journals`).
    /// Per journal: the items as last synced with their sync state (`sync_items`), stored values
    /// such as the change token (`sync_meta`), the upload queue (`sync_pending`), the items kept
    /// back by the skip-backup attribute with the inode that carried it (`sync_excluded`), the
    /// evicted and pinned items (`sync_evicted`, `sync_pinned`), transfers (`sync_transfers`),
    /// shared conflict versions (`sync_conflicts`) and kept chunk lists (`sync_chunk_lists`).
    static func registerSyncJournalMigration(_ migrator: inout DatabaseMigrator) {
        migrator.registerMigration("v5-sync-journals") { db in
            try db.execute(sql: """
                CREATE TABLE sync_journals (id INTEGER PRIMARY KEY, name TEXT NOT NULL UNIQUE, folder TEXT NOT NULL);
                CREATE TABLE sync_items (
                    journal INTEGER NOT NULL, id TEXT NOT NULL, path TEXT NOT NULL, kind TEXT NOT NULL, size INTEGER NOT NULL,
                    mtime INTEGER NOT NULL, inode INTEGER NOT NULL, mode INTEGER NOT NULL, hash TEXT NOT NULL, target TEXT,
                    tag TEXT, base TEXT NOT NULL, state TEXT NOT NULL,
                    PRIMARY KEY (journal, id), UNIQUE (journal, path));
                CREATE TABLE sync_meta (journal INTEGER NOT NULL, key TEXT NOT NULL, value TEXT NOT NULL, PRIMARY KEY (journal, key));
                CREATE TABLE sync_pending (journal INTEGER NOT NULL, path TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (journal, path));
                CREATE TABLE sync_excluded (journal INTEGER NOT NULL, path TEXT NOT NULL, inode INTEGER, PRIMARY KEY (journal, path));
                CREATE TABLE sync_evicted (journal INTEGER NOT NULL, id TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (journal, id));
                CREATE TABLE sync_pinned (journal INTEGER NOT NULL, id TEXT NOT NULL, since INTEGER NOT NULL, PRIMARY KEY (journal, id));
                CREATE TABLE sync_transfers (
                    journal INTEGER NOT NULL, path TEXT NOT NULL, uploading INTEGER NOT NULL DEFAULT 0, uploaded REAL,
                    upload_error TEXT, downloading INTEGER NOT NULL DEFAULT 0, downloaded REAL, requested INTEGER NOT NULL DEFAULT 0,
                    download_error TEXT, PRIMARY KEY (journal, path));
                CREATE TABLE sync_conflicts (
                    journal INTEGER NOT NULL, record TEXT NOT NULL, item TEXT NOT NULL, version TEXT NOT NULL,
                    published INTEGER NOT NULL, PRIMARY KEY (journal, record));
                CREATE INDEX sync_conflicts_item ON sync_conflicts (journal, item);
                CREATE TABLE sync_chunk_lists (
                    journal INTEGER NOT NULL, id TEXT NOT NULL, device INTEGER NOT NULL, inode INTEGER NOT NULL,
                    size INTEGER NOT NULL, mtime INTEGER NOT NULL, ctime INTEGER NOT NULL, list BLOB NOT NULL,
                    PRIMARY KEY (journal, id));
                """)
        }
    }

    /// The ID of the journal `name` (made for `folder` if new; a journal made for another
    /// folder is moved to `folder`): the key of its rows in the `sync_` tables. Returns the ID
    /// and the folder the journal had before (nil when new or unchanged).
    package func registerJournal(name: String, folder: String) throws -> (id: Int64, previousFolder: String?) {
        try write("register a sync journal") { db in
            let existing = try Row.fetchOne(db, sql: "SELECT id, folder FROM sync_journals WHERE name = ?", arguments: [name])
            let result: (Int64, String?)
            if let existing {
                let id: Int64 = existing[0], recorded: String = existing[1]
                if recorded != folder {
                    try db.execute(sql: "UPDATE sync_journals SET folder = ? WHERE id = ?", arguments: [folder, id])
                }
                result = (id, recorded == folder ? nil : recorded)
            } else {
                try db.execute(sql: "INSERT INTO sync_journals (name, folder) VALUES (?, ?)", arguments: [name, folder])
                result = (db.lastInsertedRowID, nil)
            }
            journalFolders.withLock { $0 = nil }  // read again by the next write that needs them
            return result
        }
    }

    /// The tables holding the journals' rows (each keyed by `journal`).
    static let syncJournalTables = ["sync_items", "sync_meta", "sync_pending", "sync_excluded", "sync_evicted", "sync_pinned",
                                    "sync_transfers", "sync_conflicts", "sync_chunk_lists"]

    /// Deletes the journal `name` and all its rows (the account it synced for signed out: its
    /// journal must never be applied to another account's data). Nothing happens when there is
    /// no such journal.
    package func forgetJournal(name: String) throws {
        try write("forget a sync journal") { db in
            guard let id = try Int64.fetchOne(db, sql: "SELECT id FROM sync_journals WHERE name = ?", arguments: [name]) else { return }
            for table in Self.syncJournalTables { try db.execute(sql: "DELETE FROM \(table) WHERE journal = ?", arguments: [id]) }
            try db.execute(sql: "DELETE FROM sync_journals WHERE id = ?", arguments: [id])
            journalFolders.withLock { $0 = nil }
        }
    }

    /// The journals in this database: name → (ID, folder).
    package func journals() throws -> [String: (id: Int64, folder: String)] {
        try read("list the sync journals") { db in
            var result: [String: (id: Int64, folder: String)] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT name, id, folder FROM sync_journals") { result[row[0]] = (row[1], row[2]) }
            return result
        }
    }

    /// The journals' folders, read once per change of the journals (inside a transaction).
    static func journalFolders(of index: MetadataIndex, db: Database) throws -> SyncJournalFolders {
        if let known = index.journalFolders.withLock({ $0 }) { return known }
        var folders: [Int64: String] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT id, folder FROM sync_journals") { folders[row[0]] = row[1] }
        let made = SyncJournalFolders(folders)
        index.journalFolders.withLock { $0 = made }
        return made
    }

    /// The sync state the journal holds for the item at `relative` in journal `journal`: its
    /// state (excluded when kept back by the skip-backup attribute) and whether it is evicted;
    /// nil when the journal does not know the item.
    package static func journaledState(journal: Int64, relative: String, db: Database) throws -> (status: SyncItemStatus, evicted: Bool)? {
        if try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM sync_excluded WHERE journal = ? AND path = ?"),
                             arguments: [journal, relative]) != nil {
            return (.excluded, false)
        }
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT s.state, EXISTS (SELECT 1 FROM sync_evicted e WHERE e.journal = s.journal AND e.id = s.id)
            FROM sync_items s WHERE s.journal = ? AND s.path = ?
            """), arguments: [journal, relative]) else { return nil }
        return (SyncItemStatus(rawValue: row[0]) ?? .unknown, row[1])
    }

    /// Gives the rows just inserted for `records` that lie in a synced folder the sync state
    /// their journal holds (a file sync wrote is indexed after sync journaled it): in the same
    /// transaction as the insert, so no row is ever seen without its state.
    static func fillSyncState(_ records: inout [IndexRecord], index: MetadataIndex, db: Database) throws {
        let folders = try journalFolders(of: index, db: db)
        guard !folders.isEmpty else { return }
        for position in records.indices {
            guard let (journal, relative) = folders.journal(holding: records[position].path),
                  let (status, evicted) = try journaledState(journal: journal, relative: relative, db: db) else { continue }
            var attributes = records[position].ubiquitous
            attributes.apply(status, evicted: evicted)
            guard attributes != records[position].ubiquitous else { continue }
            try writeUbiquitousAttributes(attributes, path: records[position].path, db: db)
            records[position].ubiquitous = attributes
        }
    }
}

extension MetadataIndex {
    /// Gives the rows at the absolute paths of `states` the attributes of their sync state,
    /// inside a write transaction (``write(_:publishing:)``); the rows that changed go in
    /// `delta` (their records read only when somebody follows the change feed). A path not
    /// indexed yet is left alone: its row takes the state from the journal when it is inserted.
    package func applySyncStates(_ states: [(path: String, status: SyncItemStatus, evicted: Bool)], db: Database,
                                 delta: inout IndexDelta) throws {
        guard !states.isEmpty else { return }
        let changes = states.map { state in
            (path: state.path, change: { @Sendable (attributes: inout UbiquitousAttributes) in
                attributes.apply(state.status, evicted: state.evicted)
            })
        }
        try changeAttributes(changes, db: db, delta: &delta)
    }

    /// Applies attribute `changes` (absolute paths) inside a write transaction
    /// (``write(_:publishing:)``); the rows that changed go in `delta`, their records read only
    /// when somebody follows the change feed. Paths not indexed are left alone. Returns the
    /// paths whose attributes changed, in order, and those not indexed.
    @discardableResult
    package func changeAttributes(_ changes: [(path: String, change: @Sendable (inout UbiquitousAttributes) -> Void)], db: Database,
                                  delta: inout IndexDelta) throws -> (changed: [String], missing: [String]) {
        let result = try Self.changeAttributes(changes, db: db)
        guard hasSubscribers, !result.changed.isEmpty else { return result }
        let records = try Self.fetchRecords(paths: result.changed, db: db)
        delta.changed += result.changed.compactMap { records[Self.normalize($0)] }
        return result
    }
}
