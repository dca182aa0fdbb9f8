// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// A chunk list written relative to an earlier one (the previous version's, which the other side
/// holds): runs of the base list's chunks by index, and the chunks the base lacks. A one-byte
/// edit of a 1 GiB file (about 16,000 chunks) is then three pieces and a few hundred bytes on
/// the wire instead of the whole list (`docs/assets.md`, "Lists relative to a base").
///
/// Pure values and functions: ``make(base:new:)`` builds it, ``apply(to:)`` rebuilds the list,
/// ``listChecksum(_:hashBytes:)`` lets the receiver confirm that its rebuilt list is the
/// sender's (the base it holds may not be the one the sender meant).
public struct AssetChunkListDelta: Sendable, Hashable {
    /// One piece of the new list, in order.
    public enum Piece: Sendable, Hashable {
        /// The base list's chunks at these indexes.
        case base(Range<Int>)
        /// Chunks the base does not supply.
        case chunks([AssetChunkRef])
    }

    /// The pieces; concatenated they are the new list.
    public var pieces: [Piece]

    /// Makes a delta from its pieces.
    public init(pieces: [Piece]) { self.pieces = pieces }

    /// How many chunks the new list has.
    public var chunkCount: Int {
        pieces.reduce(0) { (count: Int, piece: Piece) -> Int in
            switch piece {
            case .base(let range): count + range.count
            case .chunks(let chunks): count + chunks.count
            }
        }
    }

    /// How many chunks are carried literally (not taken from the base).
    public var literalCount: Int {
        pieces.reduce(0) { (count: Int, piece: Piece) -> Int in
            if case .chunks(let chunks) = piece { return count + chunks.count }
            return count
        }
    }

    /// The delta that turns `base` into `new`. Hashes are compared on the shorter of the two
    /// lists' hash lengths (a kept list may carry shortened hashes), with the size: each new
    /// chunk continues the current run of base chunks when the next base chunk matches, else
    /// starts a run at the first base chunk with its hash and size, else is carried literally.
    /// Inserts, deletes, in-place edits and moves all come out as a few pieces.
    public static func make(base: [AssetChunkRef], new: [AssetChunkRef]) -> AssetChunkListDelta {
        let digits = min(base.map(\.hash.utf8.count).min() ?? 64, new.map(\.hash.utf8.count).min() ?? 64)
        func key(_ chunk: AssetChunkRef) -> AssetChunkRef {
            chunk.hash.utf8.count == digits ? chunk : AssetChunkRef(hash: String(chunk.hash.prefix(digits)), size: chunk.size)
        }
        let baseKeys = base.map(key)
        var first: [AssetChunkRef: Int] = [:]
        first.reserveCapacity(base.count)
        for (index, chunk) in baseKeys.enumerated() where first[chunk] == nil { first[chunk] = index }
        var pieces: [Piece] = []
        var run: Range<Int>?
        var literal: [AssetChunkRef] = []
        func flushRun() {
            if let current = run { pieces.append(.base(current)) }
            run = nil
        }
        func flushLiteral() {
            if !literal.isEmpty { pieces.append(.chunks(literal)) }
            literal = []
        }
        for chunk in new {
            let wanted = key(chunk)
            if let current = run, current.upperBound < baseKeys.count, baseKeys[current.upperBound] == wanted {
                run = current.lowerBound..<current.upperBound + 1
            } else if let index = first[wanted] {
                flushRun()
                flushLiteral()
                run = index..<index + 1
            } else {
                flushRun()
                literal.append(chunk)
            }
        }
        flushRun()
        flushLiteral()
        return AssetChunkListDelta(pieces: pieces)
    }

    /// The new list: the base runs taken from `base` (with its hashes, whatever their length),
    /// the literal chunks as carried.
    /// - Throws: `UbiquityError` (`invalidArgument`) when a run reaches past the base's end.
    public func apply(to base: [AssetChunkRef]) throws -> [AssetChunkRef] {
        var out: [AssetChunkRef] = []
        out.reserveCapacity(chunkCount)
        for (index, piece) in pieces.enumerated() {
            switch piece {
            case .base(let range):
                guard range.lowerBound >= 0, range.upperBound <= base.count else {
                    throw WireReader.invalid("edits[\(index)]", "base chunks \(range.lowerBound)..<\(range.upperBound) reach past the base's \(base.count) chunks")
                }
                out.append(contentsOf: base[range])
            case .chunks(let chunks):
                out.append(contentsOf: chunks)
            }
        }
        return out
    }

    /// The wire form: `[{"base": [first, count]} | {"packedChunks": "…"}, …]`, literal chunks
    /// packed as ``AssetChunkList/pack(_:hashBytes:)`` with `hashBytes`-byte hashes.
    public func json(hashBytes: Int = 32) -> JSONValue {
        .array(pieces.map { piece -> JSONValue in
            switch piece {
            case .base(let range):
                .object(["base": .array([.integer(Int64(range.lowerBound)), .integer(Int64(range.count))])])
            case .chunks(let chunks):
                .object(["packedChunks": .string(AssetChunkList.pack(chunks, hashBytes: hashBytes))])
            }
        })
    }

    /// Reads the wire form (`path` names it in errors; `hashBytes` is the literal hashes' length).
    /// - Throws: `UbiquityError` (`invalidArgument`) naming the piece that is wrong.
    public init(json: JSONValue, hashBytes: Int = 32, path: String) throws {
        guard let array = json.arrayValue else { throw WireReader.mismatch(path, expected: "an array of edits", got: json) }
        var pieces: [Piece] = []
        pieces.reserveCapacity(array.count)
        for (index, element) in array.enumerated() {
            let reader = try WireReader(element, path: "\(path)[\(index)]")
            if let packed = try reader.string("packedChunks") {
                pieces.append(.chunks(try AssetChunkList.unpack(packed, hashBytes: hashBytes, path: reader.path("packedChunks"))))
            } else if let pair = try reader.array("base") {
                guard pair.count == 2, case .integer(let first) = pair[0], case .integer(let count) = pair[1], first >= 0, count > 0,
                      first <= Int64(Int32.max), count <= Int64(Int32.max) else {
                    throw WireReader.invalid(reader.path("base"), "[first, count]: the first base chunk's index (0 or more) and how many (1 or more)")
                }
                pieces.append(.base(Int(first)..<Int(first + count)))
            } else {
                throw WireReader.missing(reader.path("base"), "either base: [first, count] or packedChunks")
            }
        }
        self.init(pieces: pieces)
    }

    /// A check of a whole list, so that whoever rebuilds it from a delta can confirm it is the
    /// sender's: lower-case hex SHA-256 of its packed form with `hashBytes`-byte hashes
    /// (``AssetChunkList/pack(_:hashBytes:)`` before base64). An integrity check against a
    /// mismatched base, not an identity: the content's checksum is still what is trusted.
    public static func listChecksum(_ chunks: [AssetChunkRef], hashBytes: Int = 32) -> String {
        var digest = SHA256()
        var record = [UInt8](repeating: 0, count: hashBytes + 4)
        for chunk in chunks {
            let hash = Hex.decode(String(chunk.hash.prefix(hashBytes * 2))) ?? []
            for index in 0..<hashBytes { record[index] = index < hash.count ? hash[index] : 0 }
            let size = UInt32(truncatingIfNeeded: chunk.size)
            record[hashBytes] = UInt8(size >> 24)
            record[hashBytes + 1] = UInt8(size >> 16 & 0xFF)
            record[hashBytes + 2] = UInt8(size >> 8 & 0xFF)
            record[hashBytes + 3] = UInt8(size & 0xFF)
            record.withUnsafeBytes { digest.update(bufferPointer: $0) }
        }
        return digest.finalize().hex
    }
}
