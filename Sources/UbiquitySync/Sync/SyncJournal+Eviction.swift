// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import Logging
import UbiquityIndex
import UbiquityStore

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
    // MARK: Evicted items

    /// Records whether item `id` is evicted (a placeholder stands for it); its index row is not
    /// downloaded from the same transaction on (or current again).
    package func setEvicted(_ id: String, _ evicted: Bool) throws {
        try write { db, delta in
            try setMarked(id, evicted, in: "sync_evicted", db)
            guard let entry = try entry(id: id, db) else { return }
            let state = try String.fetchOne(db.cachedStatement(sql: "SELECT state FROM sync_items WHERE journal = ? AND id = ?"),
                                            arguments: [scope, id]).flatMap(SyncItemStatus.init(rawValue:)) ?? .uploaded
            try database.applySyncStates([(absolute(entry.path), state, evicted)], db: db, delta: &delta)
        }
    }

    /// Adds item `id` to, or removes it from, one of the tables of marked IDs (`sync_evicted`,
    /// `sync_pinned`: `id` and the time it was marked), inside a transaction.
    func setMarked(_ id: String, _ marked: Bool, in table: StaticString, _ db: Database) throws {
        if marked {
            try db.execute(sql: "INSERT OR REPLACE INTO \(table) (journal, id, since) VALUES (?, ?, ?)",
                           arguments: [scope, id, Int64(Date().timeIntervalSince1970 * 1000)])
        } else {
            try db.execute(sql: "DELETE FROM \(table) WHERE journal = ? AND id = ?", arguments: [scope, id])
        }
    }

    /// The IDs of the evicted items.
    package func evicted() throws -> Set<String> {
        try read { db in Set(try String.fetchAll(db, sql: "SELECT id FROM sync_evicted WHERE journal = ?", arguments: [scope])) }
    }

    /// Whether item `id` is evicted.
    package func isEvicted(_ id: String) throws -> Bool {
        try read { db in try isEvicted(id, db) }
    }

    func isEvicted(_ id: String, _ db: Database) throws -> Bool {
        try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM sync_evicted WHERE journal = ? AND id = ?"), arguments: [scope, id]) ?? false
    }

    /// Whether the item at `path` is evicted (one query).
    package func isEvicted(path: String) throws -> Bool {
        try read { db in !(try evictedPaths(among: [path], db)).isEmpty }
    }

    // MARK: Transfers

    /// The transfer state of `path` (idle when none is recorded).
    package func transfer(path: String) throws -> SyncTransfer {
        try read { db in try transfer(path: path, db) }
    }

    func transfer(path: String, _ db: Database) throws -> SyncTransfer {
        guard let row = try Row.fetchOne(db.cachedStatement(sql: """
            SELECT uploading, uploaded, upload_error, downloading, downloaded, requested, download_error
            FROM sync_transfers WHERE journal = ? AND path = ?
            """), arguments: [scope, path]) else { return SyncTransfer() }
        var transfer = SyncTransfer()
        transfer.isUploading = row[0] as Int64 != 0
        transfer.percentUploaded = row[1]
        transfer.uploadError = row[2]
        transfer.isDownloading = row[3] as Int64 != 0
        transfer.percentDownloaded = row[4]
        transfer.downloadRequested = row[5] as Int64 != 0
        transfer.downloadError = row[6]
        return transfer
    }

    /// Changes the transfer state of `path` (an idle state is forgotten) and its index row's
    /// transfer attributes, in one transaction; returns the new state.
    @discardableResult
    package func updateTransfer(path: String, _ change: (inout SyncTransfer) -> Void) throws -> SyncTransfer {
        try write { db, delta in
            var transfer = try self.transfer(path: path, db)
            change(&transfer)
            if transfer.isIdle {
                try db.execute(sql: "DELETE FROM sync_transfers WHERE journal = ? AND path = ?", arguments: [scope, path])
            } else {
                try db.execute(sql: """
                    INSERT OR REPLACE INTO sync_transfers (journal, path, uploading, uploaded, upload_error, downloading, downloaded,
                    requested, download_error) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
                    """, arguments: [scope, path, transfer.isUploading ? 1 : 0, transfer.percentUploaded, transfer.uploadError,
                                     transfer.isDownloading ? 1 : 0, transfer.percentDownloaded, transfer.downloadRequested ? 1 : 0,
                                     transfer.downloadError])
            }
            try applyTransfers([path], db, &delta)
            return transfer
        }
    }

    /// Ends the downloads of `paths` in one transaction (as ``updateTransfer(path:_:)`` with
    /// downloading, progress, request and error cleared for each, their index rows with them).
    func finishDownloads(paths: [String]) throws {
        guard !paths.isEmpty else { return }
        try write { db, delta in
            // (mostly no transfer is recorded: then no lookups)
            guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT EXISTS (SELECT 1 FROM sync_transfers WHERE journal = ?)"),
                                    arguments: [scope]) == true else { return }
            var had: [String] = []
            let update = try db.cachedStatement(sql: """
                UPDATE sync_transfers SET downloading = 0, downloaded = NULL, requested = 0, download_error = NULL
                WHERE journal = ? AND path = ?
                """)
            let forget = try db.cachedStatement(sql: """
                DELETE FROM sync_transfers WHERE journal = ? AND path = ? AND uploading = 0 AND upload_error IS NULL
                """)
            for path in paths {
                try update.execute(arguments: [scope, path])
                if db.changesCount > 0 { had.append(path) }
                try forget.execute(arguments: [scope, path])
            }
            try applyTransfers(had, db, &delta)
        }
    }

    /// Gives the index rows of `paths` (relative) the transfer attributes of their items' state
    /// (downloading status, progress, errors), inside the caller's transaction.
    func applyTransfers(_ paths: [String], _ db: Database, _ delta: inout IndexDelta) throws {
        guard !paths.isEmpty else { return }
        var changes: [(path: String, change: @Sendable (inout UbiquitousAttributes) -> Void)] = []
        for path in paths {
            let state = try itemState(relativePath: path, status: .uploaded, db)
            changes.append((absolute(path), { attributes in attributes.apply(transfer: state) }))
        }
        try database.changeAttributes(changes, db: db, delta: &delta)
    }

    /// Forgets what ran when the daemon stopped (errors are kept).
    func resetRunningTransfers() throws {
        try write { db in
            try db.execute(sql: """
                UPDATE sync_transfers SET uploading = 0, uploaded = NULL, downloading = 0, downloaded = NULL, requested = 0 WHERE journal = ?
                """, arguments: [scope])
            try db.execute(sql: "DELETE FROM sync_transfers WHERE journal = ? AND upload_error IS NULL AND download_error IS NULL",
                           arguments: [scope])
        }
    }

    // MARK: What status shows

    /// The item's state for `ubiq status` and the library: the sync state, whether it is
    /// downloaded (a placeholder of an evicted item is not), transfers and errors.
    package func itemState(relativePath relative: String, status: SyncItemStatus) -> ItemSyncState {
        (try? read { db in try itemState(relativePath: relative, status: status, db) }) ?? ItemSyncState(sync: status)
    }

    func itemState(relativePath relative: String, status: SyncItemStatus, _ db: Database) throws -> ItemSyncState {
        let entry = try entry(path: relative, db)
        let evicted = try entry.map { try isEvicted($0.id, db) } ?? false
        let transfer = try self.transfer(path: relative, db)
        var state = ItemSyncState(sync: status)
        state.downloadingStatus = evicted ? .notDownloaded : transfer.isDownloading ? .downloaded : .current
        state.isDownloading = transfer.isDownloading
        state.percentDownloaded = transfer.isDownloading ? transfer.percentDownloaded ?? 0 : nil
        state.downloadRequested = !evicted || transfer.downloadRequested
        state.isUploading = status == .uploading || transfer.isUploading
        state.percentUploaded = state.isUploading ? transfer.percentUploaded ?? 0 : nil
        state.uploadError = transfer.uploadError
        state.downloadError = transfer.downloadError
        state.isPinned = Self.isPinned(relative, among: try pinnedPaths(db))
        return state
    }

    /// The journal of the synced folder holding the absolute, canonical `path` in the device
    /// database at `database` (read only), with the path relative to its folder; nil when no
    /// synced folder holds it.
    package static func holding(_ canonical: String, database: String) -> (journal: SyncJournal, relative: String)? {
        guard let index = MetadataIndex.openForReading(path: database, logger: Logger(label: "ubiquity.sync.journal")),
              let journals = try? index.journals() else { return nil }
        var best: (name: String, id: Int64, folder: String)?
        for (name, journal) in journals where canonical.hasPrefix(journal.folder + "/") {
            if best == nil || journal.folder.utf8.count > best!.folder.utf8.count { best = (name, journal.id, journal.folder) }
        }
        guard let best else { return nil }
        return (SyncJournal(reading: index, name: best.name, scope: best.id, folder: best.folder),
                String(canonical.dropFirst(best.folder.count + 1)))
    }

    /// The state of the item at the absolute `path` for `ubiq status`, from the device database
    /// at `database`: nil when no synced folder holds it or it does not exist.
    package static func itemState(ofItemAt path: String, conflicts: Int, database: String) -> ItemSyncState? {
        guard let stamp = Placeholder.stamp(ofItemAt: path), let canonical = try? CanonicalPath.canonicalize(path),
              let (journal, relative) = holding(canonical, database: database) else { return nil }
        let status = journal.status(relativePath: relative, canonical: canonical, stamp: stamp, conflicts: conflicts)
        return journal.itemState(relativePath: relative, status: status)
    }
}
