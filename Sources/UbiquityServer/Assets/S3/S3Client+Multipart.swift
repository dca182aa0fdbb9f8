// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityCore

extension S3Client {
    /// A part of a multipart upload, as completing it names it.
    package struct UploadedPart: Sendable, Hashable {
        /// 1…10,000.
        package var number: Int
        /// The `ETag` the store answered for it.
        package var etag: String
    }

    /// The smallest part S3 accepts but for the last.
    package static let minimumPartSize = 5 << 20

    /// Starts a multipart upload of `key`; its upload id.
    package func createMultipartUpload(_ key: String) async throws -> String {
        let response = try await send(.POST, key: key, query: [("uploads", "")], expecting: [200])
        guard let id = try S3XML.parse(response.body.readableBytesView)["UploadId"]?.text, !id.isEmpty else {
            throw UbiquityError(.io, "the object store started a multipart upload of \(key) without an upload id")
        }
        return id
    }

    /// Uploads part `number` (1…10,000) of a multipart upload.
    package func uploadPart(_ key: String, uploadID: String, number: Int, body: ByteBuffer) async throws -> UploadedPart {
        let response = try await send(.PUT, key: key, query: [("partNumber", String(number)), ("uploadId", uploadID)], body: body, expecting: [200])
        guard let etag = response.headers.first(name: "etag") else {
            throw UbiquityError(.io, "the object store took part \(number) of \(key) without an ETag")
        }
        return UploadedPart(number: number, etag: etag)
    }

    /// Completes a multipart upload: the object appears whole, made of `parts` in order.
    package func completeMultipartUpload(_ key: String, uploadID: String, parts: [UploadedPart]) async throws {
        var xml = "<CompleteMultipartUpload xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\">"
        for part in parts.sorted(by: { $0.number < $1.number }) {
            xml += "<Part><PartNumber>\(part.number)</PartNumber><ETag>\(S3XML.escape(part.etag))</ETag></Part>"
        }
        xml += "</CompleteMultipartUpload>"
        let response = try await send(.POST, key: key, query: [("uploadId", uploadID)], headers: [("content-type", "application/xml")],
                                      body: ByteBuffer(string: xml), expecting: [200])
        try Self.throwIfError(response.body, doing: "complete the upload of \(key)")  // 200 with an <Error> body is a failure
    }

    /// Abandons a multipart upload: its parts are deleted (nothing when it is gone already).
    package func abortMultipartUpload(_ key: String, uploadID: String) async throws {
        _ = try await send(.DELETE, key: key, query: [("uploadId", uploadID)], expecting: [200, 204, 404])
    }

    /// A multipart upload begun and not completed or aborted.
    package struct PendingUpload: Sendable, Hashable {
        /// The object's key, relative to the prefix.
        package var key: String
        /// Its upload id.
        package var uploadID: String
        /// When it was begun.
        package var initiated: Date
    }

    /// The multipart uploads in progress (or abandoned) under `prefix` (relative to the location's).
    package func pendingUploads(prefix: String) async throws -> [PendingUpload] {
        let response = try await send(.GET, key: "", query: [("uploads", ""), ("prefix", location.prefix + prefix)], expecting: [200])
        return try S3XML.parse(response.body.readableBytesView).all("Upload").compactMap { upload in
            guard let key = upload["Key"]?.text, key.hasPrefix(location.prefix), let id = upload["UploadId"]?.text else { return nil }
            return PendingUpload(key: String(key.dropFirst(location.prefix.count)), uploadID: id,
                                 initiated: upload["Initiated"].flatMap { S3Client.isoDate($0.text) } ?? Date())
        }
    }
}
