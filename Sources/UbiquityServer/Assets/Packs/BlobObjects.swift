// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore

/// An object as a listing or `head` describes it.
package struct StoredObject: Sendable, Hashable {
    /// Its key (relative to the store's prefix or folder).
    package var key: String
    /// Its length in bytes.
    package var size: Int64
    /// When it was last written or touched.
    package var lastModified: Date

    /// Makes a description.
    package init(key: String, size: Int64, lastModified: Date) {
        self.key = key
        self.size = size
        self.lastModified = lastModified
    }
}

/// Where a ``PackBlobStore`` keeps its objects: whole objects by key (`packs/…`, `indexes/…`,
/// `manifests/…`, `sessions/…`), each appearing complete or not at all. ``S3Client`` keeps them
/// in a bucket, ``FolderObjects`` as files in a folder.
package protocol BlobObjects: Sendable {
    /// Where they are, for messages (`s3://BUCKET/PREFIX`, a folder's path).
    var description: String { get }
    /// Writes an object whole (replacing one of that key).
    func put(_ key: String, body: ByteBuffer) async throws
    /// The object's bytes in `range` (all when nil); nil when there is no such object.
    func get(_ key: String, range: Range<Int64>?) async throws -> ByteBuffer?
    /// The object's size and age; nil when there is none.
    func head(_ key: String) async throws -> StoredObject?
    /// Deletes an object (nothing when absent).
    func delete(_ key: String) async throws
    /// Restarts the object's age; false when there is no such object.
    func touch(_ key: String) async throws -> Bool
    /// Every object whose key starts with `prefix`, in key order.
    func list(prefix: String) async throws -> [StoredObject]
    /// A new object written in pieces (a pack), visible only once closed.
    func makeAppender(_ key: String) async throws -> any ObjectAppender
    /// Deletes what appenders began before `olderThan` and never closed (a process that died
    /// while writing).
    func discardAbandonedWrites(olderThan: Date) async throws
    /// Checks that the objects can be reached and written (the bucket answers, the folder
    /// exists), so a server fails when it starts rather than at the first upload.
    func checkReachable() async throws
}

extension BlobObjects {
    /// The whole object; nil when there is none.
    func get(_ key: String) async throws -> ByteBuffer? { try await get(key, range: nil) }
}

/// An object being written in pieces (``BlobObjects/makeAppender(_:)``). One caller drives it;
/// its calls never overlap.
package protocol ObjectAppender: Sendable {
    /// Appends bytes. May wait while earlier bytes are stored (back-pressure).
    func append(_ bytes: ByteBuffer) async throws
    /// Stores the rest and makes the object appear whole, durably.
    func close() async throws
    /// Gives the object up: nothing appears.
    func abort() async
}
