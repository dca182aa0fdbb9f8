// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// One chunk of an asset, as the deduplicating upload extension names it: the SHA-256 of its
/// bytes (64 lower-case hex digits) and its length.
///
/// A list of them travels either as JSON (`[{"hash": "…", "size": 65536}, …]`) or packed
/// (``packed(_:)``: base64 of 36 bytes per chunk, the 32-byte hash then the size as a big-endian
/// 32-bit integer), which is about half the size.
public struct AssetChunkRef: Sendable, Hashable, CustomStringConvertible {
    /// SHA-256 of the chunk's bytes, 64 lower-case hex digits.
    public var hash: String
    /// The chunk's length in bytes.
    public var size: Int

    /// Makes a chunk reference.
    public init(hash: String, size: Int) {
        self.hash = hash
        self.size = size
    }

    /// `hash:size`.
    public var description: String { "\(hash):\(size)" }

    /// Whether `text` is a chunk hash: 64 lower-case hex digits.
    public static func isValidHash(_ text: String) -> Bool {
        let utf8 = text.utf8
        return utf8.count == 64 && utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }

    /// `{"hash": "…", "size": n}`.
    public var json: JSONValue { .object(["hash": .string(hash), "size": .integer(Int64(size))]) }

    /// Reads `{"hash", "size"}`, checking the hash's form and that the size is positive.
    public init(json: JSONValue, path: String) throws {
        let reader = try WireReader(json, path: path)
        let hash = try reader.requiredString("hash").lowercased()
        guard AssetChunkRef.isValidHash(hash) else {
            throw WireReader.invalid(reader.path("hash"), "a chunk hash is the SHA-256 of the chunk as 64 hex digits")
        }
        guard let size = try reader.integer("size") else { throw WireReader.missing(reader.path("size"), "a number") }
        guard size > 0, size <= Int64(UInt32.max) else { throw WireReader.invalid(reader.path("size"), "a chunk's size must be between 1 and \(UInt32.max), not \(size)") }
        self.init(hash: hash, size: Int(size))
    }

    /// The packed form of a list: base64 of, per chunk, the 32-byte hash then the size as a
    /// big-endian `UInt32`.
    public static func packed(_ chunks: [AssetChunkRef]) -> String {
        var bytes: [UInt8] = []
        bytes.reserveCapacity(chunks.count * 36)
        for chunk in chunks {
            bytes.append(contentsOf: Hex.decode(chunk.hash) ?? [UInt8](repeating: 0, count: 32))
            let size = UInt32(truncatingIfNeeded: chunk.size)
            bytes.append(contentsOf: [UInt8(size >> 24), UInt8(size >> 16 & 0xFF), UInt8(size >> 8 & 0xFF), UInt8(size & 0xFF)])
        }
        return Data(bytes).base64EncodedString()
    }

    /// Reads the packed form; `path` names it in errors.
    public static func unpack(_ text: String, path: String) throws -> [AssetChunkRef] {
        guard let data = Data(base64Encoded: text), data.count % 36 == 0 else {
            throw WireReader.invalid(path, "packed chunks are base64 of 36 bytes per chunk (32-byte SHA-256, big-endian 32-bit size)")
        }
        let bytes = [UInt8](data)
        var chunks: [AssetChunkRef] = []
        chunks.reserveCapacity(bytes.count / 36)
        var offset = 0
        while offset < bytes.count {
            let hash = Hex.encode(bytes[offset..<offset + 32])
            let size = Int(bytes[offset + 32]) << 24 | Int(bytes[offset + 33]) << 16 | Int(bytes[offset + 34]) << 8 | Int(bytes[offset + 35])
            guard size > 0 else { throw WireReader.invalid("\(path)[\(offset / 36)]", "a chunk's size must be positive") }
            chunks.append(AssetChunkRef(hash: hash, size: size))
            offset += 36
        }
        return chunks
    }

    /// Reads a request's chunk list: `chunks` (JSON array) or `packedChunks` (packed string);
    /// nil when it has neither.
    package static func list(from reader: WireReader) throws -> [AssetChunkRef]? {
        if let packed = try reader.string("packedChunks") {
            return try unpack(packed, path: reader.path("packedChunks"))
        }
        guard let array = try reader.array("chunks") else { return nil }
        return try array.enumerated().map { try AssetChunkRef(json: $1, path: "\(reader.path("chunks"))[\($0)]") }
    }
}
