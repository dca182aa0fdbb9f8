// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

/// The scan for a chunk-list checksum (`AssetFileScan+ChunkList.swift`): split over two
/// threads by range, it gives exactly the one-thread chunk list and checksum — whatever the split
/// point, the piece size and the previous list — and the streaming hasher agrees.
struct AssetFileScanChunkListTests {
    /// The list and checksum one FastCDC pass over `bytes` gives.
    static func reference(_ bytes: [UInt8]) -> (chunks: [AssetChunkRef], checksum: String) {
        let chunks = AssetFileScanTests.reference(bytes).chunks
        return (chunks, AssetChecksum.chunkList(chunks))
    }

    /// Scans `file` on two threads with the split forced into small files too.
    static func scan(_ file: URL, previous: AssetChunkList? = nil, piece: Int, threads: Int = 2) throws -> AssetFileScan {
        let fd = open(file.path, O_RDONLY | O_CLOEXEC)
        defer { close(fd) }
        let before = try #require(FileStamp.of(descriptor: fd))
        return try AssetFileScan.scanChunkList(fd, url: file, before: before, previous: previous, pieceSize: piece, threads: threads,
                                               parallelMinimumSize: 0)
    }

    @Test("random data: the two-thread list is the one-thread list, for several sizes and piece sizes",
          arguments: [0, 1, 70_000, 300_000, 3 << 20, (9 << 20) + 12_345])
    func sameAsOneThread(size: Int) throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = AssetTransferTests.bytes(size, seed: UInt64(7000 + size))
        let file = try AssetTransferTests.write(bytes, in: folder)
        let expected = Self.reference(bytes)
        for piece in [1 << 16, 1 << 20] {
            for threads in [1, 2] {
                let scan = try Self.scan(file, piece: piece, threads: threads)
                #expect(scan.chunkList.chunks == expected.chunks, "piece \(piece), threads \(threads)")
                #expect(scan.fileChecksum == expected.checksum)
                #expect(scan.size == Int64(size))
                #expect(scan.cutBytes == Int64(size) && scan.reusedChunks == 0)
            }
        }
        // the public entry point
        let scan = try AssetFileScan.scan(file, identity: .chunkList)
        #expect(scan.fileChecksum == expected.checksum)
        #expect(scan.hexChecksum == AssetChecksum.hex(expected.checksum))
        #expect(AssetChecksum.kind(of: scan.fileChecksum) == .chunkList)
        // the streaming hasher, in odd pieces
        var hasher = AssetContentHasher(kind: .chunkList)
        var offset = 0
        while offset < bytes.count {
            let count = min(77_777, bytes.count - offset)
            bytes[offset..<offset + count].withUnsafeBytes { hasher.update($0) }
            offset += count
        }
        #expect(hasher.finalize() == expected.checksum)
        #expect(try AssetContentHasher.checksum(ofFile: file.path, kind: .chunkList) == expected.checksum)
        #expect(try AssetContentHasher.checksum(ofFile: file.path, kind: .sha256) == Data(SHA256.hash(data: bytes)).base64EncodedString())
    }

    @Test("the split at every kind of place: inside a chunk, on a chunk start, near the end")
    func splitPoints() throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = AssetTransferTests.bytes(2 << 20, seed: 99)
        let file = try AssetTransferTests.write(bytes, in: folder)
        let expected = Self.reference(bytes)
        var starts: [Int64] = [0]
        for chunk in expected.chunks { starts.append(starts.last! + Int64(chunk.size)) }
        // a previous list whose chunk near the middle starts at the chosen point makes that the split
        for target in [Int64(1), 16_384, starts[5], starts[5] + 1, starts[starts.count - 2], Int64(bytes.count - 1)] {
            let previous = AssetChunkList(fileChecksum: "", size: Int64(bytes.count), chunking: .default,
                                          chunks: [AssetChunkRef(hash: String(repeating: "0", count: 64), size: Int(target)),
                                                   AssetChunkRef(hash: String(repeating: "1", count: 64), size: 1),
                                                   AssetChunkRef(hash: String(repeating: "2", count: 64), size: bytes.count - Int(target) - 1)])
            let split = AssetFileScan.splitPoint(size: Int64(bytes.count), previous: previous)
            let scan = try Self.scan(file, previous: previous, piece: 1 << 16)
            #expect(scan.chunkList.chunks == expected.chunks, "split at \(split)")
            #expect(scan.fileChecksum == expected.checksum)
        }
    }

    @Test("content FastCDC cuts only at the maximum size (zeros): the ranges never meet, the result is still exact")
    func neverMeets() throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = [UInt8](repeating: 0, count: (3 << 20) + 1000)
        let file = try AssetTransferTests.write(bytes, in: folder)
        let expected = Self.reference(bytes)
        let scan = try Self.scan(file, piece: 1 << 16)
        #expect(scan.chunkList.chunks == expected.chunks)
        #expect(scan.fileChecksum == expected.checksum)
    }

    @Test("with the previous version's list: edits anywhere give the one-thread list, unchanged chunks are recognised")
    func withPrevious() throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let old = AssetTransferTests.bytes(6 << 20, seed: 4242)
        let oldFile = try AssetTransferTests.write(old, in: folder, name: "old.bin")
        let previous = try Self.scan(oldFile, piece: 1 << 20).chunkList
        var edits: [[UInt8]] = []
        var middle = old
        middle[old.count / 2] ^= 0xFF  // one byte at the split
        edits.append(middle)
        var inserted = old
        inserted.insert(contentsOf: [1, 2, 3], at: 1_000_000)
        edits.append(inserted)
        var deleted = old
        deleted.removeSubrange(4_000_000..<4_100_000)
        edits.append(deleted)
        edits.append(Array(old.prefix(old.count / 2 + 10)))  // truncated just after the middle
        for (index, new) in edits.enumerated() {
            let file = try AssetTransferTests.write(new, in: folder, name: "new\(index).bin")
            let expected = Self.reference(new)
            for previousList in [previous, AssetChunkList(fileChecksum: previous.fileChecksum, size: previous.size, chunking: .default,
                                                           hashBytes: 12, chunks: previous.chunks)] {
                let scan = try Self.scan(file, previous: previousList, piece: 1 << 20)
                #expect(scan.chunkList.chunks == expected.chunks, "edit \(index)")
                #expect(scan.fileChecksum == expected.checksum, "edit \(index)")
                #expect(scan.reusedChunks > expected.chunks.count / 2, "edit \(index)")
                #expect(scan.previous == previousList)
            }
        }
    }
}
