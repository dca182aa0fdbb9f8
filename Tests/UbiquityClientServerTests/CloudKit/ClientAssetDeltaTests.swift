// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityServer
import UbiquityWire
import UbiquityCloudKit

/// Chunk-level downloads against a real `RecordsServer`: the client fetches the asset's chunk
/// list (`?manifest=1` on the download URL), copies the chunks an older local version has and
/// fetches the rest with ranged `GET`s. Bytes are counted, never time.
@Suite struct ClientAssetDeltaTests {
    static let size = 6 << 20

    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        var out: [UInt8] = []
        out.reserveCapacity(count + 8)
        while out.count < count { withUnsafeBytes(of: random.next()) { out.append(contentsOf: $0) } }
        return Array(out.prefix(count))
    }

    /// A server holding `content` as a record's asset; the fetched asset (with its download URL).
    static func stored(_ content: [UInt8], in directory: URL) async throws -> (asset: Asset, stop: @Sendable () -> Void) {
        let (database, stop) = try await ClientAssetTests.serve(directory)
        let file = directory.appendingPathComponent("new.bin")
        try Data(content).write(to: file)
        var record = Record(recordType: "Blob")
        record["content"] = .asset(Asset(fileURL: file))
        _ = try await database.save(record)
        let fetched = try await database.record(for: record.recordID)
        return (try #require(fetched["content"]?.assetValue), stop)
    }

    static func folder() throws -> URL {
        let url = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-delta-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// Downloads `content` (stored on a fresh server) with `basis` as the older version.
    static func download(_ content: [UInt8], basis: [UInt8]?) async throws -> AssetDownloadResult {
        let directory = try folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (asset, stop) = try await stored(content, in: directory)
        defer { stop() }
        let basisURL = directory.appendingPathComponent("old.bin")
        if let basis { try Data(basis).write(to: basisURL) }
        let target = directory.appendingPathComponent("target.bin")
        let transfer = AssetTransfer(options: .init(retryDelay: .milliseconds(10), syncDownloadedFiles: false))
        let result = try await asset.download(to: target, basis: basisURL, transfer: transfer)
        #expect(try Data(contentsOf: target) == Data(content), "the assembled file is byte-exact")
        #expect(result.size == Int64(content.count))
        let left = try FileManager.default.contentsOfDirectory(atPath: directory.path).filter { $0.contains(".download-") }
        #expect(left.isEmpty, "no temporary is left: \(left)")
        return result
    }

    @Test("one byte changed: one or two chunks and the chunk list travel, the rest is copied")
    func oneByteChanged() async throws {
        let content = Self.bytes(Self.size, seed: 70)
        var basis = content
        basis[content.count / 2] ^= 0x5A
        let result = try await Self.download(content, basis: basis)
        #expect(result.usedBasis)
        #expect(result.bytesReceived < 2 * (256 << 10) + (16 << 10), "received \(result.bytesReceived) bytes")
        #expect(result.bytesCopied >= Int64(content.count) - 2 * (256 << 10))
    }

    @Test("bytes inserted in the middle: only the chunks around them travel")
    func bytesInserted() async throws {
        let content = Self.bytes(Self.size, seed: 71)
        // The basis lacks 1000 bytes the new version has, and has 3000 it lacks elsewhere.
        let middle = content.count / 2, quarter = content.count / 4
        var basis = Array(content[..<quarter]) + Self.bytes(3000, seed: 72) + Array(content[quarter..<middle])
        basis += Array(content[(middle + 1000)...])
        let result = try await Self.download(content, basis: basis)
        #expect(result.usedBasis)
        #expect(result.bytesReceived < 4 * (256 << 10) + (16 << 10), "received \(result.bytesReceived) bytes")
    }

    @Test("nothing in common: every byte is fetched (in ranges), and the file is right")
    func nothingInCommon() async throws {
        let content = Self.bytes(Self.size, seed: 73)
        let result = try await Self.download(content, basis: Self.bytes(Self.size, seed: 74))
        #expect(result.bytesCopied == 0)
        #expect(result.bytesReceived >= Int64(content.count))
        #expect(result.bytesReceived < Int64(content.count) + (64 << 10))
    }

    @Test("an empty or missing basis: a whole download")
    func emptyBasis() async throws {
        let content = Self.bytes(Self.size, seed: 75)
        for basis in [[], nil] as [[UInt8]?] {
            let result = try await Self.download(content, basis: basis)
            #expect(!result.usedBasis && result.bytesCopied == 0)
            #expect(result.bytesReceived >= Int64(content.count))
        }
    }

    @Test("the chunk list: packed, hashes shortened on request; a bad hashBytes is a clear 400")
    func manifestRoute() async throws {
        let directory = try Self.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let content = Self.bytes(1 << 20, seed: 76)
        let (asset, stop) = try await Self.stored(content, in: directory)
        defer { stop() }
        let url = try #require(asset.downloadURL).replacingOccurrences(of: "${f}", with: "x")
        let (data, response) = try await URLSession.shared.data(from: URL(string: url + "?manifest=1")!)
        #expect((response as? HTTPURLResponse)?.statusCode == 200)
        let list = try AssetChunkList(json: try JSONValue.parse(data))
        #expect(list.fileChecksum == asset.fileChecksum && list.size == Int64(content.count) && list.hashBytes == 32)
        #expect(list.chunks.map(\.size) == FastCDC.chunkLengths(of: content))
        #expect(list.chunking == .default)
        let (short, _) = try await URLSession.shared.data(from: URL(string: url + "?manifest=1&hashBytes=12")!)
        let shortList = try AssetChunkList(json: try JSONValue.parse(short))
        #expect(shortList.chunks.map(\.hash) == list.chunks.map { String($0.hash.prefix(24)) })
        let (bad, badResponse) = try await URLSession.shared.data(from: URL(string: url + "?manifest=1&hashBytes=99")!)
        #expect((badResponse as? HTTPURLResponse)?.statusCode == 400)
        #expect(String(decoding: bad, as: UTF8.self).contains("hashBytes"))
        // without the query: the content, as before
        let (plain, _) = try await URLSession.shared.data(from: URL(string: url)!)
        #expect(plain == Data(content))
    }
}
