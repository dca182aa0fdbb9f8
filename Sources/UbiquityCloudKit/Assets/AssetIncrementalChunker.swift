// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityWire
import UbiquityCore

/// Cuts content into exactly the chunks a full ``FastCDC`` run would, reusing the content's
/// previous chunk list so that unchanged chunks are not cut again: at a position where a chunk
/// starts, the previous list proposes the next chunk (its length and hash); when the next bytes
/// of that length hash to it, that is the chunk (FastCDC restarts at every chunk and decides a
/// cut from the chunk's own bytes only, so the same bytes from a chunk start give the same cut);
/// otherwise FastCDC cuts there, and after each cut the list is consulted again — by position
/// (the chunk that started at the same offset: in-place edits) and by content (the chunk after
/// the previous one with the hash just cut: inserts and deletes). The previous list's last
/// chunk is never proposed (it ended at the end of the old content, not at a cut).
///
/// A pure state machine over bytes the caller supplies, one chunk per call
/// (``next(_:atEnd:)``): every chunk's SHA-256 is computed either way, so only FastCDC's gear
/// hash is saved on reused chunks. The whole-content checksum is the caller's.
struct AssetIncrementalChunker {
    /// How content is cut.
    let parameters: FastCDC.Parameters
    /// The previous chunks (hashes possibly shortened to `hashBytes`).
    private let previous: [AssetChunkRef]
    /// How many hex digits of each previous hash are compared.
    private let hashDigits: Int
    /// The index of the first previous chunk with each (shortened) hash and size.
    private let byContent: [AssetChunkRef: Int]
    /// The index of the previous chunk that started at each offset.
    private let byOffset: [Int64: Int]
    /// The previous chunk proposed for the current position, or nil (FastCDC cuts).
    private var proposal: Int?
    /// Where the next chunk starts.
    private(set) var position: Int64 = 0
    /// The chunks so far, with whole hashes.
    private(set) var chunks: [AssetChunkRef] = []
    /// How many chunks were taken from the previous list (their bytes hashed, not cut).
    private(set) var reusedChunks = 0
    /// How many bytes FastCDC's gear hash went over (the cut chunks' bytes).
    private(set) var cutBytes: Int64 = 0

    /// A chunker at `start` of the content (0: its start; elsewhere the caller treats `start`
    /// as a chunk start, as a scan split by range does); `previous` is the content's earlier
    /// chunk list (ignored when cut with other parameters).
    init(parameters: FastCDC.Parameters, previous: AssetChunkList? = nil, startingAt start: Int64 = 0) {
        self.parameters = parameters
        let usable = previous.flatMap { $0.chunking == parameters ? $0 : nil }
        let chunks = usable?.chunks ?? []
        self.previous = chunks
        hashDigits = (usable?.hashBytes ?? 32) * 2
        var byContent: [AssetChunkRef: Int] = [:]
        var byOffset: [Int64: Int] = [:]
        byContent.reserveCapacity(chunks.count)
        byOffset.reserveCapacity(chunks.count)
        var offset: Int64 = 0
        for (index, chunk) in chunks.enumerated() where index < chunks.count - 1 {  // not the last
            if byContent[chunk] == nil { byContent[chunk] = index }
            byOffset[offset] = index
            offset += Int64(chunk.size)
        }
        self.byContent = byContent
        self.byOffset = byOffset
        position = start
        proposal = byOffset[start]
    }

    /// The largest number of bytes one call needs to see (a chunk is at most this long).
    var window: Int { parameters.maximumSize }

    /// Cuts the next chunk from `bytes`, which start where the next chunk starts and hold at
    /// least ``window`` bytes unless the content ends with them (`atEnd`). Returns the chunk's
    /// length (appended to ``chunks``), or nil when `bytes` is empty.
    mutating func next(_ bytes: UnsafeRawBufferPointer, atEnd: Bool) -> Int? {
        precondition(atEnd || bytes.count >= window, "the incremental chunker needs a whole chunk window")
        guard !bytes.isEmpty else { return nil }
        if let index = proposal, index < previous.count - 1 {
            let old = previous[index]
            if old.size <= bytes.count {
                let hash = Hex.encode(SHA256.hash(data: UnsafeRawBufferPointer(rebasing: bytes[..<old.size])))
                if hash.utf8.prefix(hashDigits).elementsEqual(old.hash.utf8) {
                    reusedChunks += 1
                    return append(AssetChunkRef(hash: hash, size: old.size), proposal: index + 1)
                }
            }
        }
        var chunker = FastCDC(parameters: parameters)
        let scanned = UnsafeRawBufferPointer(rebasing: bytes[..<min(bytes.count, window)])
        let length = chunker.boundary(in: scanned) ?? scanned.count
        cutBytes += Int64(length)
        let hash = Hex.encode(SHA256.hash(data: UnsafeRawBufferPointer(rebasing: bytes[..<length])))
        let end = position + Int64(length)
        // Where to look next: the previous chunk that started at the same offset, else the one
        // after the previous chunk with these bytes.
        var next = byOffset[end]
        if next == nil, let same = byContent[AssetChunkRef(hash: String(hash.prefix(hashDigits)), size: length)] { next = same + 1 }
        return append(AssetChunkRef(hash: hash, size: length), proposal: next)
    }

    private mutating func append(_ chunk: AssetChunkRef, proposal: Int?) -> Int {
        chunks.append(chunk)
        position += Int64(chunk.size)
        self.proposal = proposal
        return chunk.size
    }
}
