// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// Where a chunk's bytes are in a pack store: `size` bytes at `offset` in pack object `pack`.
struct PackChunkLocation: Sendable, Hashable {
    /// The chunk's SHA-256 (hex).
    var hash: String
    /// Its length.
    var size: Int
    /// The pack's id (`packs/<id>`).
    var pack: String
    /// Where the chunk starts in the pack.
    var offset: Int64

    var ref: AssetChunkRef { AssetChunkRef(hash: hash, size: size) }

    /// `hash size pack offset`, a line of a manifest, session or pack index.
    var line: String { "\(hash) \(size) \(pack) \(offset)\n" }

    /// Reads ``line`` (without its newline); nil when it is not one.
    init?(line: Substring) {
        let fields = line.split(separator: " ")
        guard fields.count == 4, AssetChunkRef.isValidHash(String(fields[0])), let size = Int(fields[1]), size > 0,
              PackID.isValid(fields[2]), let offset = Int64(fields[3]), offset >= 0 else { return nil }
        self.init(hash: String(fields[0]), size: size, pack: String(fields[2]), offset: offset)
    }

    init(hash: String, size: Int, pack: String, offset: Int64) {
        self.hash = hash
        self.size = size
        self.pack = pack
        self.offset = offset
    }

    /// Lines of ``line``s; the torn or damaged lines and those after them are dropped when
    /// `lenient`, else they throw `io` naming `what`.
    static func lines(_ text: Substring, lenient: Bool, what: String) throws -> [PackChunkLocation] {
        var out: [PackChunkLocation] = []
        for line in text.split(separator: "\n", omittingEmptySubsequences: true) {
            guard let location = PackChunkLocation(line: line) else {
                if lenient { break }
                throw UbiquityError(.io, "\(what) is damaged (line \(out.count + 1))")
            }
            out.append(location)
        }
        return out
    }
}

/// Pack ids: 16 hex digits of the creation time in milliseconds and 16 random ones, so they sort
/// by age and never collide between servers.
enum PackID {
    static func make() -> String {
        let millis = UInt64(Date().timeIntervalSince1970 * 1000)
        let hex = String(millis, radix: 16)
        return String(repeating: "0", count: max(0, 16 - hex.count)) + hex + Hex.encode((0..<8).map { _ in UInt8.random(in: 0...255) })
    }

    static func isValid(_ id: Substring) -> Bool {
        id.utf8.count == 32 && id.utf8.allSatisfy { (0x30...0x39).contains($0) || (0x61...0x66).contains($0) }
    }
}

/// An asset as ``PackBlobStore`` keeps it (`manifests/<checksum hex>`): the header line of
/// ``BlobManifest`` with its own magic, then where each chunk is:
///
/// ```
/// ubiquity-s3-manifest 1 <fileChecksum> <size> <chunkCount>
/// <sha256 hex> <size> <pack id> <offset>
/// …
/// ```
struct PackManifest: Sendable, Hashable {
    static let magic = "ubiquity-s3-manifest"

    var fileChecksum: String
    var size: Int64
    var chunks: [PackChunkLocation]

    var info: BlobInfo { BlobInfo(fileChecksum: fileChecksum, size: size, chunkCount: chunks.count) }

    /// The object's bytes.
    func encoded() -> [UInt8] {
        var text = "\(Self.magic) 1 \(fileChecksum) \(size) \(chunks.count)\n"
        text.reserveCapacity(text.utf8.count + chunks.count * 120)
        for chunk in chunks { text += chunk.line }
        return Array(text.utf8)
    }

    /// Reads a manifest, checking that its chunks add up to its size.
    static func decode(_ bytes: some Collection<UInt8>, key: String) throws -> PackManifest {
        let text = String(decoding: bytes, as: UTF8.self)
        let header = text.prefix { $0 != "\n" }
        let fields = header.split(separator: " ")
        guard fields.count == 5, fields[0] == magic, fields[1] == "1", let size = Int64(fields[3]), size >= 0,
              let count = Int(fields[4]), count >= 0 else {
            throw UbiquityError(.io, "the blob manifest \(key) is damaged (bad header)")
        }
        let chunks = try PackChunkLocation.lines(text.dropFirst(header.count), lenient: false, what: "the blob manifest \(key)")
        let total = chunks.reduce(Int64(0)) { $0 + Int64($1.size) }
        guard chunks.count == count, total == size else {
            throw UbiquityError(.io, "the blob manifest \(key) is damaged: its chunks add up to \(total) bytes in \(chunks.count) chunks, not \(size) in \(count)")
        }
        return PackManifest(fileChecksum: String(fields[2]), size: size, chunks: chunks)
    }
}
