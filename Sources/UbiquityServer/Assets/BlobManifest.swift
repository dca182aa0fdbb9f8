// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// An asset as ``FileBlobStore`` stores it: its checksum, size and ordered chunks. On disk it is
/// text, one header line then one line per chunk:
///
/// ```
/// ubiquity-blob-manifest 1 <fileChecksum> <size> <chunkCount>[ unverified]
/// <sha256 hex> <size>
/// …
/// ```
///
/// `unverified`: the checksum is the uploader's claim, not yet checked against the chunks
/// (`FileBlobStore+Verification.swift`).
struct BlobManifest: Sendable, Hashable {
    static let magic = "ubiquity-blob-manifest"

    var fileChecksum: String
    var size: Int64
    var chunks: [AssetChunkRef]
    /// Whether the store checked that the chunks hash to `fileChecksum`.
    var verified = true

    var info: BlobInfo { BlobInfo(fileChecksum: fileChecksum, size: size, chunkCount: chunks.count, verified: verified) }

    /// The file's bytes.
    func encoded() -> [UInt8] {
        var text = "\(Self.magic) 1 \(fileChecksum) \(size) \(chunks.count)\(verified ? "" : " unverified")\n"
        text.reserveCapacity(text.utf8.count + chunks.count * 74)
        for chunk in chunks {
            text += chunk.hash
            text += " "
            text += String(chunk.size)
            text += "\n"
        }
        return Array(text.utf8)
    }

    /// Reads the header line only.
    static func decodeHeader(_ bytes: some Collection<UInt8>, path: String) throws -> BlobInfo {
        let line = bytes.prefix { $0 != 0x0A }
        let fields = String(decoding: line, as: UTF8.self).split(separator: " ")
        guard fields.count == 5 || (fields.count == 6 && fields[5] == "unverified"), fields[0] == magic, fields[1] == "1",
              let size = Int64(fields[3]), size >= 0, let count = Int(fields[4]), count >= 0 else {
            throw UbiquityError(.io, "the blob manifest \(path) is damaged (bad header)")
        }
        return BlobInfo(fileChecksum: String(fields[2]), size: size, chunkCount: count, verified: fields.count == 5)
    }

    /// Reads a whole manifest, checking that the chunk sizes add up to the size.
    static func decode(_ bytes: some Collection<UInt8>, path: String) throws -> BlobManifest {
        let info = try decodeHeader(bytes, path: path)
        var chunks: [AssetChunkRef] = []
        chunks.reserveCapacity(info.chunkCount)
        var total: Int64 = 0
        var lines = bytes.split(separator: 0x0A, omittingEmptySubsequences: true).dropFirst().makeIterator()
        while let line = lines.next() {
            guard line.count >= 66, let space = line.firstIndex(of: 0x20) else {  // 64 hex digits, a space, a size
                throw UbiquityError(.io, "the blob manifest \(path) is damaged (chunk line \(chunks.count + 1))")
            }
            let hash = String(decoding: line[line.startIndex..<space], as: UTF8.self)
            guard AssetChunkRef.isValidHash(hash), let size = Int(String(decoding: line[line.index(after: space)...], as: UTF8.self)), size > 0 else {
                throw UbiquityError(.io, "the blob manifest \(path) is damaged (chunk line \(chunks.count + 1))")
            }
            chunks.append(AssetChunkRef(hash: hash, size: size))
            total += Int64(size)
        }
        guard chunks.count == info.chunkCount, total == info.size else {
            throw UbiquityError(.io, "the blob manifest \(path) is damaged: its chunks add up to \(total) bytes in \(chunks.count) chunks, not \(info.size) in \(info.chunkCount)")
        }
        return BlobManifest(fileChecksum: info.fileChecksum, size: info.size, chunks: chunks, verified: info.verified)
    }
}
