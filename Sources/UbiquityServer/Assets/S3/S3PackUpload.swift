// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityCore

/// One pack being written: chunks appended to a part buffer, parts uploaded in the background as
/// they fill (a multipart upload, started with the first full part; a small pack is one `PUT`),
/// at most ``S3BlobStore/Configuration/partsInFlight`` at once, so memory stays within a few
/// parts whatever the asset's size. Closing completes the object, then writes its index
/// (`indexes/…`): only then may a manifest name its chunks.
///
/// Not shared: one writer drives it, its calls never overlap.
struct S3PackUpload: Sendable {
    let id: String
    private let client: S3Client
    private let configuration: S3BlobStore.Configuration
    private var buffer = ByteBuffer()
    private(set) var length: Int64 = 0
    private var uploadID: String?
    private var nextPart = 1
    private var uploading: [Task<S3Client.UploadedPart, any Error>] = []
    private var parts: [S3Client.UploadedPart] = []
    private(set) var entries: [S3ChunkLocation] = []

    var key: String { "packs/\(id)" }

    init(client: S3Client, configuration: S3BlobStore.Configuration) {
        id = S3PackID.make()
        self.client = client
        self.configuration = configuration
        buffer.reserveCapacity(min(configuration.partSize, 1 << 20))
    }

    /// Appends a chunk; where it will be.
    mutating func add(hash: String, bytes: [UInt8]) async throws -> S3ChunkLocation {
        let location = S3ChunkLocation(hash: hash, size: bytes.count, pack: id, offset: length)
        buffer.writeBytes(bytes)
        length += Int64(bytes.count)
        entries.append(location)
        if buffer.readableBytes >= configuration.partSize { try await sendPart() }
        return location
    }

    /// Hands the full part buffer to a background upload, first waiting for the oldest when
    /// enough are in flight.
    private mutating func sendPart() async throws {
        if uploadID == nil { uploadID = try await client.createMultipartUpload(key) }
        while uploading.count >= max(configuration.partsInFlight, 1) {
            parts.append(try await uploading.removeFirst().value)
        }
        let body = buffer
        buffer = ByteBuffer()
        buffer.reserveCapacity(configuration.partSize)
        let (client, key, id, number) = (self.client, self.key, self.uploadID!, nextPart)
        nextPart += 1
        uploading.append(Task { try await client.uploadPart(key, uploadID: id, number: number, body: body) })
    }

    /// Stores the rest and completes the pack, then writes its index. Returns the chunks it holds.
    mutating func close() async throws -> [S3ChunkLocation] {
        guard length > 0 else { return [] }
        if let uploadID {
            if buffer.readableBytes > 0 { try await sendPart() }
            for task in uploading { parts.append(try await task.value) }
            uploading = []
            try await client.completeMultipartUpload(key, uploadID: uploadID, parts: parts)
        } else {
            try await client.put(key, body: buffer)
        }
        buffer = ByteBuffer()
        try await client.put(S3PackIndex.key(pack: id), body: ByteBuffer(string: entries.map(\.line).joined()))
        return entries
    }

    /// Gives the pack up: parts in flight are cancelled and the multipart upload aborted (a pack
    /// written whole stays until garbage collection finds nothing naming it).
    mutating func abort() async {
        for task in uploading { task.cancel() }
        for task in uploading { _ = try? await task.value }
        uploading = []
        if let uploadID { try? await client.abortMultipartUpload(key, uploadID: uploadID) }
        buffer = ByteBuffer()
    }
}
