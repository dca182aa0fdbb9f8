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
    /// Every shared conflict version this device knows.
    package func conflicts() throws -> [JournalConflict] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT record, item, version, published FROM sync_conflicts WHERE journal = ? ORDER BY record",
                             arguments: [scope]).map(Self.conflict)
        }
    }

    /// The shared conflict versions of item `item` (its record name).
    package func conflicts(item: String) throws -> [JournalConflict] {
        try read { db in
            try Row.fetchAll(db, sql: "SELECT record, item, version, published FROM sync_conflicts WHERE journal = ? AND item = ? ORDER BY record",
                             arguments: [scope, item]).map(Self.conflict)
        }
    }

    /// The conflict of record `record`, if known here.
    package func conflict(record: String) throws -> JournalConflict? {
        try read { db in
            try Row.fetchOne(db, sql: "SELECT record, item, version, published FROM sync_conflicts WHERE journal = ? AND record = ?",
                             arguments: [scope, record]).map(Self.conflict)
        }
    }

    /// Inserts or replaces a conflict.
    package func putConflict(_ conflict: JournalConflict) throws {
        try write { db in
            try db.execute(sql: "INSERT OR REPLACE INTO sync_conflicts (journal, record, item, version, published) VALUES (?, ?, ?, ?, ?)",
                           arguments: [scope, conflict.record, conflict.item, conflict.version, conflict.published ? 1 : 0])
        }
    }

    /// Forgets the conflict of record `record`.
    package func removeConflict(record: String) throws {
        try write { db in try db.execute(sql: "DELETE FROM sync_conflicts WHERE journal = ? AND record = ?", arguments: [scope, record]) }
    }

    static func conflict(_ row: Row) -> JournalConflict {
        JournalConflict(record: row[0], item: row[1], version: row[2], published: (row[3] as Int64) != 0)
    }
}
