// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// The Drive's index in PostgreSQL (`drive_items` of the `v15-drive-index` migration): a batch's
/// rows in one statement (`unnest`).
extension PostgresTransaction: DriveIndexTransaction {
    private static func driveRow(_ row: PostgresRandomAccessRow) throws -> DriveIndexRow {
        DriveIndexRow(database: try row.value("database"), recordName: try row.value("record_name"), parent: try row.value("parent"),
                      name: try row.value("name"), kind: try row.value("kind"), size: try row.value("size"), modified: try row.value("modified"))
    }

    func putDriveRows(_ rows: [DriveIndexRow]) async throws {
        guard !rows.isEmpty else { return }
        // one row per record name (a batch names each record once)
        try await session.execute("""
            INSERT INTO drive_items (database, record_name, parent, name, folded, kind, size, modified)
            SELECT * FROM unnest($1::bigint[], $2::text[], $3::text[], $4::text[], $5::text[], $6::text[], $7::bigint[], $8::bigint[])
            ON CONFLICT (database, record_name) DO UPDATE SET parent = excluded.parent, name = excluded.name, folded = excluded.folded,
                kind = excluded.kind, size = excluded.size, modified = excluded.modified
            """, [.ints(rows.map(\.database)), .texts(rows.map(\.recordName)), .texts(rows.map(\.parent)), .texts(rows.map(\.name)),
                  .texts(rows.map { $0.name.lowercased() }), .texts(rows.map(\.kind)), .ints(rows.map(\.size)), .ints(rows.map(\.modified))])
    }

    func deleteDriveRows(database: Int64, recordNames: [String]) async throws {
        guard !recordNames.isEmpty else { return }
        try await session.execute("DELETE FROM drive_items WHERE database = $1 AND record_name = ANY($2)", [.int(database), .texts(recordNames)])
    }

    func deleteDriveRows(database: Int64) async throws {
        try await session.execute("DELETE FROM drive_items WHERE database = $1", [.int(database)])
    }

    func driveFolder(database: Int64, parent: String, offset: Int, limit: Int) async throws -> (rows: [DriveIndexRow], total: Int) {
        let rows = try await session.rows("""
            SELECT * FROM drive_items WHERE database = $1 AND parent = $2 ORDER BY kind <> 'folder', folded, name LIMIT $3 OFFSET $4
            """, [.int(database), .text(parent), .int(Int64(limit)), .int(Int64(offset))]).map(Self.driveRow)
        let total = try await session.row("SELECT COUNT(*) AS total FROM drive_items WHERE database = $1 AND parent = $2",
                                          [.int(database), .text(parent)])?.value("total", as: Int64.self) ?? 0
        return (rows, Int(total))
    }

    func driveSearch(database: Int64, text: String, limit: Int) async throws -> [DriveIndexRow] {
        // `strpos` over the covering index `drive_items_search` (one user's names, in order)
        try await session.rows("""
            SELECT database, record_name, parent, name, kind, size, modified FROM drive_items WHERE database = $1 AND strpos(folded, $2) > 0
            ORDER BY kind <> 'folder', folded, name LIMIT $3
            """, [.int(database), .text(text.lowercased()), .int(Int64(limit))]).map(Self.driveRow)
    }
}
