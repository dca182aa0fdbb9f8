// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

extension MetadataIndex {
    /// The secondary indexes of `items` (the migrations made them; a bulk load drops and makes
    /// them again), by name with their columns.
    static let secondaryIndexes: [(name: String, columns: String)] = [
        ("items_name", "name"), ("items_name_folded", "name_folded"), ("items_content_type", "content_type"),
        ("items_size", "size"), ("items_content_change_date", "content_change_date"), ("items_listing", "path, listing"),
    ]

    /// Whether the index holds no row at all (a first scan may load in bulk).
    package func isEmpty() throws -> Bool {
        try read("count") { db in try Int.fetchOne(db, sql: "SELECT NOT EXISTS (SELECT 1 FROM items)") == 1 }
    }

    /// Starts loading an empty index in bulk (a first scan): the secondary indexes are dropped;
    /// ``finishBulkLoad()`` makes them in one go (sorting 100,000 keys once is cheaper than
    /// keeping six b-trees ordered row by row). The name search is kept row by row: its
    /// `rebuild` after the load cost five times more. Queries must wait for the end (the host's
    /// roots are not ready before). Interrupted (a crash), the next open finishes it
    /// (``finishInterruptedBulkLoad(_:)``).
    package func beginBulkLoad() throws {
        try write("begin a bulk load") { db in
            try db.execute(sql: "INSERT OR REPLACE INTO roots (path, message) VALUES (?, 'bulk load')", arguments: [Self.bulkLoadMarker])
            for index in Self.secondaryIndexes { try db.execute(sql: "DROP INDEX IF EXISTS \(index.name)") }
        }
    }

    /// Makes the secondary indexes of a bulk load (``beginBulkLoad()``).
    package func finishBulkLoad() throws {
        try write("finish a bulk load") { db in try Self.finishBulkLoad(db) }
    }

    /// The marker row of a bulk load in progress (in `roots`, so an interrupted one is found).
    static let bulkLoadMarker = "//bulk-load"

    static func finishBulkLoad(_ db: Database) throws {
        for index in secondaryIndexes { try db.execute(sql: "CREATE INDEX IF NOT EXISTS \(index.name) ON items(\(index.columns))") }
        try db.execute(sql: "DELETE FROM roots WHERE path = ?", arguments: [bulkLoadMarker])
    }

    /// Finishes a bulk load a crash interrupted (run when the index is opened).
    static func finishInterruptedBulkLoad(_ writer: any DatabaseWriter) throws {
        try writer.write { db in
            guard try Bool.fetchOne(db, sql: "SELECT 1 FROM roots WHERE path = ?", arguments: [bulkLoadMarker]) == true else { return }
            try finishBulkLoad(db)
        }
    }
}
