// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityCore

/// Where a server keeps asset content: a folder (``FileBlobStore``) or an S3-compatible bucket
/// (``S3BlobStore``). `ubiq serve --blobs DIR|s3://BUCKET/PREFIX`.
package enum BlobLocation: Sendable, Hashable {
    /// A folder (absolute path); shared between servers only through a shared file system.
    case folder(String)
    /// A bucket, with the credentials to sign for it.
    case bucket(S3Location, S3RequestSigner.Credentials)

    /// Opens the store: the folder's (created when missing), or the bucket's after checking
    /// that it answers.
    /// - Throws: `UbiquityError` naming the folder or bucket and what went wrong.
    package func open(fileConfiguration: FileBlobStore.Configuration = FileBlobStore.Configuration(), logger: Logger) async throws -> any BlobStore {
        switch self {
        case .folder(let path):
            return try FileBlobStore(directory: URL(fileURLWithPath: path), configuration: fileConfiguration, logger: logger)
        case .bucket(let location, let credentials):
            let store = S3BlobStore(client: S3Client(location: location, credentials: credentials, logger: logger), logger: logger)
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
