// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// Share links in PostgreSQL (`share_links` of the `v14-share-links` migration).
extension PostgresTransaction: ShareStoreTransaction {
    private static func link(_ row: PostgresRandomAccessRow) throws -> StoredShareLink {
        StoredShareLink(digest: try row.value("digest"), database: try row.value("database"), recordName: try row.value("record_name"),
                        path: try row.value("path"), createdAt: try row.value("created_at"), expiresAt: try row.value("expires_at"),
                        passwordHash: try row.value("password_hash"))
    }

    func addShareLink(_ link: StoredShareLink) async throws {
        try await session.execute("""
            INSERT INTO share_links (digest, database, record_name, path, created_at, expires_at, password_hash) VALUES ($1, $2, $3, $4, $5, $6, $7)
            """, [.text(link.digest), .int(link.database), .text(link.recordName), .text(link.path), .int(link.createdAt), .int(link.expiresAt),
                  .text(link.passwordHash)])
    }

    func shareLink(digest: String) async throws -> StoredShareLink? {
        try await session.row("SELECT * FROM share_links WHERE digest = $1", [.text(digest)]).map(Self.link)
    }

    func shareLinks(database: Int64) async throws -> [StoredShareLink] {
        try await session.rows("SELECT * FROM share_links WHERE database = $1 ORDER BY created_at DESC", [.int(database)]).map(Self.link)
    }

    func deleteShareLink(database: Int64, digest: String) async throws -> Bool {
        !(try await session.rows("DELETE FROM share_links WHERE database = $1 AND digest = $2 RETURNING digest", [.int(database), .text(digest)]).isEmpty)
    }
}
