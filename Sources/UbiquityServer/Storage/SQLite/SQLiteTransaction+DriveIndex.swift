// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// The Drive's index in SQLite (`drive_items` of the `v15-drive-index` migration).
extension SQLiteTransaction: DriveIndexTransaction {
    /// Folders first, then the lower-cased name (the `drive_items_folder` index's order).
    static let driveOrder = "ORDER BY kind <> 'folder', folded, name"
    /// The columns a row is read from.
    static let driveColumns = "database, record_name, parent, name, kind, size, modified"

    private static func driveRow(_ row: Row) -> DriveIndexRow {
        DriveIndexRow(database: row["database"], recordName: row["record_name"], parent: row["parent"], name: row["name"], kind: row["kind"],
                      size: row["size"], modified: row["modified"])
    }

    func putDriveRows(_ rows: [DriveIndexRow]) throws {
        let statement = try db.cachedStatement(sql: """
            INSERT OR REPLACE INTO drive_items (database, record_name, parent, name, folded, kind, size, modified) VALUES (?, ?, ?, ?, ?, ?, ?, ?)
            """)
        for row in rows {
            try statement.execute(arguments: [row.database, row.recordName, row.parent, row.name, row.name.lowercased(), row.kind, row.size, row.modified])
        }
    }

    func deleteDriveRows(database: Int64, recordNames: [String]) throws {
        let statement = try db.cachedStatement(sql: "DELETE FROM drive_items WHERE database = ? AND record_name = ?")
        for name in recordNames { try statement.execute(arguments: [database, name]) }
    }

    func deleteDriveRows(database: Int64) throws {
        try db.execute(sql: "DELETE FROM drive_items WHERE database = ?", arguments: [database])
    }

    func driveFolder(database: Int64, parent: String, offset: Int, limit: Int) throws -> (rows: [DriveIndexRow], total: Int) {
        let rows = try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(Self.driveColumns) FROM drive_items WHERE database = ? AND parent = ? \(Self.driveOrder) LIMIT ? OFFSET ?
            """), arguments: [database, parent, limit, offset]).map(Self.driveRow)
        let total = try Int.fetchOne(db.cachedStatement(sql: "SELECT COUNT(*) FROM drive_items WHERE database = ? AND parent = ?"),
                                     arguments: [database, parent]) ?? 0
        return (rows, total)
    }

    func driveSearch(database: Int64, text: String, limit: Int) throws -> [DriveIndexRow] {
        // `instr` over the covering index `drive_items_search`: one user's names read in order,
        // no row looked up (a table lookup per row costs ten times the scan)
        try Row.fetchAll(db.cachedStatement(sql: """
            SELECT \(Self.driveColumns) FROM drive_items WHERE database = ? AND instr(folded, ?) > 0 \(Self.driveOrder) LIMIT ?
            """), arguments: [database, text.lowercased(), limit]).map(Self.driveRow)
    }
}
