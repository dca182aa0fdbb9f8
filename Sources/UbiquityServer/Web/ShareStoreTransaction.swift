// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// A read-only share link to an item of a user's synced folder (`share_links`, migration
/// `v14-share-links`). The link's token is kept as its digest only.
package struct StoredShareLink: Sendable, Hashable {
    /// SHA-256 of the link's token (``SecretToken/digest(_:)``).
    package var digest: String
    /// The owner's private database (`databases.id`).
    package var database: Int64
    /// The shared item's record name (the link follows renames and moves).
    package var recordName: String
    /// The item's path when the link was made (for the owner's list).
    package var path: String
    /// When it was made and when it stops opening (milliseconds since 1970).
    package var createdAt: Int64
    package var expiresAt: Int64
    /// The password's KDF string, when the link asks for one.
    package var passwordHash: String?

    /// Makes a link.
    package init(digest: String, database: Int64, recordName: String, path: String, createdAt: Int64, expiresAt: Int64, passwordHash: String?) {
        self.digest = digest
        self.database = database
        self.recordName = recordName
        self.path = path
        self.createdAt = createdAt
        self.expiresAt = expiresAt
        self.passwordHash = passwordHash
    }
}

/// The storage of share links, inside one store transaction (both record stores conform:
/// `SQLiteTransaction+ShareLinks.swift`, `PostgresTransaction+ShareLinks.swift`).
package protocol ShareStoreTransaction {
    /// Stores a link.
    func addShareLink(_ link: StoredShareLink) async throws
    /// The link with this token digest (expired ones too: the page says so).
    func shareLink(digest: String) async throws -> StoredShareLink?
    /// A database's links, newest first.
    func shareLinks(database: Int64) async throws -> [StoredShareLink]
    /// Revokes a link of the database; false when it had none with that digest.
    func deleteShareLink(database: Int64, digest: String) async throws -> Bool
}

extension RecordStoreTransaction {
    /// This transaction as a share-link store transaction, or an error naming the store type.
    package func shareStore() throws -> any ShareStoreTransaction {
        guard let tx = self as? any ShareStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store (\(type(of: self))) does not keep share links")
        }
        return tx
    }
}
