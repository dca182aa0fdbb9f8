// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityCore

/// One pack being written: chunks appended to an ``ObjectAppender`` (a multipart upload in a
/// bucket, a file in a folder), begun with the first chunk. Closing makes the pack appear whole,
/// then writes its index (`indexes/…`): only then may a manifest name its chunks.
///
/// Not shared: one writer drives it, its calls never overlap.
struct PackUpload: Sendable {
    let id: String
    private let objects: any BlobObjects
    private var appender: (any ObjectAppender)?
    private(set) var length: Int64 = 0
    private(set) var entries: [PackChunkLocation] = []

    var key: String { "packs/\(id)" }

    init(objects: any BlobObjects) {
        id = PackID.make()
        self.objects = objects
    }

    /// Appends a chunk; where it will be.
    mutating func add(hash: String, bytes: [UInt8]) async throws -> PackChunkLocation {
        if appender == nil { appender = try await objects.makeAppender(key) }
        let location = PackChunkLocation(hash: hash, size: bytes.count, pack: id, offset: length)
        try await appender!.append(ByteBuffer(bytes: bytes))
        length += Int64(bytes.count)
        entries.append(location)
        return location
    }

    /// Stores the rest and makes the pack whole, then writes its index. Returns the chunks it holds.
    mutating func close() async throws -> [PackChunkLocation] {
        guard let appender, length > 0 else { return [] }
        try await appender.close()
        self.appender = nil
        try await objects.put(PackIndex.key(pack: id), body: ByteBuffer(string: entries.map(\.line).joined()))
        return entries
    }

    /// Gives the pack up: nothing of it appears (a pack already whole stays until garbage
    /// collection finds nothing naming it).
    mutating func abort() async {
        await appender?.abort()
        appender = nil
    }
}
