// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import UbiquityCore
import UbiquityWire

/// Limits of the asset endpoints.
package struct AssetConfiguration: Sendable {
    /// The largest asset accepted, in bytes. CloudKit documents 50 MB (the default here is
    /// 50 MiB); self-hosted servers may allow many GiB.
    package var maximumAssetSize: Int64
    /// How long a download URL stays valid.
    package var downloadURLLifetime: TimeInterval
    /// How long a resumable upload (or a deduplicated upload's chunk list) may continue after
    /// its upload URL expired, counted from the session's creation (which must precede the
    /// expiry).
    package var uploadSessionLifetime: TimeInterval
    /// The largest JSON body of the chunk endpoints (chunk lists), in bytes.
    package var maximumChunkListBytes: Int

    /// Makes a configuration: 50 MiB assets, 1-hour download URLs, 24-hour upload sessions,
    /// 32 MiB chunk lists.
    package init(maximumAssetSize: Int64 = 50 << 20, downloadURLLifetime: TimeInterval = 3600,
                uploadSessionLifetime: TimeInterval = 24 * 3600, maximumChunkListBytes: Int = 32 << 20) {
        self.maximumAssetSize = maximumAssetSize
        self.downloadURLLifetime = downloadURLLifetime
        self.uploadSessionLifetime = uploadSessionLifetime
        self.maximumChunkListBytes = maximumChunkListBytes
    }
}

/// The asset side of the records server, for the records engine: makes upload URLs, checks
/// receipts when a record with an asset field is saved, issues receipts for re-referenced
/// assets and download URLs for fetched ones, and holds the ``BlobStore``. Its routes are
/// ``AssetRoutes``.
///
/// ```swift
/// let assets = AssetService(store: try FileBlobStore(directory: data.appending(path: "blobs"), logger: logger),
///                           key: persistedKey, logger: logger)
/// AssetRoutes(service: assets).register(on: router)
/// let url = assets.uploadURL(for: binding, baseURL: "https://cloud.example.org")
/// ```
package struct AssetService: Sendable {
    /// The path prefix of every asset route.
    package static let pathPrefix = "/assets/1"

    /// Where the bytes are.
    package let store: any BlobStore
    /// Signs and verifies tokens and receipts.
    package let signer: AssetSigner
    /// Limits.
    package let configuration: AssetConfiguration
    /// Whether an upload for `binding` may be answered from the stored asset `fileChecksum`
    /// without its bytes (deduplication): only when the caller can already read that content
    /// (issue 24, finding 1). Knowing a checksum is never enough.
    package let canDeduplicate: ContentAccess
    let logger: Logger

    /// Whether the uploader of `binding` can already read the stored asset `fileChecksum`.
    package typealias ContentAccess = @Sendable (_ binding: AssetBinding, _ fileChecksum: String) async throws -> Bool

    /// A service over `store`, signing with `key` (keep it secret and stable: tokens and
    /// receipts made with another key are refused as forged). `canDeduplicate` says which stored
    /// content an upload may be answered from (by default none: every upload sends its bytes).
    package init(store: any BlobStore, key: SymmetricKey, configuration: AssetConfiguration = AssetConfiguration(), logger: Logger,
                canDeduplicate: @escaping ContentAccess = { _, _ in false }) {
        self.store = store
        self.signer = AssetSigner(key: key)
        self.configuration = configuration
        self.canDeduplicate = canDeduplicate
        self.logger = logger
    }

    /// The upload URL for one asset field (what `assets/upload` answers in `url`): valid for
    /// 15 minutes; `POST` the bytes to it.
    /// - Parameter baseURL: the server's public base URL (`https://host:port`, no trailing slash).
    package func uploadURL(for binding: AssetBinding, baseURL: String, now: Date = Date()) -> String {
        "\(Self.trimmed(baseURL))\(Self.pathPrefix)/upload/\(signer.makeUploadToken(for: binding, now: now))"
    }

    /// Checks an asset value saved into the field `binding` (with `binding.recordName` the record
    /// being saved): its receipt must be valid, unexpired, issued for this field and for this
    /// `fileChecksum` and `size`, and the content must be stored.
    /// - Returns: the stored content's description.
    /// - Throws: `WireError` `BAD_REQUEST` naming the field and the precise reason.
    package func verifyReceipt(_ asset: WireAsset, binding: AssetBinding, now: Date = Date()) async throws -> BlobInfo {
        let field = binding.fieldName
        guard let receipt = asset.receipt else {
            throw WireError(.badRequest, "field \(field): an asset needs the receipt its upload returned")
        }
        guard let checksum = asset.fileChecksum, let size = asset.size else {
            throw WireError(.badRequest, "field \(field): an asset needs fileChecksum and size")
        }
        do {
            _ = try signer.verifyReceipt(receipt, expected: binding, fileChecksum: checksum, size: size, now: now)
        } catch {
            throw WireError(.badRequest, "field \(field): \(error.message)")
        }
        guard let info = try await store.info(fileChecksum: checksum), info.size == size else {
            throw WireError(.badRequest, "field \(field): the asset's content is no longer stored; upload it again")
        }
        _ = try await store.touch(fileChecksum: checksum)
        return info
    }

    /// A receipt for content already stored, to put it in another record or field
    /// (`assets/rereference`).
    /// - Throws: `WireError` `NOT_FOUND` when the content is not stored.
    package func rereferenceReceipt(fileChecksum: String, size: Int64, binding: AssetBinding, now: Date = Date()) async throws -> WireAsset {
        guard let info = try await store.info(fileChecksum: fileChecksum), info.size == size else {
            throw WireError(.notFound, "field \(binding.fieldName): no stored asset has checksum \(fileChecksum) and size \(size)")
        }
        _ = try await store.touch(fileChecksum: fileChecksum)
        return WireAsset(fileChecksum: fileChecksum, size: size,
                         receipt: signer.makeReceipt(for: binding, fileChecksum: fileChecksum, size: size, now: now))
    }

    /// The download URL of stored content, with CloudKit's literal `${f}` placeholder where the
    /// client puts a file name; valid for ``AssetConfiguration/downloadURLLifetime``.
    package func downloadURL(fileChecksum: String, size: Int64, container: String, baseURL: String, now: Date = Date()) -> String {
        let token = signer.makeDownloadToken(fileChecksum: fileChecksum, size: size, container: container,
                                             expiresAt: now.addingTimeInterval(configuration.downloadURLLifetime))
        return "\(Self.trimmed(baseURL))\(Self.pathPrefix)/download/\(token)/${f}"
    }

    /// The routes serving the URLs this service makes.
    package var routes: AssetRoutes { AssetRoutes(service: self) }

    private static func trimmed(_ baseURL: String) -> String {
        var text = baseURL
        while text.hasSuffix("/") { text.removeLast() }
        return text
    }
}
