// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import UbiquityCore

extension AssetService {
    /// The name of the signing key in the record store's `server_secrets`.
    static let signingKeyName = "asset-signing-key"

    /// The service of a records server: a blob store at `blobs` (a folder's with
    /// `blobConfiguration`, or a bucket's), signing with the key kept in `recordStore` (made on
    /// first use; every server process on one store shares it, and it survives restarts).
    /// Uploads deduplicate only against content the uploader can read already
    /// (``readableContent(in:)``).
    package static func open(recordStore: any RecordStore, blobs: BlobLocation, configuration: AssetConfiguration = AssetConfiguration(),
                            blobConfiguration: FileBlobStore.Configuration = FileBlobStore.Configuration(), logger: Logger) async throws -> AssetService {
        let store = try await blobs.open(fileConfiguration: blobConfiguration, logger: logger)
        return AssetService(store: store, key: try await signingKey(in: recordStore), configuration: configuration, logger: logger,
                            canDeduplicate: readableContent(in: recordStore))
    }

    /// Content the uploader can already read: an asset some record of the uploader's own
    /// private database refers to (an upload token for a private database is only ever issued
    /// to its owner). Nothing in the public database, whose records roles may hide, counts.
    static func readableContent(in recordStore: any RecordStore) -> ContentAccess {
        { binding, fileChecksum in
            guard binding.scope == .private, !binding.owner.isEmpty else { return false }
            let key = DatabaseKey(container: binding.container, environment: binding.environment, scope: .private, owner: binding.owner)
            return try await recordStore.read { tx in
                guard let database = try await tx.database(key) else { return false }
                return !(try await tx.referencedAssets(database: database.id, checksums: [fileChecksum])).isEmpty
            }
        }
    }

    /// The asset signing key kept in `store`: 256 random bits stored by the first caller (an
    /// insert-if-absent, so processes starting at once agree).
    package static func signingKey(in store: any RecordStore) async throws -> SymmetricKey {
        let candidate = SymmetricKey(size: .bits256).withUnsafeBytes { Data($0) }.base64EncodedString()
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        let stored = try await store.write { tx in try await tx.serverSecret(name: signingKeyName, candidate: candidate, createdAt: now) }
        guard let bytes = Data(base64Encoded: stored), bytes.count >= 16 else {
            throw UbiquityError(.io, "the asset signing key in the record store (server_secrets \(signingKeyName)) is damaged")
        }
        return SymmetricKey(data: bytes)
    }
}
