// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// One stored version of a synced document: the fields of its `UbiquityItem` record as one
/// upload left them (`item_versions`, migration `v13-document-history`).
package struct StoredItemVersion: Sendable, Hashable {
    /// The row's id (0 before it is stored).
    package var id: Int64
    /// The private database the document is in (`databases.id`).
    package var database: Int64
    /// The document's record name.
    package var recordName: String
    /// Its path when this version was saved.
    package var path: String
    /// When the upload committed (milliseconds since 1970).
    package var savedAt: Int64
    /// The device that uploaded it (the record's `modified.deviceID`), or the user.
    package var savedBy: String
    /// Size in bytes.
    package var size: Int64
    /// SHA-256 of the content (hex).
    package var contentHash: String
    /// The content asset's checksum (nil for content inline in the record): the blob store keeps
    /// it while the version exists.
    package var assetChecksum: String?
    /// The record's stored fields JSON.
    package var fieldsJSON: String
    /// Whether this is the document's latest version (the record's current content).
    package var current: Bool

    /// Makes a version.
    package init(id: Int64 = 0, database: Int64, recordName: String, path: String, savedAt: Int64, savedBy: String, size: Int64,
                contentHash: String, assetChecksum: String?, fieldsJSON: String, current: Bool = true) {
        self.id = id
        self.database = database
        self.recordName = recordName
        self.path = path
        self.savedAt = savedAt
        self.savedBy = savedBy
        self.size = size
        self.contentHash = contentHash
        self.assetChecksum = assetChecksum
        self.fieldsJSON = fieldsJSON
        self.current = current
    }
}

/// One deleted document or folder in Recently Deleted (`trashed_items`): the fields its record
/// had when it was deleted.
package struct StoredTrashedItem: Sendable, Hashable {
    /// The row's id (0 before it is stored).
    package var id: Int64
    /// The private database (`databases.id`).
    package var database: Int64
    /// The deleted record's name.
    package var recordName: String
    /// Its path when deleted.
    package var path: String
    /// `file`, `folder` or `symlink`.
    package var kind: String
    /// When the deletion committed (milliseconds since 1970).
    package var deletedAt: Int64
    /// Who deleted it (the device, or the user).
    package var deletedBy: String
    /// Size in bytes.
    package var size: Int64
    /// The content asset's checksum (nil for inline content, folders and links).
    package var assetChecksum: String?
    /// The record's stored fields JSON.
    package var fieldsJSON: String

    /// Makes an entry.
    package init(id: Int64 = 0, database: Int64, recordName: String, path: String, kind: String, deletedAt: Int64, deletedBy: String,
                size: Int64, assetChecksum: String?, fieldsJSON: String) {
        self.id = id
        self.database = database
        self.recordName = recordName
        self.path = path
        self.kind = kind
        self.deletedAt = deletedAt
        self.deletedBy = deletedBy
        self.size = size
        self.assetChecksum = assetChecksum
        self.fieldsJSON = fieldsJSON
    }
}

/// The storage primitives of the documents' server history (Recently Deleted and version
/// history), inside one store transaction. Both record stores' transactions conform
/// (`SQLiteTransaction+History.swift`, `PostgresTransaction+History.swift`); the tables come
/// from the `v13-document-history` migration. Their assets count as referenced for the blob
/// store's garbage collection (`referencedAssetChecksums`).
package protocol HistoryStoreTransaction {
    // MARK: Versions

    /// Stores new versions; each becomes its record's current version (the earlier ones of the
    /// same record stop being current).
    func addItemVersions(_ versions: [StoredItemVersion]) async throws
    /// A document's versions, newest first.
    func itemVersions(database: Int64, recordName: String) async throws -> [StoredItemVersion]
    /// The versions of several documents, without their fields (`fieldsJSON` empty), newest
    /// first per document: what thinning needs.
    func itemVersionStamps(database: Int64, recordNames: [String]) async throws -> [StoredItemVersion]
    /// One version.
    func itemVersion(database: Int64, id: Int64) async throws -> StoredItemVersion?
    /// Deletes versions by id.
    func deleteItemVersions(ids: [Int64]) async throws
    /// Deletes every version of these documents.
    func deleteItemVersions(database: Int64, recordNames: [String]) async throws
    /// The database's versions that are not current, oldest first, at most `limit`, without
    /// their fields: what a quota drops first.
    func oldestFormerVersions(database: Int64, limit: Int) async throws -> [StoredItemVersion]

    // MARK: Recently Deleted

    /// Adds deleted items.
    func addTrashedItems(_ items: [StoredTrashedItem]) async throws
    /// The database's deleted items, newest first, without their fields (`fieldsJSON` empty).
    func trashedItems(database: Int64) async throws -> [StoredTrashedItem]
    /// Deleted items by id (those of the database that exist), with their fields.
    func trashedItems(database: Int64, ids: [Int64]) async throws -> [StoredTrashedItem]
    /// Forgets deleted items by id.
    func deleteTrashedItems(ids: [Int64]) async throws
    /// Forgets the items deleted before `cutoff` (every database) and the versions of their
    /// records, unless the record is live again; how many items.
    func pruneTrash(deletedBefore cutoff: Int64) async throws -> Int

    /// The bytes the database's history holds beyond its live records: the versions that are
    /// not current and the deleted items (each counted by its size).
    func historyBytes(database: Int64) async throws -> Int64
}

/// The stores whose transactions keep history.
extension RecordStoreTransaction {
    /// This transaction as a history store transaction, or an error naming the store type.
    func historyStore() throws -> any HistoryStoreTransaction {
        guard let tx = self as? any HistoryStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store (\(type(of: self))) does not keep document history")
        }
        return tx
    }
}
