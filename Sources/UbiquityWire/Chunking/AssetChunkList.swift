// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// An asset's chunk list as the download side of the deduplicating extension sends it
/// (`GET <download URL>?manifest=1`, see `docs/assets.md`, "Chunk-level downloads"): the content's
/// checksum and size, how the server cut it, and its chunks in order.
///
/// On the wire the chunks are packed like ``AssetChunkRef/packed(_:)``, except that each hash may
/// be cut to its first ``hashBytes`` bytes (8–32) to keep the list small: a 1 GiB asset has about
/// 16 000 chunks, 590 KB with whole hashes, 260 KB with 12-byte ones. A shortened hash only
/// proposes which local bytes to reuse; the receiver checks the whole file's checksum anyway.
public struct AssetChunkList: Sendable, Hashable {
    /// Standard base64 of the SHA-256 of the whole content.
    public var fileChecksum: String
    /// The content's length in bytes.
    public var size: Int64
    /// How the content was cut.
    public var chunking: FastCDC.Parameters
    /// How many leading bytes of each chunk's SHA-256 ``chunks`` carry (32: whole hashes).
    public var hashBytes: Int
    /// The chunks in order; each `hash` is the first ``hashBytes`` bytes of the chunk's SHA-256
    /// in lower-case hex.
    public var chunks: [AssetChunkRef]

    /// The range of hash lengths the wire form allows.
    public static let hashByteRange = 8...32

    /// Makes a list; hashes longer than `hashBytes` bytes are cut to it.
    public init(fileChecksum: String, size: Int64, chunking: FastCDC.Parameters, hashBytes: Int = 32, chunks: [AssetChunkRef]) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.chunking = chunking
        self.hashBytes = hashBytes
        self.chunks = chunks.map { AssetChunkRef(hash: String($0.hash.prefix(hashBytes * 2)), size: $0.size) }
    }

    /// `{"fileChecksum", "size", "chunking", "hashBytes", "chunkCount", "packedChunks"}`.
    public var json: JSONValue {
        .object([
            "fileChecksum": .string(fileChecksum),
            "size": .integer(size),
            "chunking": chunking.json,
            "hashBytes": .integer(Int64(hashBytes)),
            "chunkCount": .integer(Int64(chunks.count)),
            "packedChunks": .string(Self.pack(chunks, hashBytes: hashBytes)),
        ])
    }

    /// Reads the JSON form, checking that the chunk sizes add up to the size.
    /// - Throws: `UbiquityError` (`invalidArgument`) naming what is wrong.
    public init(json: JSONValue) throws {
        let reader = try WireReader(json, path: "")
        let checksum = try reader.requiredString("fileChecksum")
        guard let size = try reader.integer("size"), size >= 0 else { throw WireReader.missing(reader.path("size"), "a size of 0 or more") }
        guard let chunkingJSON = try reader.value("chunking") else { throw WireReader.missing(reader.path("chunking"), "the chunking parameters") }
        let chunking = try FastCDC.Parameters(json: chunkingJSON, path: reader.path("chunking"))
        let hashBytes = Int(try reader.integer("hashBytes") ?? 32)
        guard Self.hashByteRange.contains(hashBytes) else {
            throw WireReader.invalid(reader.path("hashBytes"), "between \(Self.hashByteRange.lowerBound) and \(Self.hashByteRange.upperBound), not \(hashBytes)")
        }
        let chunks = try Self.unpack(try reader.requiredString("packedChunks"), hashBytes: hashBytes, path: reader.path("packedChunks"))
        let total = chunks.reduce(Int64(0)) { $0 + Int64($1.size) }
        guard total == size else {
            throw WireReader.invalid(reader.path("packedChunks"), "the chunks add up to \(total) bytes, not the asset's \(size)")
        }
        self.init(fileChecksum: checksum, size: size, chunking: chunking, hashBytes: hashBytes, chunks: chunks)
    }

    /// Base64 of, per chunk, the first `hashBytes` bytes of its hash then its size as a
    /// big-endian `UInt32`.
    public static func pack(_ chunks: [AssetChunkRef], hashBytes: Int) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chunks.count * (hashBytes + 4))
        for chunk in chunks {
            var hash = Hex.decode(String(chunk.hash.prefix(hashBytes * 2))) ?? []
            hash += [UInt8](repeating: 0, count: max(0, hashBytes - hash.count))
            bytes.append(contentsOf: hash.prefix(hashBytes))
            let size = UInt32(truncatingIfNeeded: chunk.size)
            bytes.append(contentsOf: [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)])
        }
        return Data(bytes).base64EncodedString()
    }

    /// Reads ``pack(_:hashBytes:)``; `path` names it in errors.
    public static func unpack(_ text: String, hashBytes: Int, path: String) throws -> [AssetChunkRef] {
        let stride = hashBytes + 4
        guard let data = Data(base64Encoded: text), data.count % stride == 0 else {
            throw WireReader.invalid(path, "packed chunks are base64 of \(stride) bytes per chunk (\(hashBytes)-byte hash, big-endian 32-bit size)")
        }
        let bytes = [UInt8](data)
        var chunks: [AssetChunkRef] = []
        chunks.reserveCapacity(bytes.count / stride)
        var offset = 0
        while offset < bytes.count {
            let hash = Hex.encode(bytes[offset..<offset + hashBytes])
            let at = offset + hashBytes
            let size = Int(bytes[at]) << 24 | Int(bytes[at + 1]) << 16 | Int(bytes[at + 2]) << 8 | Int(bytes[at + 3])
            guard size > 0 else { throw WireReader.invalid("\(path)[\(offset / stride)]", "a chunk's size must be positive") }
            chunks.append(AssetChunkRef(hash: hash, size: size))
            offset += stride
        }
        return chunks
    }
}
