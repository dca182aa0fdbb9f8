import Foundation
import GRDB
import UbiquityCore

/// A full scan of one subtree in progress (``MetadataIndex/beginScan(root:)``).
package struct IndexScanSession: Sendable, Hashable {
    /// The session number (also written to `scan_generation` of rows the scan writes).
    package let id: Int64
    /// The absolute path of the scanned subtree.
    package let root: String
    /// Whether the subtree had no rows when the scan began (a first scan into an empty index):
    /// its rows are inserted without looking for existing ones, and nothing is removed at the
    /// end (there was nothing unseen to remove).
    package var isBulk = false
}

extension MetadataIndex {
    /// Registers `root` as an indexed root (listed in ``status()``). Does nothing if it is one.
    package func registerRoot(_ root: String) throws {
        let root = Self.normalize(root)
        try write("register root") { db in
            try db.execute(sql: "INSERT OR IGNORE INTO roots (path) VALUES (?)", arguments: [root])
        }
    }

    /// Forgets `root`; with `removingItems`, deletes its rows too.
    package func unregisterRoot(_ root: String, removingItems: Bool) throws -> IndexDelta {
        let root = Self.normalize(root)
        return try writeDelta("unregister root") { db in
            try db.execute(sql: "DELETE FROM roots WHERE path = ?", arguments: [root])
            var delta = IndexDelta()
            if removingItems {
                let range = Self.subtreeRange(of: root)
                let paths = try String.fetchAll(db, sql: "SELECT path FROM items WHERE path >= ? AND path < ? ORDER BY path",
                                                arguments: [range.lower, range.upper])
                try db.execute(sql: "DELETE FROM items WHERE path >= ? AND path < ?", arguments: [range.lower, range.upper])
                delta.removed = paths
            }
            return delta
        }
    }

    /// Marks whether `root` needs a rescan (events were lost), with a message for the user.
    package func setRescanPending(root: String, _ pending: Bool, message: String?) throws {
        let root = Self.normalize(root)
        try write("set rescan pending") { db in
            try db.execute(sql: """
                INSERT INTO roots (path, rescan_pending, message) VALUES (?, ?, ?)
                ON CONFLICT(path) DO UPDATE SET rescan_pending = excluded.rescan_pending, message = excluded.message
                """, arguments: [root, pending, message])
        }
    }

    /// Starts a streaming full scan of the rows strictly under `root`: feed every item found
    /// with ``addScanned(_:to:)``, then ``finishScan(_:)`` deletes the rows under `root` that
    /// were not seen. Rows written by ``apply(_:)`` meanwhile count as seen. Memory stays bounded:
    /// the seen set lives in a temporary table.
    package func beginScan(root: String, bulk: Bool = false) throws -> IndexScanSession {
        let root = Self.normalize(root)
        let id = nextScanID.withLock { value in
            defer { value += 1 }
            return value
        }
        try write("begin scan") { db in
            // (cached statements: a burst of new folders begins and finishes a scan for each)
            try db.cachedStatement(sql: """
                CREATE TEMP TABLE IF NOT EXISTS scan_seen (
                    session INTEGER NOT NULL, item_id INTEGER NOT NULL, PRIMARY KEY (session, item_id)
                ) WITHOUT ROWID
                """).execute()
            try db.cachedStatement(sql: "UPDATE roots SET last_scan_started = ? WHERE path = ?")
                .execute(arguments: [Date().timeIntervalSince1970, root])
        }
        // (a bulk scan tracks nothing seen: it removes nothing at its end)
        if !bulk { activeScans.withLock { _ = $0.insert(id) } }
        return IndexScanSession(id: id, root: root, isBulk: bulk)
    }

    /// Upserts one batch of scanned records (with the quick-check of ``apply(_:)``) and marks them
    /// seen by `session`.
    package func addScanned(_ records: [IndexRecord], to session: IndexScanSession) throws -> IndexDelta {
        guard !records.isEmpty else { return IndexDelta() }
        let sessions = activeScans.withLock { $0 }
        guard session.isBulk || sessions.contains(session.id) else {
            throw UbiquityError(.invalidArgument, "Scan session \(session.id) of '\(session.root)' is not active")
        }
        return try writeDelta("add scanned items") { db in
            var delta = IndexDelta()
            try upsert(records, db: db, generation: session.id, sessions: sessions, delta: &delta, assumingNew: session.isBulk)
            return delta
        }
    }

    /// Ends `session`: deletes the rows under its root that were not seen (listed as removed)
    /// and, when the root is registered, records the scan's end and clears its pending rescan.
    package func finishScan(_ session: IndexScanSession) throws -> IndexDelta {
        defer { activeScans.withLock { _ = $0.remove(session.id) } }
        guard !session.isBulk else {
            try write("finish scan") { db in
                try db.cachedStatement(sql: """
                    UPDATE roots SET last_scan_finished = ?, rescan_pending = 0, message = NULL WHERE path = ?
                    """).execute(arguments: [Date().timeIntervalSince1970, session.root])
            }
            return IndexDelta()
        }
        let range = Self.subtreeRange(of: session.root)
        return try writeDelta("finish scan") { db in
            let unseen = """
                path >= ? AND path < ? AND id NOT IN (SELECT item_id FROM temp.scan_seen WHERE session = ?)
                """
            let arguments: StatementArguments = [range.lower, range.upper, session.id]
            let paths = try String.fetchAll(db.cachedStatement(sql: "SELECT path FROM items WHERE \(unseen) ORDER BY path"), arguments: arguments)
            if !paths.isEmpty {
                try db.cachedStatement(sql: "DELETE FROM items WHERE \(unseen)").execute(arguments: arguments)
            }
            try db.cachedStatement(sql: "DELETE FROM temp.scan_seen WHERE session = ?").execute(arguments: [session.id])
            try db.cachedStatement(sql: """
                UPDATE roots SET last_scan_finished = ?, rescan_pending = 0, message = NULL WHERE path = ?
                """).execute(arguments: [Date().timeIntervalSince1970, session.root])
            return IndexDelta(removed: paths)
        }
    }

    /// Abandons `session` without deleting anything (the scan failed).
    package func cancelScan(_ session: IndexScanSession) {
        activeScans.withLock { _ = $0.remove(session.id) }
        _ = try? write("cancel scan") { db in
            try db.execute(sql: "DELETE FROM temp.scan_seen WHERE session = ?", arguments: [session.id])
        }
    }

    /// After a full scan of `root` found `seen`: upserts them and removes the rows under `root`
    /// that are not among them. For large trees prefer the streaming ``beginScan(root:)``.
    package func reconcile(root: String, seen: [IndexRecord]) throws -> IndexDelta {
        let session = try beginScan(root: root)
        do {
            var delta = IndexDelta()
            var start = 0
            while start < seen.count {
                let end = min(start + 5_000, seen.count)
                delta.merge(try addScanned(Array(seen[start..<end]), to: session))
                start = end
            }
            delta.merge(try finishScan(session))
            return delta
        } catch {
            cancelScan(session)
            throw error
        }
    }
}
