// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

/// The sender's single pass (``AssetFileScan``): the same chunks and checksum as the chunker and
/// hashes it replaces, whatever the piece size, and a file changed while read is told apart.
struct AssetFileScanTests {
    /// What the deduplicating upload computed before: ``AssetChunkScanner`` over the bytes.
    static func reference(_ bytes: [UInt8], chunking: FastCDC.Parameters = .default) -> (chunks: [AssetChunkRef], checksum: String) {
        let scanner = AssetChunkScanner(parameters: chunking)
        var offset = 0
        while offset < bytes.count {
            let count = min(3 << 20, bytes.count - offset)
            scanner.scan(ByteBuffer(bytes: bytes[offset..<offset + count]))
            offset += count
        }
        let checksum = scanner.finish()
        return (scanner.chunks.map(\.ref), checksum)
    }

    @Test("random data: the same chunks and checksum as the existing chunker, for several sizes and piece sizes",
          arguments: [0, 1, 70_000, 5 << 20, (9 << 20) + 12_345])
    func sameAsTheChunker(size: Int) throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = AssetTransferTests.bytes(size, seed: UInt64(1000 + size))
        let file = try AssetTransferTests.write(bytes, in: folder)
        let expected = Self.reference(bytes)
        for piece in [1 << 16, 1 << 20, 8 << 20] {
            let scan = try AssetFileScan.scan(file, pieceSize: piece)
            #expect(scan.chunkList.chunks == expected.chunks, "piece size \(piece)")
            #expect(scan.fileChecksum == expected.checksum, "piece size \(piece)")
            #expect(scan.size == Int64(size))
            #expect(scan.hexChecksum == Hex.encode(SHA256.hash(data: bytes)))
            #expect(!scan.changedWhileRead)
            #expect(scan.spans.last.map { $0.offset + Int64($0.ref.size) } ?? 0 == Int64(size))
        }
        // other parameters too
        let small = try FastCDC.Parameters(minimumSize: 4096, averageSize: 16384, maximumSize: 65536)
        let scan = try AssetFileScan.scan(file, chunking: small)
        #expect(scan.chunkList.chunks == Self.reference(bytes, chunking: small).chunks)
    }

    @Test("a file changed between the two stamps is reported as changed while read")
    func changedWhileRead() throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let file = try AssetTransferTests.write(AssetTransferTests.bytes(1 << 20, seed: 5), in: folder)
        var scan = try AssetFileScan.scan(file)
        #expect(!scan.changedWhileRead)
        try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSince1970: 1_700_000_000)], ofItemAtPath: file.path)
        scan.after = try #require(FileStamp.of(file.path))
        #expect(scan.changedWhileRead)
    }

    @Test("not a regular file or missing: a clear error")
    func badInput() throws {
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        #expect(throws: UbiquityError.self) { try AssetFileScan.scan(folder.appendingPathComponent("missing")) }
        #expect(throws: UbiquityError.self) { try AssetFileScan.scan(folder) }
    }
}
