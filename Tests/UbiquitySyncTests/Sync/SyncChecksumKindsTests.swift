// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityTestSupport
@testable import Ubiquity
import UbiquityCore
@testable import UbiquitySync
import UbiquityWire
@testable import UbiquityCloudKit

/// Content hashes of both kinds in the sync engine (`SyncFiles+ChecksumKinds.swift`): a file is
/// hashed the way the hash it is compared with was made, so old whole-content SHA-256 hashes (64
/// hex digits: journals of existing devices, records stored before) and chunk-list checksums (66
/// digits) are both accepted — by downloads checking what they wrote, by move pairing and by
/// the check that a download's result proves the written content.
@Suite struct SyncChecksumKindsTests {
    static func file(_ bytes: [UInt8]) throws -> (URL, String) {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-kinds-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let url = folder.appendingPathComponent("big.bin")
        try Data(bytes).write(to: url)
        return (folder, url.path)
    }

    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0..<(count + 7) / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }.prefix(count).map { $0 }
    }

    /// The content hash the sync engine gives a large file: its chunk-list checksum in hex.
    static func chunkListHash(_ data: Data) -> String {
        var hasher = AssetContentHasher(kind: .chunkList)
        data.withUnsafeBytes { hasher.update($0) }
        return AssetChecksum.hex(hasher.finalize()) ?? ""
    }

    @Test("a file hashed like an old SHA-256 hash or like a chunk-list hash matches each")
    func hashFileLike() throws {
        let content = Self.bytes(3 << 20, seed: 61)
        let (folder, path) = try Self.file(content)
        defer { try? FileManager.default.removeItem(at: folder) }
        let whole = Hex.encode(SHA256.hash(data: content))
        let list = try #require(AssetChecksum.hex(try AssetFileScan.scan(URL(fileURLWithPath: path), identity: .chunkList).fileChecksum))
        #expect(list.count == 66 && whole.count == 64)
        #expect(try SyncFiles.hashFile(path, like: whole) == whole)
        #expect(try SyncFiles.hashFile(path, like: list) == list)
        #expect(try SyncFiles.hashFile(path, like: nil) == whole)
        #expect(try SyncFiles.hashFile(path, like: "") == whole)
        // a downloaded file checked against either kind (the same as the streaming hasher's)
        #expect(AssetChecksum.hex(try AssetContentHasher.checksum(ofFile: path, kind: .chunkList)) == list)
    }

    @Test("a download's result proves the written content for a hash of its own kind only")
    func verifiedBothKinds() throws {
        let content = Self.bytes(1 << 20, seed: 62)
        let wholeChecksum = Data(SHA256.hash(data: content)).base64EncodedString()
        let whole = Hex.encode(SHA256.hash(data: content))
        let listChecksum = AssetChecksum.chunkList([AssetChunkRef(hash: whole, size: content.count)])
        let list = try #require(AssetChecksum.hex(listChecksum))
        func result(_ checksum: String) -> AssetDownloadResult {
            AssetDownloadResult(fileURL: URL(fileURLWithPath: "/tmp/x"), size: Int64(content.count), fileChecksum: checksum, bytesReceived: 0, resumptions: 0)
        }
        #expect(SyncEngine.verified(result(wholeChecksum), hash: whole))
        #expect(SyncEngine.verified(result(listChecksum), hash: list))
        #expect(!SyncEngine.verified(result(listChecksum), hash: whole))
        #expect(!SyncEngine.verified(result(wholeChecksum), hash: list))
        #expect(!SyncEngine.verified(nil, hash: list))
    }

    @Test("move pairing by content: a new file is hashed as a vanished entry of its size was, of either kind")
    func movePairing() throws {
        let content = Self.bytes(2 << 20, seed: 63)
        let (folder, path) = try Self.file(content)
        defer { try? FileManager.default.removeItem(at: folder) }
        let size = Int64(content.count)
        let list = try #require(AssetChecksum.hex(try AssetFileScan.scan(URL(fileURLWithPath: path), identity: .chunkList).fileChecksum))
        let whole = Hex.encode(SHA256.hash(data: content))
        for journaled in [list, whole] {
            let vanished = JournalEntry(id: "OLD", path: "old.bin", stat: SyncStat(kind: .file, size: size, modifiedNanoseconds: 1, inode: 1, mode: 0o644),
                                        contentHash: journaled, changeTag: "t1")
            let other = JournalEntry(id: "OTHER", path: "other.bin", stat: SyncStat(kind: .file, size: 5, modifiedNanoseconds: 1, inode: 2, mode: 0o644),
                                     contentHash: String(repeating: "ab", count: 32), changeTag: "t1")
            let like = SyncFiles.hashKind(forSize: size, among: [other, vanished])
            #expect(like == (journaled == list ? list : nil))
            let hash = try SyncFiles.hashFile(path, like: like)
            let stat = SyncStat(kind: .file, size: size, modifiedNanoseconds: 2, inode: 99, mode: 0o644)
            let moves = SyncDecision.matchMoves(missing: [vanished, other], created: [(path: "new.bin", stat: stat, hash: hash)])
            #expect(moves == ["OLD": "new.bin"], "journaled \(journaled.count)-digit hash")
        }
    }
}
