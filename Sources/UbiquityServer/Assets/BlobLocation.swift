// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityCore

/// Where a server keeps asset content: a folder of pack files (``PackBlobStore`` over
/// ``FolderObjects``; a folder of one file per chunk that an earlier version wrote stays a
/// ``FileBlobStore``) or an S3-compatible bucket (``PackBlobStore`` over ``S3Client``).
/// `ubiq serve --blobs DIR|s3://BUCKET/PREFIX`.
package enum BlobLocation: Sendable, Hashable {
    /// A folder (absolute path); shared between servers only through a shared file system.
    case folder(String)
    /// A bucket, with the credentials to sign for it.
    case bucket(S3Location, S3RequestSigner.Credentials)

    /// Opens the store: the folder's (created when missing; `fileConfiguration`'s chunking,
    /// durability and cached sessions apply to either kind), or the bucket's after checking that
    /// it answers.
    /// - Throws: `UbiquityError` naming the folder or bucket and what went wrong.
    package func open(fileConfiguration: FileBlobStore.Configuration = FileBlobStore.Configuration(), logger: Logger) async throws -> any BlobStore {
        switch self {
        case .folder(let path):
            // a folder the chunk-per-file store wrote keeps it (move it with `ubiq admin blobs
            // migrate`); any other folder holds pack files
            if FileManager.default.fileExists(atPath: path + "/chunks") {
                return try FileBlobStore(directory: URL(fileURLWithPath: path), configuration: fileConfiguration, logger: logger)
            }
            var configuration = PackBlobStore.Configuration(chunking: fileConfiguration.chunking)
            configuration.cachedSessions = fileConfiguration.cachedSessions
            let objects = try FolderObjects(folder: URL(fileURLWithPath: path), durable: fileConfiguration.syncBeforeCommit)
            return PackBlobStore(objects: objects, configuration: configuration, logger: logger)
        case .bucket(let location, let credentials):
            let store = PackBlobStore(objects: S3Client(location: location, credentials: credentials, logger: logger), logger: logger)
            do {
                try await store.checkReachable()
            } catch let error as UbiquityError {
                throw UbiquityError(error.code, "the blob bucket \(location.url) at \(location.endpoint.absoluteString) cannot be used: \(error.message)")
            }
            return store
        }
    }

    /// `DIR` or `s3://BUCKET/PREFIX`, as the user wrote it.
    package var description: String {
        switch self {
        case .folder(let path): path
        case .bucket(let location, _): location.url
        }
    }
}
