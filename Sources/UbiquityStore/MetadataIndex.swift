import Foundation
import GRDB
import Logging
import Synchronization
import UbiquityCore

/// The metadata index: one SQLite database (GRDB, WAL) of every item under the indexed roots,
/// queried by metadata queries and kept current by the indexer.
///
/// One writer per process (GRDB serializes writes); reads run concurrently with it. Every write
/// returns an ``IndexDelta`` describing the rows it touched and publishes it on ``changes``, the
/// device's one change feed, in commit order.
///
/// In the daemon this is the device's one database: beside the index rows it holds the sync
/// journals (`sync_` tables, written by `SyncJournal` in transactions of
/// ``write(_:publishing:)``, so an item's sync state commits with its journal row).
///
/// If the database file is deleted while open, connections already open keep using the unlinked
/// file, new reader connections fail (`UbiquityError(.io)`, "unable to open database file") and
/// nothing reaches the path any more; open a new index at the path (it starts empty) and rescan.
package final class MetadataIndex: Sendable {
    /// The database (a pool for files, a queue in memory).
    let writer: any DatabaseWriter
    /// The database file, nil in memory.
    package let path: String?
    let logger: Logger
    /// Whether the file was found corrupt when opened and replaced by an empty one.
    package let wasRebuilt: Bool
    /// Scan sessions in progress (``beginScan(root:)``): rows written meanwhile count as seen.
    let activeScans = Mutex<Set<Int64>>([])
    let nextScanID = Mutex<Int64>(1)
    /// The change feed: every committed write's delta, in commit order (published on the
    /// writer's queue right after the commit, before the next write starts).
    let feed = Broadcaster<IndexDelta>()
    /// The same feed without the writes that change sync states only (``fileChanges()``).
    let fileFeed = Broadcaster<IndexDelta>()
    /// The folders of the sync journals in this database (``SyncJournalFolders``), read once and
    /// kept current by ``registerJournal(name:folder:)``: a row inserted under one of them takes
    /// its sync state from the journal.
    let journalFolders = Mutex<SyncJournalFolders?>(nil)

    /// Opens (creating folders and file if needed) the index at `path` and migrates it.
    ///
    /// If the file is not a database or is corrupt (`SQLITE_NOTADB`, `SQLITE_CORRUPT`), it is moved
    /// aside to `path.corrupt-<date>` with its WAL, a new empty index is created, a warning is
    /// logged and ``wasRebuilt`` is true; the indexer then rebuilds it by scanning.
    package init(path: String, logger: Logger) throws {
        self.path = path
        self.logger = logger
        let folder = (path as NSString).deletingLastPathComponent
        if !folder.isEmpty {
            do {
                try FileManager.default.createDirectory(atPath: folder, withIntermediateDirectories: true)
            } catch {
                throw UbiquityError(.io, "Cannot create the folder of the metadata index '\(path)'", underlying: error)
            }
        }
        // private whatever the umask: names, sizes and times of the user's files
        try? PrivateFolder.prepareFile(path)
        do {
            writer = try Self.openPool(path: path)
            wasRebuilt = false
        } catch let error as DatabaseError where Self.isCorruption(error) {
            let aside = path + ".corrupt-" + Self.timestamp()
            logger.warning("The metadata index is corrupt; moving it aside and rebuilding it", metadata: [
                "path": "\(path)", "movedTo": "\(aside)", "error": "\(error)",
            ])
            for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
                guard rename(path + suffix, aside + suffix) == 0 else {
                    throw UbiquityError.posix("rename", path: path + suffix)
                }
            }
            do {
                writer = try Self.openPool(path: path)
            } catch {
                throw UbiquityError(.io, "Cannot create the metadata index '\(path)'", underlying: error)
            }
            wasRebuilt = true
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Cannot open the metadata index '\(path)'", underlying: error)
        }
    }

    /// An index in memory, for the library's no-daemon mode and tests.
    package static func inMemory(logger: Logger) throws -> MetadataIndex {
        do {
            let queue = try DatabaseQueue(configuration: configuration())
            try migrator.migrate(queue)
            return MetadataIndex(writer: queue, logger: logger)
        } catch {
            throw UbiquityError(.io, "Cannot create an in-memory metadata index", underlying: error)
        }
    }

    private init(writer: any DatabaseWriter, path: String? = nil, logger: Logger) {
        self.writer = writer
        self.path = path
        self.logger = logger
        self.wasRebuilt = false
    }

    /// The index file at `path` opened for reading only (no migration, no rebuild, nothing
    /// written: for the CLI beside a running daemon); nil when there is no such file or it is
    /// not a database. Reads of tables an older daemon has not made yet fail.
    package static func openForReading(path: String, logger: Logger) -> MetadataIndex? {
        guard FileManager.default.fileExists(atPath: path) else { return nil }
        var configuration = configuration()
        configuration.readonly = true
        configuration.busyMode = .timeout(2)
        guard let queue = try? DatabaseQueue(path: path, configuration: configuration) else { return nil }
        return MetadataIndex(writer: queue, path: path, logger: logger)
    }

    private static func openPool(path: String) throws -> DatabasePool {
        let pool = try DatabasePool(path: path, configuration: configuration())
        // damage a read does not meet at once (a page in the middle) is found now, before sync
        // relies on the journals in the file: a damaged file is moved aside like a corrupt one
        let check = try pool.read { db in try String.fetchOne(db, sql: "PRAGMA quick_check") }
        guard check == "ok" else { throw DatabaseError(resultCode: .SQLITE_CORRUPT, message: "quick_check: \(check ?? "no answer")") }
        try migrator.migrate(pool)
        try finishInterruptedBulkLoad(pool)
        return pool
    }

    /// Runs `body` in one write transaction with the SQLite file at `path` attached as `alias`
    /// (read from, never written: importing a legacy file), and publishes nothing.
    package func withAttached<T>(_ path: String, as alias: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.writeWithoutTransaction { db in
                try db.execute(sql: "ATTACH DATABASE ? AS \(alias)", arguments: [path])
                defer { try? db.execute(sql: "DETACH DATABASE \(alias)") }
                return try db.inTransactionReturning(body)
            }
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Metadata index: attaching '\(path)' failed", underlying: error)
        }
    }

    static func isCorruption(_ error: DatabaseError) -> Bool {
        error.resultCode == .SQLITE_CORRUPT || error.resultCode == .SQLITE_NOTADB
    }

    private static func timestamp() -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = "yyyyMMdd'T'HHmmss'Z'"
        return formatter.string(from: Date())
    }

    /// A new subscription to the change feed: the delta of every write committed from now on,
    /// in commit order (the indexer's, and sync's changes of the rows' ubiquitous attributes).
    package func changes() -> AsyncStream<IndexDelta> { feed.subscribe() }

    /// A new subscription to what changes on disk: the change feed's deltas of the indexer's
    /// writes (items added, changed, removed, moved, in commit order), without those that only
    /// change sync states. Sync follows the folder it syncs through it: the index's watcher and
    /// walker are the only ones that look at the disk for changes.
    package func fileChanges() -> AsyncStream<IndexDelta> { fileFeed.subscribe() }

    /// Whether anybody follows the whole change feed now (when nobody does, sync-state writes
    /// skip reading the records a delta would carry).
    package var hasSubscribers: Bool { feed.subscriberCount > 0 }

    /// Ends every subscription to the change feed (the index is closed or replaced).
    package func finishChanges() {
        feed.finish()
        fileFeed.finish()
    }

    /// Runs `body` in a write transaction, turning database errors into ``UbiquityError``.
    func write<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.write(body)
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Metadata index: \(what) failed", underlying: error)
        }
    }

    /// Runs `body` in one write transaction and, once it committed, publishes the delta `body`
    /// built on the change feed, before any later write runs: subscribers see the changes in
    /// commit order. Sync's journal writes come here with their index changes (`SyncJournal`),
    /// as `syncStates` (they are not published to ``fileChanges()``).
    package func write<T>(_ what: String, syncStates: Bool = false, publishing body: (Database, inout IndexDelta) throws -> T) throws -> T {
        do {
            var delta = IndexDelta()
            return try writer.transaction({ db in
                delta = IndexDelta()
                return try body(db, &delta)
            }, afterCommit: { _, _ in
                guard !delta.isEmpty else { return }
                feed.yield(delta)
                if !syncStates { fileFeed.yield(delta) }
            })
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Metadata index: \(what) failed", underlying: error)
        }
    }

    /// Publishes names the watcher reported that cannot be rows (``IndexDelta/unindexable``) on
    /// the change feed, in order with the writes.
    package func publishUnindexable(_ paths: [String]) {
        guard !paths.isEmpty else { return }
        let delta = IndexDelta(unindexable: paths)
        writer.writeWithoutTransaction { _ in
            feed.yield(delta)
            fileFeed.yield(delta)
        }
    }

    /// ``write(_:publishing:)`` for a body that returns its delta.
    func writeDelta(_ what: String, _ body: (Database) throws -> IndexDelta) throws -> IndexDelta {
        try write(what, publishing: { db, delta in
            delta = try body(db)
            return delta
        })
    }

    /// Runs `body` in a read transaction, turning database errors into ``UbiquityError``.
    package func read<T>(_ what: String, _ body: (Database) throws -> T) throws -> T {
        do {
            return try writer.read(body)
        } catch let error as UbiquityError {
            throw error
        } catch {
            throw UbiquityError(.io, "Metadata index: \(what) failed", underlying: error)
        }
    }
}
