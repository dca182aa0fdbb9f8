// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// Share links in SQLite (`share_links` of the `v14-share-links` migration).
extension SQLiteTransaction: ShareStoreTransaction {
    private static func link(_ row: Row) -> StoredShareLink {
        StoredShareLink(digest: row["digest"], database: row["database"], recordName: row["record_name"], path: row["path"],
                        createdAt: row["created_at"], expiresAt: row["expires_at"], passwordHash: row["password_hash"])
    }

    func addShareLink(_ link: StoredShareLink) throws {
        try db.execute(sql: """
            INSERT INTO share_links (digest, database, record_name, path, created_at, expires_at, password_hash) VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [link.digest, link.database, link.recordName, link.path, link.createdAt, link.expiresAt, link.passwordHash])
    }

    func shareLink(digest: String) throws -> StoredShareLink? {
        try Row.fetchOne(db, sql: "SELECT * FROM share_links WHERE digest = ?", arguments: [digest]).map(Self.link)
    }

    func shareLinks(database: Int64) throws -> [StoredShareLink] {
        try Row.fetchAll(db, sql: "SELECT * FROM share_links WHERE database = ? ORDER BY created_at DESC", arguments: [database]).map(Self.link)
    }

    func deleteShareLink(database: Int64, digest: String) throws -> Bool {
        try db.execute(sql: "DELETE FROM share_links WHERE database = ? AND digest = ?", arguments: [database, digest])
        return db.changesCount > 0
    }
}
