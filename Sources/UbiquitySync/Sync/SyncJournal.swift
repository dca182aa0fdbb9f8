// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import Synchronization
import UbiquityCore
import UbiquityStore

/// The sync journal of one folder: its rows in the device's one database (`MetadataIndex`, the
/// `sync_` tables keyed by the journal's ID): per item, its ID, path, last synced state, server
/// change tag and sync state; the zone's change token; the queue of pending uploads; and the
/// items kept back (skip-backup). Every change is one transaction of the device database, and
/// a change of an item's sync state updates the item's index row in that same transaction
/// (metadata queries hear it on the index's change feed), so a daemon killed at any point
/// restarts from a consistent state and no state waits for a row to exist: a row indexed later
/// takes its state from the journal when it is inserted.
package final class SyncJournal: Sendable {
    /// The device database.
    package let database: MetadataIndex
    /// The journal's name in the database (one per folder, container and account).
    package let name: String
    /// The synced folder (absolute, canonical): the index rows of its items are `folder/PATH`.
    package let folder: String
    /// The key of this journal's rows.
    let scope: Int64
    /// The folder the journal was made for, when it was made for another one (the folder moved).
    package let previousFolder: String?
    /// The write transactions committed (or tried) since the journal was opened (for tests and
    /// the batching figures: a page of new files is one transaction, not one per file).
    let writeTransactions = Atomic<Int>(0)

    /// The journal `name` for `folder` in `database` (made if new).
    package init(database: MetadataIndex, name: String, folder: String) throws {
        self.database = database
        self.name = name
        self.folder = folder
        do {
            (scope, previousFolder) = try database.registerJournal(name: name, folder: folder)
        } catch {
            throw UbiquityError(.io, "cannot open the sync journal '\(name)'", underlying: error)
        }
    }

    /// An existing journal of `database` for reading (nothing is made).
    init(reading database: MetadataIndex, name: String, scope: Int64, folder: String) {
        self.database = database
        self.name = name
        self.folder = folder
        self.scope = scope
        previousFolder = nil
    }

    /// Runs `body` in one write transaction of the device database (counted in
    /// ``writeTransactions``); the index changes `body` makes are published when it commits.
    func write<T>(_ body: (Database, inout IndexDelta) throws -> T) throws -> T {
        writeTransactions.add(1, ordering: .relaxed)
        return try database.write("sync journal", syncStates: true, publishing: body)
    }

    /// Runs `body` in one write transaction that changes no index row.
    func write<T>(_ body: (Database) throws -> T) throws -> T {
        try write { db, _ in try body(db) }
    }

    /// Runs `body` in a read transaction.
    func read<T>(_ body: (Database) throws -> T) throws -> T {
        try database.read("sync journal", body)
    }

    /// The absolute path of the item at `relative`.
    func absolute(_ relative: String) -> String { folder + "/" + relative }

    // MARK: Items

    /// Every entry.
    package func entries() throws -> [JournalEntry] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT \(Self.itemColumns) FROM sync_items WHERE journal = ?", arguments: [scope]).map { Self.entry($0) }
        }
    }

    /// The entry with ID `id`.
    package func entry(id: String) throws -> JournalEntry? {
        try read { db in try entry(id: id, db) }
    }

    func entry(id: String, _ db: Database) throws -> JournalEntry? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.itemColumns) FROM sync_items WHERE journal = ? AND id = ?"),
                         arguments: [scope, id]).map { Self.entry($0) }
    }

    /// The entry at `path`.
    package func entry(path: String) throws -> JournalEntry? {
        try read { db in try entry(path: path, db) }
    }

    func entry(path: String, _ db: Database) throws -> JournalEntry? {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT \(Self.itemColumns) FROM sync_items WHERE journal = ? AND path = ?"),
                         arguments: [scope, path]).map { Self.entry($0) }
    }

    /// Inserts or replaces `entry` (an entry at the same path with another ID is replaced) with
    /// its sync state `status`, and takes its path off the pending queue; the item's index row
    /// gets the state in the same transaction.
    package func put(_ entry: JournalEntry, status: SyncItemStatus = .uploaded) throws {
        try putAll([entry], status: { _ in status })
    }

    /// ``putAll(_:enqueue:status:)`` with every entry uploaded, or uploading when enqueued.
    package func putAll(_ entries: [JournalEntry], enqueue: Bool = false) throws {
        try putAll(entries, enqueue: enqueue) { _ in enqueue ? .uploading : .uploaded }
    }

    /// Inserts or replaces several entries in one transaction (``put(_:status:)`` for each, the
    /// state of each from `status`); with `enqueue`, their paths are put on the pending queue
    /// instead of taken off it (new items journaled before their first upload). Without
    /// `indexing`, the states are the journal's only: index rows made from now on take them,
    /// those there already keep theirs until the next state (a small file's "uploading" that its
    /// "uploaded" follows within the pass). The notes of `forgettingSent`'s updates sent
    /// (``noteSent(_:)``) and the landing note `landing` (``noteLanding(_:key:)``) go in the same
    /// transaction.
    package func putAll(_ entries: [JournalEntry], enqueue: Bool = false, indexing: Bool = true, forgettingSent: Set<String> = [],
                        forgettingLanding landing: String? = nil, status: (JournalEntry) -> SyncItemStatus) throws {
        guard !entries.isEmpty || landing != nil else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        var states: [(path: String, status: SyncItemStatus)] = []
        states.reserveCapacity(entries.count)
        try write { db, delta in
            // statements compiled once per transaction, not once per entry; (`OR REPLACE` also
            // deletes an entry at the same path with another ID: `path` is unique)
            let insert = try db.cachedStatement(sql: """
                INSERT OR REPLACE INTO sync_items (journal, id, path, kind, size, mtime, inode, mode, hash, target, tag, base, state, birth)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
                """)
            let queue = try db.cachedStatement(sql: "INSERT OR IGNORE INTO sync_pending (journal, path, since) VALUES (?, ?, ?)")
            let dequeue = try db.cachedStatement(sql: "DELETE FROM sync_pending WHERE journal = ? AND path = ?")
            let include = try db.cachedStatement(sql: "DELETE FROM sync_excluded WHERE journal = ? AND path = ?")
            // (mostly nothing is excluded, and a receiver has nothing pending: then no lookups)
            let excludes = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM sync_excluded WHERE journal = ?)"),
                                             arguments: [scope]) ?? true
            let queued = try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM sync_pending WHERE journal = ?)"),
                                           arguments: [scope]) ?? true
            // an entry already journaled under its ID and path (an upload's answer after its new
            // item was journaled, an edit): updated in place, no index entry touched
            let update = try db.cachedStatement(sql: """
                UPDATE sync_items SET kind = ?, size = ?, mtime = ?, inode = ?, mode = ?, hash = ?, target = ?, tag = ?, base = ?, state = ?, birth = ?
                WHERE journal = ? AND id = ? AND path = ?
                """)
            for entry in entries {
                let state = status(entry)
                states.append((entry.path, state))
                if !enqueue {
                    try update.execute(arguments: [entry.stat.kind.rawValue, entry.stat.size, entry.stat.modifiedNanoseconds,
                                                   Int64(bitPattern: entry.stat.inode), Int64(entry.stat.mode), entry.contentHash, entry.target,
                                                   entry.changeTag, entry.baseHash, state.rawValue, entry.stat.birthNanoseconds, scope, entry.id, entry.path])
                    if db.changesCount > 0 {
                        if queued { try dequeue.execute(arguments: [scope, entry.path]) }
                        if excludes { try include.execute(arguments: [scope, entry.path]) }
                        continue
                    }
                }
                try insert.execute(arguments: [scope, entry.id, entry.path, entry.stat.kind.rawValue, entry.stat.size, entry.stat.modifiedNanoseconds,
                                               Int64(bitPattern: entry.stat.inode), Int64(entry.stat.mode), entry.contentHash, entry.target,
                                               entry.changeTag, entry.baseHash, state.rawValue, entry.stat.birthNanoseconds])
                if enqueue {
                    try queue.execute(arguments: [scope, entry.path, now])
                } else {
                    if queued { try dequeue.execute(arguments: [scope, entry.path]) }
                    if excludes { try include.execute(arguments: [scope, entry.path]) }
                }
            }
            if indexing { try applyStates(states, db, &delta) }
            if !forgettingSent.isEmpty {
                let forget = try db.cachedStatement(sql: "DELETE FROM sync_meta WHERE journal = ? AND key = ?")
                for id in forgettingSent { try forget.execute(arguments: [scope, Self.sentKey(id)]) }
            }
            if let landing {
                try db.cachedStatement(sql: "DELETE FROM sync_meta WHERE journal = ? AND key = ?").execute(arguments: [scope, landing])
            }
        }
    }

    /// Removes several entries (and their notes of updates sent) in one transaction.
    package func removeAll(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            let delete = try db.cachedStatement(sql: "DELETE FROM sync_items WHERE journal = ? AND id = ?")
            let forget = try db.cachedStatement(sql: "DELETE FROM sync_meta WHERE journal = ? AND key = ?")
            for id in ids {
                try delete.execute(arguments: [scope, id])
                try forget.execute(arguments: [scope, Self.sentKey(id)])
            }
        }
    }

    /// Removes the entry `id` (its eviction, pin and notes of updates sent too).
    package func remove(id: String) throws {
        try forget(ids: [id])
    }

    /// Removes the entries `ids` (their evictions, pins and notes of updates sent too) in one
    /// transaction.
    package func forget(ids: [String]) throws {
        guard !ids.isEmpty else { return }
        try write { db in
            let tables = try ["sync_items", "sync_evicted", "sync_pinned"].map { table in
                try db.cachedStatement(sql: "DELETE FROM \(table) WHERE journal = ? AND id = ?")
            }
            let sent = try db.cachedStatement(sql: "DELETE FROM sync_meta WHERE journal = ? AND key = ?")
            for id in ids {
                for statement in tables { try statement.execute(arguments: [scope, id]) }
                try sent.execute(arguments: [scope, Self.sentKey(id)])
            }
        }
    }

    /// Moves every entry at `from` or under it to `to` (a folder moved locally or remotely).
    package func movePrefix(from: String, to: String) throws {
        // (SQLite's substr counts characters, not bytes: the prefix's length in code points; the
        // subtree is the range from "from/" up to "from0", "0" following "/" in byte order)
        let cut = from.unicodeScalars.count + 2
        try write { db in
            try db.execute(sql: "UPDATE sync_items SET path = ? || substr(path, ?) WHERE journal = ? AND path > ? AND path < ?",
                           arguments: [to + "/", cut, scope, from + "/", from + "0"])
            try db.execute(sql: "UPDATE sync_items SET path = ? WHERE journal = ? AND path = ?", arguments: [to, scope, from])
            // skip-backup items move with their folder (or aside): still kept back at the new name
            try db.execute(sql: "UPDATE OR REPLACE sync_excluded SET path = ? || substr(path, ?) WHERE journal = ? AND path > ? AND path < ?",
                           arguments: [to + "/", cut, scope, from + "/", from + "0"])
            try db.execute(sql: "UPDATE OR REPLACE sync_excluded SET path = ? WHERE journal = ? AND path = ?", arguments: [to, scope, from])
            try db.execute(sql: "DELETE FROM sync_transfers WHERE journal = ? AND (path = ? OR (path > ? AND path < ?))",
                           arguments: [scope, from, from + "/", from + "0"])
        }
    }

    // MARK: Sync states

    /// Records the sync state of the items at `paths` (relative; journaled items keep it in their
    /// row) and updates their index rows (only those of `indexing`, when given), in one
    /// transaction.
    package func setStatus(_ status: SyncItemStatus, paths: [String], indexing: Set<String>? = nil) throws {
        guard !paths.isEmpty else { return }
        try write { db, delta in
            let update = try db.cachedStatement(sql: "UPDATE sync_items SET state = ? WHERE journal = ? AND path = ?")
            for path in paths { try update.execute(arguments: [status.rawValue, scope, path]) }
            try applyStates(paths.filter { indexing?.contains($0) ?? true }.map { ($0, status) }, db, &delta)
        }
    }

    /// The sync state recorded for the item at `path` (excluded when it is kept back); nil when
    /// the journal does not know it.
    package func state(path: String) throws -> SyncItemStatus? {
        try read { db in try MetadataIndex.journaledState(journal: scope, relative: path, db: db)?.status }
    }

    /// Gives the index rows of `states` (relative paths) their sync state (evicted items stay
    /// not downloaded), inside the caller's transaction; changed rows go in `delta`.
    func applyStates(_ states: [(path: String, status: SyncItemStatus)], _ db: Database, _ delta: inout IndexDelta) throws {
        guard !states.isEmpty else { return }
        let evicted = try evictedPaths(among: states.map(\.path), db)
        try database.applySyncStates(states.map { (absolute($0.path), $0.status, evicted.contains($0.path)) }, db: db, delta: &delta)
    }

    // MARK: Meta

    /// A stored value (the zone's change token, the subscription).
    package func value(_ key: String) throws -> String? {
        try read { db in
            try String.fetchOne(db, sql: "SELECT value FROM sync_meta WHERE journal = ? AND key = ?", arguments: [scope, key])
        }
    }

    /// Stores (or with nil removes) a value.
    package func setValue(_ value: String?, _ key: String) throws {
        try write { db in
            if let value {
                try db.execute(sql: "INSERT OR REPLACE INTO sync_meta (journal, key, value) VALUES (?, ?, ?)", arguments: [scope, key, value])
            } else {
                try db.execute(sql: "DELETE FROM sync_meta WHERE journal = ? AND key = ?", arguments: [scope, key])
            }
        }
    }

    /// The keys of the stored values that start with `prefix`.
    package func keys(withPrefix prefix: String) throws -> [String] {
        try read { db in
            try String.fetchAll(db, sql: "SELECT key FROM sync_meta WHERE journal = ? AND substr(key, 1, ?) = ? ORDER BY key",
                                arguments: [scope, prefix.unicodeScalars.count, prefix])
        }
    }

    /// Removes the stored values whose key starts with `prefix`.
    package func removeValues(withPrefix prefix: String) throws {
        try write { db in
            try db.execute(sql: "DELETE FROM sync_meta WHERE journal = ? AND substr(key, 1, ?) = ?",
                           arguments: [scope, prefix.unicodeScalars.count, prefix])
        }
    }

    // MARK: Sent, not confirmed

    /// The key of an item's notes of what was sent.
    static func sentKey(_ id: String) -> String { "sent:" + id }
    /// Hashes kept per item (the latest; an item saved again and again without an answer).
    static let sentPerItem = 8

    /// Notes the content hash of each update before it is sent, in one transaction: should the
    /// answer never come (a crash, a dropped connection), the server holds this device's own
    /// version under a change tag the journal never got; when that record comes back, or a later
    /// save is refused because of it, ``sentHashes(id:)`` tells it from another device's.
    /// Cleared when an answer is journaled (``putAll(_:enqueue:indexing:forgettingSent:status:)``).
    package func noteSent(_ sent: [(id: String, hash: String)]) throws {
        guard !sent.isEmpty else { return }
        try write { db in
            let read = try db.cachedStatement(sql: "SELECT value FROM sync_meta WHERE journal = ? AND key = ?")
            let store = try db.cachedStatement(sql: "INSERT OR REPLACE INTO sync_meta (journal, key, value) VALUES (?, ?, ?)")
            for (id, hash) in sent {
                var hashes = try String.fetchOne(read, arguments: [scope, Self.sentKey(id)])?.split(separator: ",").map(String.init) ?? []
                hashes.removeAll { $0 == hash }
                hashes.append(hash)
                try store.execute(arguments: [scope, Self.sentKey(id), hashes.suffix(Self.sentPerItem).joined(separator: ",")])
            }
        }
    }

    /// The content hashes of the item's updates sent and never confirmed (``noteSent(_:)``).
    package func sentHashes(id: String) throws -> Set<String> {
        Set(try value(Self.sentKey(id))?.split(separator: ",").map(String.init) ?? [])
    }

    // MARK: Queue and exclusions

    /// Adds paths to the pending upload queue.
    package func enqueue(_ paths: [String]) throws {
        guard !paths.isEmpty else { return }
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        try write { db in
            let queue = try db.cachedStatement(sql: "INSERT OR IGNORE INTO sync_pending (journal, path, since) VALUES (?, ?, ?)")
            for path in paths { try queue.execute(arguments: [scope, path, now]) }
        }
    }

    /// Takes a path off the pending queue.
    package func dequeue(_ path: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM sync_pending WHERE journal = ? AND path = ?", arguments: [scope, path]) }
    }

    /// The pending upload queue.
    package func pending() throws -> [String] {
        try read { db in try String.fetchAll(db, sql: "SELECT path FROM sync_pending WHERE journal = ? ORDER BY since, path", arguments: [scope]) }
    }

    /// Records whether `path` is kept back because it carries the skip-backup attribute, and
    /// the inode of the file that carried it (an editor saving by rename makes a new file
    /// without the attribute: the engine puts it back). The item's state (excluded, or
    /// uploading when included again) goes to its index row in the same transaction.
    package func setExcluded(_ path: String, _ excluded: Bool, inode: UInt64? = nil) throws {
        try write { db, delta in
            if excluded {
                try db.execute(sql: """
                    INSERT INTO sync_excluded (journal, path, inode) VALUES (?, ?, ?)
                    ON CONFLICT (journal, path) DO UPDATE SET inode = coalesce(excluded.inode, sync_excluded.inode)
                    """, arguments: [scope, path, inode.map { Int64(bitPattern: $0) }])
                try db.execute(sql: "DELETE FROM sync_pending WHERE journal = ? AND path = ?", arguments: [scope, path])
                try applyStates([(path, .excluded)], db, &delta)
            } else {
                try db.execute(sql: "DELETE FROM sync_excluded WHERE journal = ? AND path = ?", arguments: [scope, path])
                if db.changesCount > 0 { try applyStates([(path, .uploading)], db, &delta) }
            }
        }
    }

    /// The inodes the excluded paths had when they were excluded.
    package func excludedInodes() throws -> [String: UInt64] {
        try read { db in
            var result: [String: UInt64] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT path, inode FROM sync_excluded WHERE journal = ? AND inode IS NOT NULL",
                                        arguments: [scope]) {
                result[row[0]] = UInt64(bitPattern: row[1] as Int64)
            }
            return result
        }
    }

    /// The excluded paths.
    package func excluded() throws -> Set<String> {
        try read { db in Set(try String.fetchAll(db, sql: "SELECT path FROM sync_excluded WHERE journal = ?", arguments: [scope])) }
    }

    /// The columns ``entry(_:)`` reads, in its order.
    static let itemColumns = "id, path, kind, size, mtime, inode, mode, hash, target, tag, base, birth"

    /// The entry in a row of ``itemColumns`` (from column `offset` on), read by position (by
    /// name, GRDB looks each column up, lowercasing names: ~1 % of a daemon's pass over 10,000
    /// new files).
    static func entry(_ row: Row, from offset: Int = 0) -> JournalEntry {
        let stat = SyncStat(kind: SyncItemKind(rawValue: row[offset + 2]) ?? .file, size: row[offset + 3], modifiedNanoseconds: row[offset + 4],
                            inode: UInt64(bitPattern: row[offset + 5] as Int64), mode: UInt32(truncatingIfNeeded: row[offset + 6] as Int64),
                            birthNanoseconds: row[offset + 11])
        return JournalEntry(id: row[offset], path: row[offset + 1], stat: stat, contentHash: row[offset + 7], target: row[offset + 8],
                            changeTag: row[offset + 9], baseHash: row[offset + 10])
    }
}
