// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// The two kinds of asset identity (`fileChecksum`) this project uses, and the pure functions
/// that make and tell them apart (`docs/assets.md`, "Chunk-list checksums").
///
/// - ``Kind/sha256``: the standard base64 of the SHA-256 of the whole content (32 bytes, 44
///   characters ending in `=`). What a plain upload is answered with, what CloudKit clients and
///   records stored before chunk-list checksums carry; valid everywhere, always.
/// - ``Kind/chunkList``: the standard base64 of 33 bytes, a version byte (`0x01`) then the
///   SHA-256 of ``chunkListPreimage(_:)``: a tag line naming the version and the chunking, then
///   per chunk (FastCDC with ``chunking``, in order) its 32-byte SHA-256 and its length as a
///   big-endian `UInt32`. Chunking is deterministic, so equal content gives an equal list and an
///   equal checksum; it can be computed from the chunk hashes alone (a scan splits the work over
///   several threads by range, which a whole-content SHA-256 cannot), and checked by a server
///   from the list (each chunk is checked against its hash when it is stored). 44 characters
///   without padding: never equal to a whole-content checksum, whose decoded length is 32.
///
/// The sync engine's content hashes are the same digests in lower-case hex: 64 digits (a
/// whole-content SHA-256) or 66 digits starting with `01` (a chunk-list checksum).
public enum AssetChecksum {
    /// What a checksum is computed over.
    public enum Kind: Sendable, Hashable {
        /// SHA-256 of the whole content.
        case sha256
        /// Versioned SHA-256 of the content's chunk list (version 1).
        case chunkList
    }

    /// The version byte that starts a chunk-list checksum's 33 bytes.
    public static let chunkListVersion: UInt8 = 1
    /// How content is cut for a version-1 chunk-list checksum: FastCDC 2020, 16/64/256 KiB,
    /// normalization level 2 (``FastCDC/Parameters/default``).
    public static var chunking: FastCDC.Parameters { .default }
    /// The first line of the hashed bytes: the version and the chunking, so that a list cut any
    /// other way can never collide with one cut this way.
    public static let chunkListTag: [UInt8] = Array("ubiquity-chunk-list 1 fastcdc2020 16384 65536 262144 2\n".utf8)

    /// The kind of a `fileChecksum` (standard base64), or nil when it is neither.
    public static func kind(of checksum: String) -> Kind? {
        guard let bytes = Data(base64Encoded: checksum) else { return nil }
        return kind(ofDigest: bytes)
    }

    /// The kind of a content hash in hex (64 or 66 digits), or nil when it is neither.
    public static func kind(ofHex hex: String) -> Kind? {
        guard hex.utf8.count == 64 || hex.utf8.count == 66, let bytes = Hex.decode(hex) else { return nil }
        return kind(ofDigest: bytes)
    }

    /// The kind of a checksum's raw bytes.
    public static func kind(ofDigest bytes: some Collection<UInt8>) -> Kind? {
        if bytes.count == 32 { return .sha256 }
        if bytes.count == 33, bytes.first == chunkListVersion { return .chunkList }
        return nil
    }

    /// The lower-case hex of a `fileChecksum`'s bytes (64 or 66 digits), or nil when it is not a
    /// checksum of either kind.
    public static func hex(_ checksum: String) -> String? {
        guard let bytes = Data(base64Encoded: checksum), kind(ofDigest: bytes) != nil else { return nil }
        return Hex.encode(bytes)
    }

    /// The `fileChecksum` (standard base64) of a hex content hash of either kind, or nil.
    public static func base64(hex: String) -> String? {
        guard kind(ofHex: hex) != nil, let bytes = Hex.decode(hex) else { return nil }
        return Data(bytes).base64EncodedString()
    }

    /// The bytes a version-1 chunk-list checksum hashes: ``chunkListTag``, then per chunk its
    /// 32-byte hash and its length (big-endian `UInt32`). Hashes must be whole (64 hex digits).
    public static func chunkListPreimage(_ chunks: [AssetChunkRef]) -> [UInt8] {
        var bytes = chunkListTag
        bytes.reserveCapacity(chunkListTag.count + chunks.count * 36)
        for chunk in chunks { appendEntry(hash: Hex.decode(chunk.hash) ?? [], size: chunk.size, to: &bytes) }
        return bytes
    }

    /// Appends one chunk's entry of ``chunkListPreimage(_:)`` to `bytes`: its 32-byte hash (a
    /// shorter one padded with zeros) and its length as a big-endian `UInt32`.
    public static func appendEntry(hash: some Collection<UInt8>, size: Int, to bytes: inout [UInt8]) {
        bytes.append(contentsOf: hash.prefix(32))
        if hash.count < 32 { bytes.append(contentsOf: repeatElement(0, count: 32 - hash.count)) }
        let length = UInt32(truncatingIfNeeded: size)
        bytes.append(contentsOf: [UInt8(length >> 24), UInt8(length >> 16 & 0xFF), UInt8(length >> 8 & 0xFF), UInt8(length & 0xFF)])
    }

    /// The version-1 chunk-list checksum (standard base64 of 33 bytes) of content whose FastCDC
    /// (``chunking``) chunks are `chunks` (whole hashes, in order).
    public static func chunkList(_ chunks: [AssetChunkRef]) -> String {
        let digest = SHA256.hash(data: chunkListPreimage(chunks))
        return Data([chunkListVersion] + Array(digest)).base64EncodedString()
    }

    /// Whether `chunks` (whole hashes) are the list `checksum` (a chunk-list checksum) names.
    public static func chunkList(_ chunks: [AssetChunkRef], matches checksum: String) -> Bool {
        kind(of: checksum) == .chunkList && chunkList(chunks) == checksum
    }
}
