// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityCore

/// An object written to a bucket in pieces: bytes gathered into parts of
/// ``S3Client/partSize``, each uploaded in the background as it fills (a multipart upload,
/// begun with the first full part; a small object is one `PUT`), at most
/// ``S3Client/partsInFlight`` at once, so memory stays within a few parts whatever the size.
actor S3MultipartAppender: ObjectAppender {
    private let client: S3Client
    private let key: String
    private var buffer = ByteBuffer()
    private var uploadID: String?
    private var nextPart = 1
    private var uploading: [Task<S3Client.UploadedPart, any Error>] = []
    private var parts: [S3Client.UploadedPart] = []

    init(client: S3Client, key: String) {
        self.client = client
        self.key = key
    }

    func append(_ bytes: ByteBuffer) async throws {
        var bytes = bytes
        buffer.writeBuffer(&bytes)
        if buffer.readableBytes >= client.partSize { try await sendPart() }
    }

    /// Hands the full part buffer to a background upload, first waiting for the oldest when
    /// enough are in flight.
    private func sendPart() async throws {
        if uploadID == nil { uploadID = try await client.createMultipartUpload(key) }
        while uploading.count >= client.partsInFlight {
            parts.append(try await uploading.removeFirst().value)
        }
        let body = buffer
        buffer = ByteBuffer()
        buffer.reserveCapacity(client.partSize)
        let (client, key, id, number) = (self.client, self.key, self.uploadID!, nextPart)
        nextPart += 1
        uploading.append(Task { try await client.uploadPart(key, uploadID: id, number: number, body: body) })
    }

    func close() async throws {
        if let uploadID {
            if buffer.readableBytes > 0 { try await sendPart() }
            for task in uploading { parts.append(try await task.value) }
            uploading = []
            try await client.completeMultipartUpload(key, uploadID: uploadID, parts: parts)
        } else {
            try await client.put(key, body: buffer)
        }
        buffer = ByteBuffer()
    }

    func abort() async {
        for task in uploading { task.cancel() }
        for task in uploading { _ = try? await task.value }
        uploading = []
        if let uploadID { try? await client.abortMultipartUpload(key, uploadID: uploadID) }
        buffer = ByteBuffer()
    }
}
