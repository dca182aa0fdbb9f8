// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityIndex

/// One item's transfer state in the journal: what runs, how far, and the last errors.
package struct SyncTransfer: Sendable, Hashable {
    /// Whether an upload runs.
    package var isUploading = false
    /// Upload progress, 0…100.
    package var percentUploaded: Double?
    /// The last upload's error, until one succeeds.
    package var uploadError: String?
    /// Whether a download runs.
    package var isDownloading = false
    /// Download progress, 0…100.
    package var percentDownloaded: Double?
    /// Whether a download was asked for and has not finished.
    package var downloadRequested = false
    /// The last download's error, until one succeeds.
    package var downloadError: String?

    /// An idle transfer.
    package init() {}

    /// Whether there is nothing to keep (nothing runs, no error, nothing asked for).
    var isIdle: Bool { !isUploading && !isDownloading && !downloadRequested && uploadError == nil && downloadError == nil }
}

extension SyncJournal {
    /// Tables added with eviction: evicted items (by ID) and transfers (by path).
    static let evictionSchema = """
        CREATE TABLE IF NOT EXISTS evicted (id TEXT PRIMARY KEY, since INTEGER NOT NULL);
        CREATE TABLE IF NOT EXISTS transfers (
            path TEXT PRIMARY KEY, uploading INTEGER NOT NULL DEFAULT 0, uploaded REAL, upload_error TEXT,
            downloading INTEGER NOT NULL DEFAULT 0, downloaded REAL, requested INTEGER NOT NULL DEFAULT 0, download_error TEXT);
        """

    // MARK: Evicted items

    /// Records whether item `id` is evicted (a placeholder stands for it).
    package func setEvicted(_ id: String, _ evicted: Bool) throws {
        try setMarked(id, evicted, in: "evicted")
    }

    /// Adds item `id` to, or removes it from, one of the tables of marked IDs (`evicted`,
    /// `pinned`: `id` and the time it was marked).
    func setMarked(_ id: String, _ marked: Bool, in table: StaticString) throws {
        try write { db in
            if marked {
                try db.execute(sql: "INSERT OR REPLACE INTO \(table) (id, since) VALUES (?, ?)",
                               arguments: [id, Int64(Date().timeIntervalSince1970 * 1000)])
            } else {
                try db.execute(sql: "DELETE FROM \(table) WHERE id = ?", arguments: [id])
            }
        }
    }

    /// The IDs of the evicted items.
    package func evicted() throws -> Set<String> {
        try queue.read { db in Set(try String.fetchAll(db, sql: "SELECT id FROM evicted")) }
    }

    /// Whether item `id` is evicted.
    package func isEvicted(_ id: String) throws -> Bool {
        try queue.read { db in try Bool.fetchOne(db, sql: "SELECT 1 FROM evicted WHERE id = ?", arguments: [id]) ?? false }
    }

    /// Whether the item at `path` is evicted (one query).
    package func isEvicted(path: String) throws -> Bool {
        try queue.read { db in
            try Bool.fetchOne(db, sql: "SELECT 1 FROM evicted JOIN items ON items.id = evicted.id WHERE items.path = ?", arguments: [path]) ?? false
        }
    }

    // MARK: Transfers

    /// The transfer state of `path` (idle when none is recorded).
    package func transfer(path: String) throws -> SyncTransfer {
        try queue.read { db in
            guard let row = try Row.fetchOne(db, sql: "SELECT * FROM transfers WHERE path = ?", arguments: [path]) else { return SyncTransfer() }
            var transfer = SyncTransfer()
            transfer.isUploading = row["uploading"] as Int64 != 0
            transfer.percentUploaded = row["uploaded"]
            transfer.uploadError = row["upload_error"]
            transfer.isDownloading = row["downloading"] as Int64 != 0
            transfer.percentDownloaded = row["downloaded"]
            transfer.downloadRequested = row["requested"] as Int64 != 0
            transfer.downloadError = row["download_error"]
            return transfer
        }
    }

    /// Changes the transfer state of `path` (an idle state is forgotten); returns the new state.
    @discardableResult
    package func updateTransfer(path: String, _ change: (inout SyncTransfer) -> Void) throws -> SyncTransfer {
        var transfer = try self.transfer(path: path)
        change(&transfer)
        let result = transfer
        try write { db in
            if result.isIdle {
                try db.execute(sql: "DELETE FROM transfers WHERE path = ?", arguments: [path])
                return
            }
            try db.execute(sql: """
                INSERT OR REPLACE INTO transfers (path, uploading, uploaded, upload_error, downloading, downloaded, requested, download_error)
                VALUES (?, ?, ?, ?, ?, ?, ?, ?)
                """, arguments: [path, result.isUploading ? 1 : 0, result.percentUploaded, result.uploadError,
                                 result.isDownloading ? 1 : 0, result.percentDownloaded, result.downloadRequested ? 1 : 0,
                                 result.downloadError])
        }
        return result
    }

    /// Ends the downloads of `paths` in one transaction (as ``updateTransfer(path:_:)`` with
    /// downloading, progress, request and error cleared for each); returns the paths that had a
    /// transfer state (their new state is worth publishing).
    func finishDownloads(paths: [String]) throws -> Set<String> {
        guard !paths.isEmpty else { return [] }
        return try write { db in
            var had = Set<String>()
            let update = try db.cachedStatement(sql: """
                UPDATE transfers SET downloading = 0, downloaded = NULL, requested = 0, download_error = NULL WHERE path = ?
                """)
            let forget = try db.cachedStatement(sql: "DELETE FROM transfers WHERE path = ? AND uploading = 0 AND upload_error IS NULL")
            for path in paths {
                try update.execute(arguments: [path])
                if db.changesCount > 0 { had.insert(path) }
                try forget.execute(arguments: [path])
            }
            return had
        }
    }

    /// Forgets what ran when the daemon stopped (errors are kept).
    func resetRunningTransfers() throws {
        try write { db in
            try db.execute(sql: "UPDATE transfers SET uploading = 0, uploaded = NULL, downloading = 0, downloaded = NULL, requested = 0")
            try db.execute(sql: "DELETE FROM transfers WHERE upload_error IS NULL AND download_error IS NULL")
        }
    }

    // MARK: What status shows

    /// The item's state for `ubiq status` and the library: the sync state, whether it is
    /// downloaded (a placeholder of an evicted item is not), transfers and errors.
    package func itemState(relativePath relative: String, absolute: String, status: SyncItemStatus) -> ItemSyncState {
        let entry = try? entry(path: relative)
        let evicted = entry.map { (try? isEvicted($0.id)) ?? false } ?? false
        let transfer = (try? self.transfer(path: relative)) ?? SyncTransfer()
        var state = ItemSyncState(sync: status)
        state.downloadingStatus = evicted ? .notDownloaded : transfer.isDownloading ? .downloaded : .current
        state.isDownloading = transfer.isDownloading
        state.percentDownloaded = transfer.isDownloading ? transfer.percentDownloaded ?? 0 : nil
        state.downloadRequested = !evicted || transfer.downloadRequested
        state.isUploading = status == .uploading || transfer.isUploading
        state.percentUploaded = state.isUploading ? transfer.percentUploaded ?? 0 : nil
        state.uploadError = transfer.uploadError
        state.downloadError = transfer.downloadError
        state.isPinned = (try? isPinned(path: relative)) ?? false
        return state
    }

    /// The journal of the synced folder holding the absolute, canonical `path`, with the
    /// path relative to its folder; nil when no synced folder holds it.
    package static func holding(_ canonical: String, directory: String = defaultDirectory()) -> (journal: SyncJournal, relative: String)? {
        guard let files = try? FileManager.default.contentsOfDirectory(atPath: directory) else { return nil }
        for file in files where file.hasSuffix(".sqlite") {
            guard let journal = try? SyncJournal(path: directory + "/" + file),
                  let folder = try? journal.value("folder"), canonical.hasPrefix(folder + "/") else { continue }
            return (journal, String(canonical.dropFirst(folder.count + 1)))
        }
        return nil
    }

    /// The state of the item at the absolute `path` for `ubiq status`: nil when no synced folder
    /// holds it or it does not exist.
    package static func itemState(ofItemAt path: String, conflicts: Int, directory: String = defaultDirectory()) -> ItemSyncState? {
        guard let stamp = Placeholder.stamp(ofItemAt: path), let canonical = try? CanonicalPath.canonicalize(path),
              let (journal, relative) = holding(canonical, directory: directory) else { return nil }
        let status = journal.status(relativePath: relative, canonical: canonical, stamp: stamp, conflicts: conflicts)
        return journal.itemState(relativePath: relative, absolute: canonical, status: status)
    }
}
