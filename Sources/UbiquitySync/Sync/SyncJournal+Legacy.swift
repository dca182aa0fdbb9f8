// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import Logging
import UbiquityCore
import UbiquityStore

extension SyncJournal {
    /// Brings the journal file an earlier version kept for this folder (one SQLite file per
    /// folder, `$XDG_STATE_HOME/ubiquity/sync/NAME.sqlite`) into this journal, once: its items
    /// (with their sync state: uploaded, or uploading when never uploaded or queued), change
    /// token and stored values, queue, exclusions, evicted and pinned items, transfers' errors,
    /// shared conflicts and chunk lists. The file is then renamed `….imported` (kept, never
    /// deleted). Nothing happens when the file is missing or this journal already holds items.
    /// A file that cannot be read is left where it is, and the journal starts empty: the first
    /// pass matches the folder with the server by path and content, as after a lost journal.
    /// - Returns: whether a file was imported.
    @discardableResult
    package func importLegacyFile(_ path: String, logger: Logger) -> Bool {
        guard FileManager.default.fileExists(atPath: path), (try? count()) == 0,
              ((try? value(SyncEngine.tokenKey)) ?? nil) == nil else { return false }
        do {
            try database.withAttached(path, as: "legacy") { db in
                let tables = Set(try String.fetchAll(db, sql: "SELECT name FROM legacy.sqlite_master WHERE type = 'table'"))
                let scope = self.scope
                if tables.contains("items") {
                    let queued = tables.contains("pending") ? "OR path IN (SELECT path FROM legacy.pending)" : ""
                    try db.execute(sql: """
                        INSERT OR IGNORE INTO sync_items (journal, id, path, kind, size, mtime, inode, mode, hash, target, tag, base, state)
                        SELECT ?, id, path, kind, size, mtime, inode, mode, hash, target, tag, base,
                               CASE WHEN tag IS NULL \(queued) THEN 'uploading' ELSE 'uploaded' END
                        FROM legacy.items
                        """, arguments: [scope])
                }
                let copies: [(table: String, sql: String)] = [
                    ("meta", "INSERT OR IGNORE INTO sync_meta (journal, key, value) SELECT ?, key, value FROM legacy.meta WHERE key != 'folder'"),
                    ("pending", "INSERT OR IGNORE INTO sync_pending (journal, path, since) SELECT ?, path, since FROM legacy.pending"),
                    ("excluded", "INSERT OR IGNORE INTO sync_excluded (journal, path) SELECT ?, path FROM legacy.excluded"),
                    ("evicted", "INSERT OR IGNORE INTO sync_evicted (journal, id, since) SELECT ?, id, since FROM legacy.evicted"),
                    ("pinned", "INSERT OR IGNORE INTO sync_pinned (journal, id, since) SELECT ?, id, since FROM legacy.pinned"),
                    ("transfers", """
                        INSERT OR IGNORE INTO sync_transfers (journal, path, upload_error, download_error)
                        SELECT ?, path, upload_error, download_error FROM legacy.transfers
                        WHERE upload_error IS NOT NULL OR download_error IS NOT NULL
                        """),
                    ("conflicts", """
                        INSERT OR IGNORE INTO sync_conflicts (journal, record, item, version, published)
                        SELECT ?, record, item, version, published FROM legacy.conflicts
                        """),
                    ("chunk_lists", """
                        INSERT OR IGNORE INTO sync_chunk_lists (journal, id, device, inode, size, mtime, ctime, list)
                        SELECT ?, id, device, inode, size, mtime, ctime, list FROM legacy.chunk_lists
                        """),
                ]
                for copy in copies where tables.contains(copy.table) { try db.execute(sql: copy.sql, arguments: [scope]) }
                if tables.contains("excluded_inode") {
                    try db.execute(sql: """
                        UPDATE sync_excluded SET inode = (SELECT inode FROM legacy.excluded_inode l WHERE l.path = sync_excluded.path)
                        WHERE journal = ?
                        """, arguments: [scope])
                }
            }
        } catch {
            logger.error("the sync journal of an earlier version could not be read: the folder is matched with the server again",
                         metadata: ["ubiquity.journal": "\(path)", "ubiquity.error": "\(error)"])
            return false
        }
        for suffix in ["", "-wal", "-shm"] where FileManager.default.fileExists(atPath: path + suffix) {
            try? FileManager.default.moveItem(atPath: path + suffix, toPath: path + ".imported" + suffix)
        }
        logger.notice("the sync journal of an earlier version was brought into the device database",
                      metadata: ["ubiquity.journal": "\(path)", "ubiquity.items": "\((try? count()) ?? 0)"])
        return true
    }
}
