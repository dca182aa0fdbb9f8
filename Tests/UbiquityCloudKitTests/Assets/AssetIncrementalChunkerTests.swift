// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

/// The incremental chunker (``AssetIncrementalChunker``, used by ``AssetFileScan`` with a
/// previous chunk list): exactly the chunks of a full FastCDC run over the new content, whatever
/// the edit, with only the changed region cut (counted in chunks and bytes, never time).
struct AssetIncrementalChunkerTests {
    /// Small chunks, so that a few MiB have hundreds of them.
    static let small = try! FastCDC.Parameters(minimumSize: 1024, averageSize: 4096, maximumSize: 16384)

    /// A full FastCDC run: the chunks with whole hashes.
    static func full(_ bytes: [UInt8], _ parameters: FastCDC.Parameters) -> [AssetChunkRef] {
        var offset = 0
        return FastCDC.chunkLengths(of: bytes, parameters: parameters).map { length in
            defer { offset += length }
            return AssetChunkRef(hash: Hex.encode(SHA256.hash(data: bytes[offset..<offset + length])), size: length)
        }
    }

    static func list(_ bytes: [UInt8], _ parameters: FastCDC.Parameters, hashBytes: Int = 32) -> AssetChunkList {
        AssetChunkList(fileChecksum: Data(SHA256.hash(data: bytes)).base64EncodedString(), size: Int64(bytes.count), chunking: parameters,
                       hashBytes: hashBytes, chunks: full(bytes, parameters))
    }

    /// Runs the incremental chunker over `bytes` as the scan does (a window of the maximum
    /// chunk size, the end flagged).
    static func incremental(_ bytes: [UInt8], previous: AssetChunkList?, _ parameters: FastCDC.Parameters) -> AssetIncrementalChunker {
        var chunker = AssetIncrementalChunker(parameters: parameters, previous: previous)
        bytes.withUnsafeBytes { raw in
            var offset = 0
            while offset < raw.count {
                let end = min(raw.count, offset + chunker.window)
                guard let length = chunker.next(UnsafeRawBufferPointer(rebasing: raw[offset..<end]), atEnd: end == raw.count) else { break }
                offset += length
            }
        }
        return chunker
    }

    /// The edits: name and function of the old content.
    static let edits: [(String, @Sendable ([UInt8]) -> [UInt8])] = [
        ("one byte at the start", { var b = $0; b[0] ^= 1; return b }),
        ("one byte in the middle", { var b = $0; b[b.count / 2] ^= 1; return b }),
        ("one byte at the end", { var b = $0; b[b.count - 1] ^= 1; return b }),
        ("10 bytes inserted at the start", { [UInt8](repeating: 7, count: 10) + $0 }),
        ("5,000 bytes inserted in the middle", { Array($0[..<($0.count / 2)]) + AssetTransferTests.bytes(5000, seed: 9) + Array($0[($0.count / 2)...]) }),
        ("bytes appended", { $0 + AssetTransferTests.bytes(3000, seed: 10) }),
        ("3 bytes deleted at the start", { Array($0[3...]) }),
        ("20,000 bytes deleted in the middle", { Array($0[..<($0.count / 3)]) + Array($0[($0.count / 3 + 20_000)...]) }),
        ("truncated", { Array($0[..<($0.count - 12_345)]) }),
        ("edits in several places", { var b = $0; for i in stride(from: 100, to: b.count, by: b.count / 7) { b[i] ^= 0xFF }; return b }),
        ("a block moved", { Array($0[($0.count / 2)...]) + Array($0[..<($0.count / 2)]) }),
        ("unchanged", { $0 }),
        ("other content", { AssetTransferTests.bytes($0.count, seed: 11) }),
    ]

    @Test("every edit gives the chunks of a full run; only the changed region is cut", arguments: 0..<13)
    func sameAsAFullRun(edit: Int) throws {
        let (name, change) = Self.edits[edit]
        let old = AssetTransferTests.bytes(3 << 20, seed: 21)
        let new = change(old)
        for hashBytes in [32, 12] {
            let chunker = Self.incremental(new, previous: Self.list(old, Self.small, hashBytes: hashBytes), Self.small)
            let expected = Self.full(new, Self.small)
            #expect(chunker.chunks == expected, "\(name), \(hashBytes)-byte hashes")
            #expect(chunker.position == Int64(new.count))
            if name == "other content" {
                #expect(chunker.reusedChunks == 0)
            } else if name == "a block moved" {
                #expect(chunker.reusedChunks >= expected.count - 8, "\(name)")
            } else {
                // the chunks around each change (and the old last one) are cut, the rest recognised
                let changes = name == "edits in several places" ? 7 : 1
                #expect(chunker.reusedChunks >= expected.count - 3 * changes - 4, "\(name): \(chunker.reusedChunks) of \(expected.count) reused")
                #expect(chunker.cutBytes <= Int64((3 * changes + 4) * Self.small.maximumSize), "\(name): \(chunker.cutBytes) bytes cut")
            }
        }
    }

    @Test("no previous list, a list of other parameters, empty and tiny content: a plain FastCDC run")
    func withoutAUsableList() throws {
        let bytes = AssetTransferTests.bytes(1 << 20, seed: 22)
        #expect(Self.incremental(bytes, previous: nil, Self.small).chunks == Self.full(bytes, Self.small))
        let other = Self.incremental(bytes, previous: Self.list(bytes, .default), Self.small)
        #expect(other.chunks == Self.full(bytes, Self.small) && other.reusedChunks == 0)
        #expect(Self.incremental([], previous: Self.list(bytes, Self.small), Self.small).chunks.isEmpty)
        #expect(Self.incremental([1, 2, 3], previous: Self.list(bytes, Self.small), Self.small).chunks == Self.full([1, 2, 3], Self.small))
    }

    @Test("a scan with the previous list equals a scan without it, for every piece size", arguments: [1 << 16, 1 << 20, 8 << 20])
    func scanWithPrevious(piece: Int) throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = AssetTransferTests.bytes((6 << 20) + 777, seed: 23)
        let first = try AssetFileScan.scan(try AssetTransferTests.write(old, in: folder, name: "old"), pieceSize: piece)
        #expect(first.reusedChunks == 0 && first.cutBytes == Int64(old.count))
        var new = old
        new[new.count / 2] ^= 0x40
        let file = try AssetTransferTests.write(new, in: folder)
        let plain = try AssetFileScan.scan(file, pieceSize: piece)
        let quick = try AssetFileScan.scan(file, previous: first.chunkList, pieceSize: piece)
        #expect(quick.chunkList == plain.chunkList)
        #expect(quick.fileChecksum == Data(SHA256.hash(data: new)).base64EncodedString())
        #expect(plain.chunkList.chunks == Self.full(new, .default))
        #expect(quick.reusedChunks >= plain.chunkList.chunks.count - 4)
        #expect(quick.cutBytes <= 4 * Int64(FastCDC.Parameters.default.maximumSize))
    }
}
