// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension AssetChunkList {
    /// The JSON form written relative to `base` (an older version's list the receiver holds):
    /// the fields of ``json`` except `packedChunks`, plus `base` (the base's checksum), `edits`
    /// (``AssetChunkListDelta``, literal hashes of ``hashBytes`` bytes) and `listChecksum` (of
    /// the whole list with ``hashBytes``-byte hashes). nil when that would not be shorter — when
    /// at least half of the chunks are not in the base, or the base was cut otherwise.
    public func relativeJSON(to base: AssetChunkList) -> JSONValue? {
        guard base.chunking == chunking, !base.chunks.isEmpty, base.fileChecksum != fileChecksum else { return nil }
        let delta = AssetChunkListDelta.make(base: base.chunks, new: chunks)
        guard delta.literalCount * 2 < max(chunks.count, 1) else { return nil }
        return .object([
            "fileChecksum": .string(fileChecksum),
            "size": .integer(size),
            "chunking": chunking.json,
            "hashBytes": .integer(Int64(hashBytes)),
            "chunkCount": .integer(Int64(chunks.count)),
            "base": .string(base.fileChecksum),
            "edits": delta.json(hashBytes: hashBytes),
            "listChecksum": .string(AssetChunkListDelta.listChecksum(chunks, hashBytes: hashBytes)),
        ])
    }

    /// Reads the JSON form, whole (as ``init(json:)``) or relative to `base` (as
    /// ``relativeJSON(to:)`` writes it): the base's chunks (hashes cut to this list's
    /// `hashBytes`) and the edits give the list, which must then match `listChecksum`,
    /// `chunkCount` and `size`.
    /// - Throws: `UbiquityError` (`invalidArgument`) when the answer is relative to another
    ///   base than `base` (or `base` is nil), or the rebuilt list does not check out — the caller
    ///   then asks for the whole list.
    public init(json: JSONValue, base: AssetChunkList?) throws {
        let reader = try WireReader(json, path: "")
        guard let named = try reader.string("base") else {
            try self.init(json: json)
            return
        }
        guard let base, base.fileChecksum == named else {
            throw WireReader.invalid(reader.path("base"), "the list is relative to \(named), which this side does not hold")
        }
        let checksum = try reader.requiredString("fileChecksum")
        guard let size = try reader.integer("size"), size >= 0 else { throw WireReader.missing(reader.path("size"), "a size of 0 or more") }
        guard let chunkingJSON = try reader.value("chunking") else { throw WireReader.missing(reader.path("chunking"), "the chunking parameters") }
        let chunking = try FastCDC.Parameters(json: chunkingJSON, path: reader.path("chunking"))
        let hashBytes = Int(try reader.integer("hashBytes") ?? 32)
        guard Self.hashByteRange.contains(hashBytes), hashBytes <= base.hashBytes, base.chunking == chunking else {
            throw WireReader.invalid(reader.path("hashBytes"), "a relative list needs a base cut the same way with hashes of at least \(hashBytes) bytes")
        }
        guard let edits = try reader.value("edits") else { throw WireReader.missing(reader.path("edits"), "the edits to the base's list") }
        let delta = try AssetChunkListDelta(json: edits, hashBytes: hashBytes, path: reader.path("edits"))
        let baseChunks = base.hashBytes == hashBytes
            ? base.chunks : base.chunks.map { AssetChunkRef(hash: String($0.hash.prefix(hashBytes * 2)), size: $0.size) }
        let chunks = try delta.apply(to: baseChunks)
        let total = chunks.reduce(Int64(0)) { $0 + Int64($1.size) }
        guard total == size, try reader.integer("chunkCount").map({ $0 == Int64(chunks.count) }) ?? true else {
            throw WireReader.invalid(reader.path("edits"), "the rebuilt list has \(chunks.count) chunks and \(total) bytes, not the asset's")
        }
        guard let expected = try reader.string("listChecksum"), expected.lowercased() == AssetChunkListDelta.listChecksum(chunks, hashBytes: hashBytes) else {
            throw WireReader.invalid(reader.path("listChecksum"), "the list rebuilt from the base does not match the server's")
        }
        self.init(fileChecksum: checksum, size: size, chunking: chunking, hashBytes: hashBytes, chunks: chunks)
    }
}
