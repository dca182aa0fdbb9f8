// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Synchronization
import UbiquityCore

/// The sync journal of one folder: a SQLite file (GRDB, WAL) with, per item, its ID, path and
/// last synced state and server change tag; the zone's change token; the queue of pending
/// uploads; and the items kept back (skip-backup). Every change is one transaction, so a daemon
/// killed at any point restarts from a consistent state.
package final class SyncJournal: Sendable {
    /// The journal file.
    package let path: String
    let queue: DatabaseQueue
    /// The write transactions committed (or tried) since the journal was opened (for tests and
    /// the batching figures: a page of new files is one transaction, not one per file).
    let writeTransactions = Atomic<Int>(0)

    /// Opens (creating) the journal at `path`.
    package init(path: String) throws {
        self.path = path
        // private whatever the umask: paths and content hashes of the user's files
        try PrivateFolder.prepareFile(path)
        var configuration = Configuration()
        configuration.busyMode = .timeout(10)
        do {
            queue = try DatabaseQueue(path: path, configuration: configuration)
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA journal_mode=WAL") }
            // WAL with synchronous=NORMAL: a commit survives a killed daemon (what the restart
            // logic relies on); only a power loss may take back the last commits, which the next
            // pass finds again by the scan and the change token
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA synchronous=NORMAL") }
            // 16 MiB of page cache (the default is 2 MiB): a pass over 100,000 items reads each
            // page once
            try queue.writeWithoutTransaction { db in try db.execute(sql: "PRAGMA cache_size=-16384") }
            try write { db in
                try db.execute(sql: """
                    CREATE TABLE IF NOT EXISTS items (
                        id TEXT PRIMARY KEY, path TEXT NOT NULL UNIQUE, kind TEXT NOT NULL, size INTEGER NOT NULL,
                        mtime INTEGER NOT NULL, inode INTEGER NOT NULL, mode INTEGER NOT NULL, hash TEXT NOT NULL,
                        target TEXT, tag TEXT, base TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
                    CREATE TABLE IF NOT EXISTS pending (path TEXT PRIMARY KEY, since INTEGER NOT NULL);
                    CREATE TABLE IF NOT EXISTS excluded (path TEXT PRIMARY KEY);
                    CREATE TABLE IF NOT EXISTS excluded_inode (path TEXT PRIMARY KEY, inode INTEGER NOT NULL);
                    """)
                // added with eviction (new tables: older journals gain them here)
                try db.execute(sql: Self.evictionSchema)
                // added with shared conflict versions (SyncJournal+Conflicts.swift)
                try db.execute(sql: Self.conflictSchema)
                // added with kept chunk lists, migration v-chunk-lists (SyncJournal+ChunkLists.swift)
                try db.execute(sql: Self.chunkListSchema)
                // added with pinning (SyncJournal+Pinning.swift)
                try db.execute(sql: Self.pinningSchema)
            }
        } catch {
            throw UbiquityError(.io, "cannot open the sync journal '\(path)'", underlying: error)
        }
    }

    /// Runs `body` in one write transaction (counted in ``writeTransactions``).
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        writeTransactions.add(1, ordering: .relaxed)
        return try queue.write(body)
    }

    // MARK: Items

    /// Every entry.
    package func entries() throws -> [JournalEntry] {
        try queue.read { db in try Row.fetchAll(db, sql: "SELECT \(Self.itemColumns) FROM items").map(Self.entry) }
    }

    /// The entry with ID `id`.
    package func entry(id: String) throws -> JournalEntry? {
        try queue.read { db in try Row.fetchOne(db, sql: "SELECT \(Self.itemColumns) FROM items WHERE id = ?", arguments: [id]).map(Self.entry) }
    }

    /// The entry at `path`.
    package func entry(path: String) throws -> JournalEntry? {
        try queue.read { db in try Row.fetchOne(db, sql: "SELECT \(Self.itemColumns) FROM items WHERE path = ?", arguments: [path]).map(Self.entry) }
    }

    /// Inserts or replaces `entry` (an entry at the same path with another ID is replaced) and
    /// takes its path off the pending queue.
    package func put(_ entry: JournalEntry) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM items WHERE path = ? AND id != ?", arguments: [entry.path, entry.id])
            try db.execute(sql: """
                INSERT OR REPLACE INTO items (id, path, kind, size, mtime, inode, mode, hash, target, tag, base)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [entry.id, entry.path, entry.stat.kind.rawValue, entry.stat.size, entry.stat.modifiedNanoseconds,
                                 Int64(bitPattern: entry.stat.inode), Int64(entry.stat.mode), entry.contentHash, entry.target,
                                 entry.changeTag, entry.baseHash])
            try db.execute(sql: "DELETE FROM pending WHERE path = ?", arguments: [entry.path])
            try db.execute(sql: "DELETE FROM excluded WHERE path = ?", arguments: [entry.path])
        }
    }

    /// Inserts or replaces several entries in one transaction (``put(_:)`` for each); with
    /// `enqueue`, their paths are put on the pending queue instead of taken off it (new items
    /// journaled before their first upload).
    package func putAll(_ entries: [JournalEntry], enqueue: Bool = false) throws {
        guard !entries.isEmpty else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try write { db in
            // statements compiled once per transaction, not once per entry; (`OR REPLACE` also
            // deletes an entry at the same path with another ID: `path` is unique)
            let insert = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO items (id, path, kind, size, mtime, inode, mode, hash, target, tag, base)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let queue = try db.cachedStatement(sql: "INSERT OR IGNORE INTO pending (path, since) VALUES (?, ?)")
            let dequeue = try db.cachedStatement(sql: "DELETE FROM pending WHERE path = ?")
            let include = try db.cachedStatement(sql: "DELETE FROM excluded WHERE path = ?")
            // (mostly nothing is excluded, and a receiver has nothing pending: then no lookups)
            let excludes = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM excluded)")) ?? true
            let queued = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM pending)")) ?? true
            // an entry already journaled under its ID and path (an upload's answer after its new
            // item was journaled, an edit): updated in place, no index entry touched
            let update = try db.cachedStatement(sql: """
                UPDATE items SET kind = ?, size = ?, mtime = ?, inode = ?, mode = ?, hash = ?, target = ?, tag = ?, base = ?
                WHERE id = ? AND path = ?
                """)
            for entry in entries {
                if !enqueue {
                    try update.execute(arguments: [entry.stat.kind.rawValue, entry.stat.size, entry.stat.modifiedNanoseconds,
                                                   Int64(bitPattern: entry.stat.inode), Int64(entry.stat.mode), entry.contentHash, entry.target,
                                                   entry.changeTag, entry.baseHash, entry.id, entry.path])
                    if db.changesCount > 0 {
                        if queued { try dequeue.execute(arguments: [entry.path]) }
                        if excludes { try include.execute(arguments: [entry.path]) }
                        continue
                    }
                }
                try insert.execute(arguments: [entry.id, entry.path, entry.stat.kind.rawValue, entry.stat.size, entry.stat.modifiedNanoseconds,
                                               Int64(bitPattern: entry.stat.inode), Int64(entry.stat.mode), entry.contentHash, entry.target,
                                               entry.changeTag, entry.baseHash])
                if enqueue {
                    try queue.execute(arguments: [entry.path, now])
                } else {
                    if queued { try dequeue.execute(arguments: [entry.path]) }
                    if excludes { try include.execute(arguments: [entry.path]) }
                }
            }
        }
    }

    /// Removes several entries in one transaction.
    package func removeAll(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            for id in ids { try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [id]) }
        }
    }

    /// Removes the entry `id`.
    package func remove(id: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM items WHERE id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM evicted WHERE id = ?", arguments: [id])
            try db.execute(sql: "DELETE FROM pinned WHERE id = ?", arguments: [id])
        }
    }

    /// Moves every entry at `from` or under it to `to` (a folder moved locally or remotely).
    package func movePrefix(from: String, to: String) throws {
        try write { db in
            try db.execute(sql: "UPDATE items SET path = ? || substr(path, ?) WHERE substr(path, 1, ?) = ?",
                           arguments: [to + "/", from.utf8.count + 2, from.utf8.count + 1, from + "/"])
            try db.execute(sql: "UPDATE items SET path = ? WHERE path = ?", arguments: [to, from])
            try db.execute(sql: "DELETE FROM transfers WHERE path = ? OR substr(path, 1, ?) = ?",
                           arguments: [from, from.utf8.count + 1, from + "/"])
        }
    }

    // MARK: Meta

    /// A stored value (the zone's change token, the subscription, the folder).
    package func value(_ key: String) throws -> String? {
        try queue.read { db in try String.fetchOne(db, sql: "SELECT value FROM meta WHERE key = ?", arguments: [key]) }
    }

    /// Stores (or with nil removes) a value.
    package func setValue(_ value: String?, _ key: String) throws {
        try write { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO meta (key, value) VALUES (?, ?)", arguments: [key, value])
            } else {
                try db.execute(sql: "DELETE FROM meta WHERE key = ?", arguments: [key])
            }
        }
    }

    // MARK: Queue and exclusions

    /// Adds paths to the pending upload queue.
    package func enqueue(_ paths: [String]) throws {
        guard !paths.isEmpty else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try write { db in
            for path in paths { try db.execute(sql: "INSERT OR IGNORE INTO pending (path, since) VALUES (?, ?)", arguments: [path, now]) }
        }
    }

    /// Takes a path off the pending queue.
    package func dequeue(_ path: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM pending WHERE path = ?", arguments: [path]) }
    }

    /// The pending upload queue.
    package func pending() throws -> [String] {
        try queue.read { db in try String.fetchAll(db, sql: "SELECT path FROM pending ORDER BY since, path") }
    }

    /// Records whether `path` is kept back because it carries the skip-backup attribute, and
    /// the inode of the file that carried it (an editor saving by rename makes a new file
    /// without the attribute: the engine puts it back).
    package func setExcluded(_ path: String, _ excluded: Bool, inode: UInt64? = nil) throws {
        try write { db in
            if excluded {
                try db.execute(sql: "INSERT OR IGNORE INTO excluded (path) VALUES (?)", arguments: [path])
                try db.execute(sql: "DELETE FROM pending WHERE path = ?", arguments: [path])
                if let inode {
                    try db.execute(sql: "INSERT OR REPLACE INTO excluded_inode (path, inode) VALUES (?, ?)", arguments: [path, Int64(bitPattern: inode)])
                }
            } else {
                try db.execute(sql: "DELETE FROM excluded WHERE path = ?", arguments: [path])
                try db.execute(sql: "DELETE FROM excluded_inode WHERE path = ?", arguments: [path])
            }
        }
    }

    /// The inodes the excluded paths had when they were excluded.
    package func excludedInodes() throws -> [String: UInt64] {
        try queue.read { db in
            var result: [String: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT path, inode FROM excluded_inode") {
                result[row["path"]] = UInt64(bitPattern: row["inode"] as Int64)
            }
            return result
        }
    }

    /// The excluded paths.
    package func excluded() throws -> Set<String> {
        try queue.read { db in Set(try String.fetchAll(db, sql: "SELECT path FROM excluded")) }
    }

    /// The columns ``entry(_:)`` reads, in its order.
    static let itemColumns = "id, path, kind, size, mtime, inode, mode, hash, target, tag, base"

    /// The entry in a row of ``itemColumns``, read by position (by name, GRDB looks each column
    /// up, lowercasing names: ~1 % of a daemon's pass over 10,000 new files).
    static func entry(_ row: Row) -> JournalEntry {
        let stat = SyncStat(kind: SyncItemKind(rawValue: row[2]) ?? .file, size: row[3], modifiedNanoseconds: row[4],
                            inode: UInt64(bitPattern: row[5] as Int64), mode: UInt32(truncatingIfNeeded: row[6] as Int64))
        return JournalEntry(id: row[0], path: row[1], stat: stat, contentHash: row[7], target: row[8],
                            changeTag: row[9], baseHash: row[10])
    }
}
