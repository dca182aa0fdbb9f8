// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

/// Chunk-level downloads against servers that cannot or do not tell the truth: without the
/// chunk list, or with one that does not describe the content. Both fall back to a whole
/// download, byte-exact. (Against the real server: `ClientAssetDeltaTests`.)
struct AssetDeltaTests {
    let transfer = AssetTransfer(options: .init(retryDelay: .milliseconds(10), syncDownloadedFiles: false))

    static func chunkList(of bytes: [UInt8]) -> [AssetChunkRef] {
        var offset = 0
        return FastCDC.chunkLengths(of: bytes).map { length in
            defer { offset += length }
            return AssetChunkRef(hash: Hex.encode(SHA256.hash(data: bytes[offset..<offset + length])), size: length)
        }
    }

    @Test("a server without chunk lists: the whole content, once")
    func noManifest() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = AssetTransferTests.bytes(3 << 20, seed: 80)
        var old = content
        old[1000] ^= 1
        let checksum = MiniAssetServer.checksum(content)
        server.state.withLock { $0.assets[checksum] = content }
        let basis = try AssetTransferTests.write(old, in: folder, name: "old")
        let target = folder.appendingPathComponent("new")
        let result = try await transfer.download(from: server.downloadURL(checksum), to: target, expectedChecksum: checksum, basis: basis)
        #expect(try [UInt8](Data(contentsOf: target)) == content)
        #expect(!result.usedBasis && result.bytesCopied == 0)
        #expect(result.bytesReceived <= Int64(content.count) + 1)
        await server.stop()
    }

    @Test("a chunk list that lies (the basis's own list under the new checksum): the check fails, the whole content is fetched")
    func lyingManifest() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = AssetTransferTests.bytes(3 << 20, seed: 81)
        var old = content
        old[content.count / 2] ^= 1
        let checksum = MiniAssetServer.checksum(content)
        let lie = AssetChunkList(fileChecksum: checksum, size: Int64(content.count), chunking: .default, hashBytes: 12, chunks: Self.chunkList(of: old))
        server.state.withLock { state in
            state.assets[checksum] = content
            state.manifest = lie.json
        }
        let target = folder.appendingPathComponent("new")
        let result = try await transfer.download(from: server.downloadURL(checksum), to: target, expectedChecksum: checksum,
                                                 basis: try AssetTransferTests.write(old, in: folder, name: "old"))
        #expect(try [UInt8](Data(contentsOf: target)) == content)
        #expect(!result.usedBasis)
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).sorted() == ["new", "old"])
        await server.stop()
    }

    @Test("a chunk list of other content than the record's checksum is not used")
    func otherContent() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try AssetTransferTests.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = AssetTransferTests.bytes(2 << 20, seed: 82)
        let checksum = MiniAssetServer.checksum(content)
        let other = AssetChunkList(fileChecksum: MiniAssetServer.checksum([1, 2, 3]), size: Int64(content.count), chunking: .default,
                                   chunks: Self.chunkList(of: content))
        server.state.withLock { state in
            state.assets[checksum] = content
            state.manifest = other.json
        }
        let target = folder.appendingPathComponent("new")
        let result = try await transfer.download(from: server.downloadURL(checksum), to: target, expectedChecksum: checksum,
                                                 basis: try AssetTransferTests.write(content, in: folder, name: "old"))
        #expect(try [UInt8](Data(contentsOf: target)) == content)
        #expect(!result.usedBasis)
        await server.stop()
    }

    @Test("the plan: chunks filled from the basis leave merged, bounded ranges to fetch")
    func plan() throws {
        let sizes = [100, 200, 300, 400, 500]
        let chunks = sizes.enumerated().map { AssetChunkRef(hash: String(repeating: String($0.offset), count: 64), size: $0.element) }
        var plan = AssetDeltaPlan(list: AssetChunkList(fileChecksum: "x", size: 1500, chunking: .default, hashBytes: 8, chunks: chunks))
        #expect(plan.fill(hash: String(repeating: "2", count: 64), size: 300) == [300])
        #expect(plan.fill(hash: String(repeating: "2", count: 64), size: 300) == [])  // filled already
        #expect(plan.fill(hash: String(repeating: "4", count: 64), size: 499) == [])  // the size differs
        #expect(plan.copiedBytes == 300)
        #expect(plan.missingRanges(limit: 1 << 20) == [0..<300, 600..<1500])
        #expect(plan.missingRanges(limit: 400) == [0..<300, 600..<1000, 1000..<1400, 1400..<1500])
    }

    @Test("the chunk list's wire form round-trips, and a list whose sizes do not add up is refused")
    func wireForm() throws {
        let chunks = [AssetChunkRef(hash: String(repeating: "ab", count: 32), size: 7), AssetChunkRef(hash: String(repeating: "cd", count: 32), size: 9)]
        let list = AssetChunkList(fileChecksum: "sum", size: 16, chunking: .default, hashBytes: 12, chunks: chunks)
        let back = try AssetChunkList(json: list.json)
        #expect(back == list && back.chunks[0].hash == String(repeating: "ab", count: 12))
        var wrong = list
        wrong.size = 17
        #expect(throws: UbiquityError.self) { try AssetChunkList(json: wrong.json) }
    }
}
