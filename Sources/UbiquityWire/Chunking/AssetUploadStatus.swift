// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// What `GET` on an upload URL answers (this server's extension of CloudKit's upload URL, see
/// `docs/assets.md`): how many bytes of a resumable upload the server holds, the size limit,
/// and — when the server deduplicates — its chunking parameters and where the chunk endpoints
/// are (relative references, resolved against the upload URL).
///
/// ```json
/// {"received": 1048576, "size": 4194304, "maximumSize": 52428800,
///  "chunking": {"algorithm": "fastcdc2020", "minimumSize": 16384, …},
///  "missingURL": "../chunks/missing", "chunkURL": "../chunks/", "manifestURL": "../manifest"}
/// ```
public struct AssetUploadStatus: Sendable, Hashable {
    /// The header that carries ``received`` on every answer of a resumable upload.
    public static let offsetHeader = "Upload-Offset"

    /// Bytes of the upload the server holds; a resumed upload continues from here.
    public var received: Int64
    /// The total size the upload announced (`Content-Range: bytes a-b/TOTAL`), when known.
    public var size: Int64?
    /// The largest asset the server accepts, in bytes.
    public var maximumSize: Int64
    /// The server's chunking, when it offers the deduplicating extension.
    public var chunking: FastCDC.Parameters?
    /// `POST` here `{token, chunks | packedChunks, fileChecksum?, size?}` → `{missing: [hash]}`.
    public var missingURL: String?
    /// `PUT` a chunk's bytes to this prefix followed by its hash, with `?token=`.
    public var chunkURL: String?
    /// `POST` here `{token, chunks | packedChunks}` (or just `{token}` after `missing`) → `{singleFile}`.
    public var manifestURL: String?

    /// Makes a status.
    public init(received: Int64, size: Int64? = nil, maximumSize: Int64, chunking: FastCDC.Parameters? = nil,
                missingURL: String? = nil, chunkURL: String? = nil, manifestURL: String? = nil) {
        self.received = received
        self.size = size
        self.maximumSize = maximumSize
        self.chunking = chunking
        self.missingURL = missingURL
        self.chunkURL = chunkURL
        self.manifestURL = manifestURL
    }

    /// Whether the server offers the deduplicating extension.
    public var offersDeduplication: Bool { chunking != nil && missingURL != nil && chunkURL != nil && manifestURL != nil }

    /// The JSON form.
    public var json: JSONValue {
        var writer = WireWriter()
        writer.set("received", received)
        writer.set("size", size)
        writer.set("maximumSize", maximumSize)
        writer.set("chunking", chunking?.json)
        writer.set("missingURL", missingURL)
        writer.set("chunkURL", chunkURL)
        writer.set("manifestURL", manifestURL)
        return writer.json
    }

    /// Reads the JSON form. An unknown chunking algorithm reads as no deduplication.
    public init(json: JSONValue) throws {
        let reader = try WireReader(json, path: "")
        guard let received = try reader.integer("received") else { throw WireReader.missing("received", "a number") }
        self.received = received
        size = try reader.integer("size")
        maximumSize = try reader.integer("maximumSize") ?? Int64.max
        chunking = try reader.value("chunking").flatMap { try? FastCDC.Parameters(json: $0, path: "chunking") }
        missingURL = try reader.string("missingURL")
        chunkURL = try reader.string("chunkURL")
        manifestURL = try reader.string("manifestURL")
    }
}
