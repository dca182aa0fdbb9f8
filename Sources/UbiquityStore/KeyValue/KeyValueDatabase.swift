// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import UbiquityCore

/// The local file of one container's key-value store (SQLite through GRDB, WAL): every entry
/// with its encoded value, its modification timestamp and a "dirty" flag for the sync to upload,
/// plus a log of changes so that every process using the file learns which keys another
/// connection changed, and why.
///
/// Several processes (apps, the CLI, the daemon's sync) open one file at once; each write is one
/// `IMMEDIATE` transaction and checks the limits (``KeyValueLimits``) inside it. Values are
/// opaque here: the library encodes them (JSON, typed) and the server stores them as they are.
package final class KeyValueDatabase: Sendable {
    /// One key's row.
    package struct Entry: Sendable, Hashable {
        /// The key.
        package var key: String
        /// The encoded value; nil for a removed key (kept so that its removal syncs).
        package var encodedValue: String?
        /// When the value was set, in milliseconds since 1970 (by the device that set it).
        package var modified: Int64
        /// Whether the value was set here and not yet accepted by the server.
        package var dirty: Bool

        /// Makes an entry.
        package init(key: String, encodedValue: String?, modified: Int64, dirty: Bool) {
            self.key = key
            self.encodedValue = encodedValue
            self.modified = modified
            self.dirty = dirty
        }
    }

    /// A change another connection logged: its sequence, the reason (the raw value of
    /// `NSUbiquitousKeyValueStoreChangeReason`), the keys and who wrote it.
    package struct LoggedChange: Sendable, Hashable {
        /// The change's sequence number (increasing).
        package var sequence: Int64
        /// The reason's raw value (0 server change, 1 initial sync, 2 quota violation, 3 account change).
        package var reason: Int
        /// The keys changed.
        package var keys: [String]
        /// The writer's identifier (a store instance's, or the sync's).
        package var writer: String
    }

    /// An entry as the server has it, for ``applyServerEntries(_:reason:writer:syncState:)``.
    package struct ServerEntry: Sendable, Hashable {
        /// The key.
        package var key: String
        /// The encoded value; nil when the key is removed.
        package var encodedValue: String?
        /// The timestamp the server kept; nil when the record was deleted outright (no timestamp).
        package var modified: Int64?

        /// Makes a server entry.
        package init(key: String, encodedValue: String?, modified: Int64?) {
            self.key = key
            self.encodedValue = encodedValue
            self.modified = modified
        }
    }

    /// The file, nil in memory.
    package let path: String?
    let writer: DatabaseQueue
    let logger: Logger
    /// How many log rows are kept; a reader further behind reloads everything.
    static let logLength: Int64 = 1000

    /// Whether the file was found corrupt when opened and replaced by an empty one (the old one
    /// is kept beside it as `<path>.corrupt-<date>`; the sync downloads the values again).
    package let wasRebuilt: Bool

    /// Opens (creating folders and file if needed) the store at `path`. A file that is not a
    /// database or is corrupt is moved aside (with its WAL) and replaced by an empty store, with
    /// a warning logged.
    package init(path: String, logger: Logger) throws {
        self.path = path
        self.logger = logger
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            try UbiquityPaths.ensureDirectory(URL(fileURLWithPath: folder, isDirectory: true))
        }
        try? PrivateFolder.prepareFile(path)  // private whatever the umask
        do {
            writer = try Self.open(path)
            wasRebuilt = false
        } catch let error as DatabaseError where error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB {
            let aside = path + ".corrupt-" + String(Int64(Date().timeIntervalSince1970))
            logger.warning("the key-value store is corrupt; moving it aside and starting an empty one (the sync downloads the values again)",
                           metadata: ["path": "\(path)", "movedTo": "\(aside)", "error": "\(error)"])
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                guard rename(path + suffix, aside + suffix) == 0 else { throw UbiquityError.posix("rename", path: path + suffix) }
            }
            do {
                writer = try Self.open(path)
            } catch {
                throw UbiquityError(.io, "cannot create the key-value store '\(path)'", underlying: error)
            }
            wasRebuilt = true
        } catch {
            throw UbiquityError(.io, "cannot open the key-value store '\(path)'", underlying: error)
        }
    }

    static func open(_ path: String) throws -> DatabaseQueue {
        var configuration = configuration()
        configuration.journalMode = .wal
        let queue = try DatabaseQueue(path: path, configuration: configuration)
        try migrator.migrate(queue)
        return queue
    }

    /// A store in memory (tests, and a fallback when the file cannot be opened).
    package init(inMemoryWithLogger logger: Logger) throws {
        path = nil
        wasRebuilt = false
        self.logger = logger
        do {
            writer = try DatabaseQueue(configuration: Self.configuration())
            try Self.migrator.migrate(writer)
        } catch {
            throw UbiquityError(.io, "cannot create an in-memory key-value store", underlying: error)
        }
    }

    static func configuration() -> Configuration {
        var config = Configuration()
        config.busyMode = .timeout(10)
        config.label = "KeyValueDatabase"
        return config
    }

    static var migrator: DatabaseMigrator {
        var migrator = DatabaseMigrator()
        migrator.registerMigration("v1") { db in
            try db.execute(sql: """
                CREATE TABLE entries (
                    key TEXT PRIMARY KEY NOT NULL,
                    value TEXT,
                    modified INTEGER NOT NULL,
                    dirty INTEGER NOT NULL DEFAULT 0
                );
                CREATE INDEX entries_dirty ON entries(dirty) WHERE dirty = 1;
                CREATE TABLE change_log (
                    seq INTEGER PRIMARY KEY AUTOINCREMENT,
                    reason INTEGER NOT NULL,
                    keys TEXT NOT NULL,
                    writer TEXT NOT NULL
                );
                CREATE TABLE sync_state (
                    name TEXT PRIMARY KEY NOT NULL,
                    value TEXT NOT NULL
                );
                """)
        }
        return migrator
    }

    // MARK: - Reading

    /// Every row, removed keys included.
    package func allEntries() throws -> [String: Entry] {
        try read("reading the entries") { db in
            var result: [String: Entry] = [:]
            for row in try Row.fetchAll(db, sql: "SELECT key, value, modified, dirty FROM entries") {
                let entry = Self.entry(row)
                result[entry.key] = entry
            }
            return result
        }
    }

    /// The rows of `keys` (missing ones are left out).
    package func entries(_ keys: [String]) throws -> [String: Entry] {
        guard !keys.isEmpty else { return [:] }
        return try read("reading entries") { db in try Self.entries(db, keys) }
    }

    /// The rows set here and not yet accepted by the server, oldest first.
    package func dirtyEntries() throws -> [Entry] {
        try read("reading the entries to upload") { db in
            try Row.fetchAll(db, sql: "SELECT key, value, modified, dirty FROM entries WHERE dirty = 1 ORDER BY modified")
                .map(Self.entry)
        }
    }

    /// SQLite's `PRAGMA data_version` on this connection: it changes when another connection
    /// (another process, or another store instance) commits a change to the file.
    package func dataVersion() throws -> Int64 {
        try read("reading the data version") { db in try Int64.fetchOne(db, sql: "PRAGMA data_version") ?? 0 }
    }

    /// The last logged change's sequence (0 when none).
    package func lastChangeSequence() throws -> Int64 {
        try read("reading the change log") { db in try Int64.fetchOne(db, sql: "SELECT max(seq) FROM change_log") ?? 0 }
    }

    /// The changes logged after `sequence`, and whether some were pruned (the caller is too
    /// far behind and should reload everything).
    package func changes(after sequence: Int64) throws -> (changes: [LoggedChange], missed: Bool) {
        try read("reading the change log") { db in
            let oldest = try Int64.fetchOne(db, sql: "SELECT min(seq) FROM change_log")
            let rows = try Row.fetchAll(db, sql: "SELECT seq, reason, keys, writer FROM change_log WHERE seq > ? ORDER BY seq",
                                        arguments: [sequence])
            let changes = rows.map { row in
                LoggedChange(sequence: row["seq"], reason: row["reason"],
                             keys: (try? JSONDecoder().decode([String].self, from: Data((row["keys"] as String).utf8))) ?? [],
                             writer: row["writer"])
            }
            let missed = oldest.map { $0 > sequence + 1 } ?? false
            return (changes, missed)
        }
    }

    /// A value the sync keeps (its change token), nil when unset.
    package func syncState(_ name: String) throws -> String? {
        try read("reading the sync state") { db in
            try String.fetchOne(db, sql: "SELECT value FROM sync_state WHERE name = ?", arguments: [name])
        }
    }

    /// Store and usage: the number of keys and the bytes they count for.
    package func usage() throws -> (keys: Int, bytes: Int) {
        try read("reading the usage") { db in try Self.usage(db) }
    }

    // MARK: - Writing

    /// The sync state's name for this clock's offset from the server's, in milliseconds (the
    /// daemon measures it; ``set(_:encodedValue:writer:now:)`` adds it, so last-writer-wins
    /// compares times on the server's clock, not on devices' clocks that may disagree).
    package static let clockOffsetKey = "clockOffsetMilliseconds"

    /// Records how many milliseconds the server's clock is ahead of this one (nil: forget it).
    package func setClockOffset(_ milliseconds: Int64?) throws {
        try write("recording the clock offset") { db in
            if let milliseconds {
                try db.execute(sql: "INSERT INTO sync_state(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                               arguments: [Self.clockOffsetKey, String(milliseconds)])
            } else {
                try db.execute(sql: "DELETE FROM sync_state WHERE name = ?", arguments: [Self.clockOffsetKey])
            }
        }
    }

    /// Sets `key` to `encodedValue` (nil removes it), marked dirty, with a timestamp of `now`
    /// (default: this clock corrected by the recorded offset from the server's clock), or one
    /// past the previous one, so a later set always wins over an earlier one here.
    /// Logs the change as `writer`'s, so other connections hear of it.
    ///
    /// - Returns: the new row, or nil when nothing changed (removing a missing key).
    /// - Throws: `invalidArgument` for a bad key; `quotaExceeded` when the store would hold more
    ///   than 1024 keys or 1 MB (nothing is written).
    @discardableResult
    package func set(_ key: String, encodedValue: String?, writer writerID: String, now: Int64? = nil) throws -> Entry? {
        if let problem = KeyValueLimits.problem(withKey: key) {
            throw UbiquityError(.invalidArgument, "key-value store: \(problem)")
        }
        return try write("setting '\(key)'") { db -> Entry? in
            let previous = try Self.entries(db, [key])[key]
            if encodedValue == nil, previous?.encodedValue == nil { return nil }
            if let encodedValue {
                let (keys, bytes) = try Self.usage(db)
                let oldSize = KeyValueLimits.size(key: key, encodedValue: previous?.encodedValue)
                let newKeys = keys + (previous?.encodedValue == nil ? 1 : 0)
                let newBytes = bytes - oldSize + KeyValueLimits.size(key: key, encodedValue: encodedValue)
                if newKeys > KeyValueLimits.maximumKeys {
                    throw UbiquityError(.quotaExceeded, "key-value store: setting '\(key)' would make \(newKeys) keys; a store may hold at most \(KeyValueLimits.maximumKeys)")
                }
                if newBytes > KeyValueLimits.maximumTotalBytes {
                    throw UbiquityError(.quotaExceeded, "key-value store: setting '\(key)' would make the store \(newBytes) bytes; a store may hold at most \(KeyValueLimits.maximumTotalBytes) (keys plus values)")
                }
            }
            let offset = try String.fetchOne(db, sql: "SELECT value FROM sync_state WHERE name = ?", arguments: [Self.clockOffsetKey])
                .flatMap { Int64($0) } ?? 0
            let modified = max(now ?? Int64(Date().timeIntervalSince1970 * 1000) + offset, (previous?.modified ?? 0) + 1)
            let entry = Entry(key: key, encodedValue: encodedValue, modified: modified, dirty: true)
            try Self.put(db, entry)
            try Self.log(db, reason: 0, keys: [key], writer: writerID)
            return entry
        }
    }

    /// Clears the dirty flag of `entry` if the row is still exactly that version (the server
    /// accepted it); a row set again meanwhile stays dirty. Returns whether it was cleared.
    @discardableResult
    package func markUploaded(_ entry: Entry) throws -> Bool {
        try write("marking '\(entry.key)' uploaded") { db in
            try db.execute(sql: "UPDATE entries SET dirty = 0 WHERE key = ? AND modified = ? AND value IS ? AND dirty = 1",
                           arguments: [entry.key, entry.modified, entry.encodedValue])
            return db.changesCount > 0
        }
    }

    /// Writes what the server has, last writer wins by timestamp (``KeyValueMerge``): a local row
    /// set here and not uploaded yet with a later timestamp is kept; everything else takes the
    /// server's value (and is clean). Sets `syncState` (nil values delete) in the same transaction and logs the
    /// keys whose visible value changed with `reason`. Returns those keys.
    @discardableResult
    package func applyServerEntries(_ serverEntries: [ServerEntry], reason: Int, writer writerID: String,
                                   syncState: [String: String?] = [:]) throws -> [String] {
        try write("applying server changes") { db in
            let local = try Self.entries(db, serverEntries.map(\.key))
            var changed: [String] = []
            for server in serverEntries {
                guard case .write(let entry, let visible) = KeyValueMerge.decide(local: local[server.key], server: server) else { continue }
                try Self.put(db, entry)
                if visible { changed.append(server.key) }
            }
            for (name, value) in syncState {
                if let value {
                    try db.execute(sql: "INSERT INTO sync_state(name, value) VALUES (?, ?) ON CONFLICT(name) DO UPDATE SET value = excluded.value",
                                   arguments: [name, value])
                } else {
                    try db.execute(sql: "DELETE FROM sync_state WHERE name = ?", arguments: [name])
                }
            }
            if !changed.isEmpty { try Self.log(db, reason: reason, keys: changed, writer: writerID) }
            return changed
        }
    }

    /// Forgets every entry and the sync state (the change token) because the signed-in account
    /// changed: the values belonged to the other account, and the new one's arrive with its
    /// first sync. Logs the removed keys with `reason` (account change, 3) in the same transaction,
    /// so every process using the store hears of it. Returns the keys.
    @discardableResult
    package func resetForAccountChange(reason: Int = 3, writer writerID: String) throws -> [String] {
        try write("resetting for an account change") { db in
            let keys = try String.fetchAll(db, sql: "SELECT key FROM entries WHERE value IS NOT NULL ORDER BY key")
            try db.execute(sql: "DELETE FROM entries")
            try db.execute(sql: "DELETE FROM sync_state")
            try Self.log(db, reason: reason, keys: keys, writer: writerID)
            return keys
        }
    }

    /// Logs a change that wrote nothing (an account change, say), so other connections hear of it.
    package func logChange(reason: Int, keys: [String], writer writerID: String) throws {
        try write("logging a change") { db in try Self.log(db, reason: reason, keys: keys, writer: writerID) }
    }

    // MARK: - Helpers

    static func entry(_ row: Row) -> Entry {
        Entry(key: row["key"], encodedValue: row["value"], modified: row["modified"], dirty: (row["dirty"] as Int64) != 0)
    }

    static func entries(_ db: Database, _ keys: [String]) throws -> [String: Entry] {
        var result: [String: Entry] = [:]
        for chunk in stride(from: 0, to: keys.count, by: 500).map({ Array(keys[$0..<min($0 + 500, keys.count)]) }) {
            let marks = Array(repeating: "?", count: chunk.count).joined(separator: ",")
            for row in try Row.fetchAll(db, sql: "SELECT key, value, modified, dirty FROM entries WHERE key IN (\(marks))",
                                        arguments: StatementArguments(chunk)) {
                let entry = entry(row)
                result[entry.key] = entry
            }
        }
        return result
    }

    static func usage(_ db: Database) throws -> (keys: Int, bytes: Int) {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT count(*) AS keys, coalesce(sum(length(CAST(key AS BLOB)) + length(CAST(value AS BLOB))), 0) AS bytes
            FROM entries WHERE value IS NOT NULL
            """) else { return (0, 0) }
        let keys: Int = row["keys"]
        let bytes: Int = row["bytes"]
        return (keys, bytes)
    }

    static func put(_ db: Database, _ entry: Entry) throws {
        try db.execute(sql: """
            INSERT INTO entries(key, value, modified, dirty) VALUES (?, ?, ?, ?)
            ON CONFLICT(key) DO UPDATE SET value = excluded.value, modified = excluded.modified, dirty = excluded.dirty
            """, arguments: [entry.key, entry.encodedValue, entry.modified, entry.dirty ? 1 : 0])
    }

    static func log(_ db: Database, reason: Int, keys: [String], writer: String) throws {
        let encoded = String(decoding: try JSONEncoder().encode(keys), as: UTF8.self)
        try db.execute(sql: "INSERT INTO change_log(reason, keys, writer) VALUES (?, ?, ?)", arguments: [reason, encoded, writer])
        try db.execute(sql: "DELETE FROM change_log WHERE seq <= last_insert_rowid() - ?", arguments: [logLength])
    }

    func write<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.transaction(kind: .immediate, body)
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "key-value store \(path ?? "in memory"): \(what) failed", underlying: error)
        }
    }

    func read<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "key-value store \(path ?? "in memory"): \(what) failed", underlying: error)
        }
    }
}
