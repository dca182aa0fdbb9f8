// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// One conflict version shared through the server: its `UbiquityConflictVersion` record, the
/// item it belongs to and the version that stands for it in this device's version store.
package struct JournalConflict: Sendable, Hashable {
    /// The `UbiquityConflictVersion` record's name.
    package var record: String
    /// The item's record name (its journal ID).
    package var item: String
    /// The local version's ``FileVersion/persistentIdentifier``.
    package var version: String
    /// Whether the server has the record (false: made here and not sent yet).
    package var published: Bool

    /// A conflict from its parts.
    package init(record: String, item: String, version: String, published: Bool) {
        self.record = record
        self.item = item
        self.version = version
        self.published = published
    }
}

extension SyncJournal {
    /// The table added with shared conflict versions (new: older journals gain it when opened).
    static let conflictSchema = """
        CREATE TABLE IF NOT EXISTS conflicts (
            record TEXT PRIMARY KEY, item TEXT NOT NULL, version TEXT NOT NULL, published INTEGER NOT NULL);
        CREATE INDEX IF NOT EXISTS conflicts_item ON conflicts (item);
        """

    /// Every shared conflict version this device knows.
    package func conflicts() throws -> [JournalConflict] {
        try queue.read { db in try Row.fetchAll(db, sql: "SELECT * FROM conflicts ORDER BY record").map(Self.conflict) }
    }

    /// The conflict of record `record`, if known here.
    package func conflict(record: String) throws -> JournalConflict? {
        try queue.read { db in
            try Row.fetchOne(db, sql: "SELECT * FROM conflicts WHERE record = ?", arguments: [record]).map(Self.conflict)
        }
    }

    /// Inserts or replaces a conflict.
    package func putConflict(_ conflict: JournalConflict) throws {
        try queue.write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO conflicts (record, item, version, published) VALUES (?, ?, ?, ?)",
                           arguments: [conflict.record, conflict.item, conflict.version, conflict.published ? 1 : 0])
        }
    }

    /// Forgets the conflict of record `record`.
    package func removeConflict(record: String) throws {
        try queue.write { db in try db.execute(sql: "DELETE FROM conflicts WHERE record = ?", arguments: [record]) }
    }

    static func conflict(_ row: Row) -> JournalConflict {
        JournalConflict(record: row["record"], item: row["item"], version: row["version"], published: (row["published"] as Int64) != 0)
    }
}
