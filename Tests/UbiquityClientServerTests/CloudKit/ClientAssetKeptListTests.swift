// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityServer
import UbiquityCloudKit

/// Chunk-level downloads from a basis whose chunk list is known (``AssetDownloadBasis``), and
/// uploads from a scan (``AssetFileScan``), against a real `RecordsServer`. What is read and
/// sent is counted, never time.
@Suite struct ClientAssetKeptListTests {
    typealias Delta = ClientAssetDeltaTests

    @Test("a known chunk list of an unchanged basis: the basis is not cut, the result is byte-exact")
    func keptListUsed() async throws {
        let content = Delta.bytes(Delta.size, seed: 170)
        var old = content
        old[content.count / 2] ^= 0x5A
        let directory = try Delta.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (asset, stop) = try await Delta.stored(content, in: directory)
        defer { stop() }
        let basisURL = directory.appendingPathComponent("old.bin")
        try Data(old).write(to: basisURL)
        let kept = try AssetFileScan.scan(basisURL).chunkList
        let transfer = AssetTransfer(options: .init(retryDelay: .milliseconds(10), syncDownloadedFiles: false))
        let target = directory.appendingPathComponent("target.bin")
        let result = try await asset.download(to: target, reusing: AssetDownloadBasis(fileURL: basisURL, chunkList: kept) { true },
                                              transfer: transfer)
        #expect(try Data(contentsOf: target) == Data(content))
        #expect(result.usedBasis && !result.basisScanned)
        #expect(result.bytesCopied >= Int64(content.count - (512 << 10)))
        #expect(result.bytesReceived < 1 << 20)
        #expect(result.chunkList?.size == Int64(content.count), "the new content's list comes back, to keep")

        // the same download told the basis may have changed: its checksum is checked, still exact
        let again = directory.appendingPathComponent("again.bin")
        let checked = try await asset.download(to: again, reusing: AssetDownloadBasis(fileURL: basisURL, chunkList: kept) { false },
                                               transfer: transfer)
        #expect(try Data(contentsOf: again) == Data(content))
        #expect(checked.basisScanned, "a basis not proven unchanged is cut again")
    }

    @Test("a kept list that no longer describes the basis (changed under it, stamp kept): never a wrong file")
    func keptListOfOtherContent() async throws {
        let content = Delta.bytes(Delta.size, seed: 171)
        var old = content
        old[100] ^= 1
        let directory = try Delta.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (asset, stop) = try await Delta.stored(content, in: directory)
        defer { stop() }
        let basisURL = directory.appendingPathComponent("old.bin")
        try Data(old).write(to: basisURL)
        let kept = try AssetFileScan.scan(basisURL).chunkList
        // the basis changes after its list was kept, and the caller notices (the stamp moved)
        var changed = old
        for index in stride(from: 0, to: changed.count, by: 4096) { changed[index] ^= 0xFF }
        try Data(changed).write(to: basisURL)
        let transfer = AssetTransfer(options: .init(retryDelay: .milliseconds(10), syncDownloadedFiles: false))
        let target = directory.appendingPathComponent("target.bin")
        let result = try await asset.download(to: target, reusing: AssetDownloadBasis(fileURL: basisURL, chunkList: kept) { false },
                                              transfer: transfer)
        #expect(try Data(contentsOf: target) == Data(content), "the basis is cut again and the result checked")
        #expect(result.basisScanned && result.bytesCopied == 0, "nothing of the changed basis matches")
    }

    @Test("an upload from a scan of a file changed since: assetFileModified, and the record is not saved with a mix")
    func uploadFromAStaleScan() async throws {
        let directory = try Delta.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (database, stop) = try await ClientAssetTests.serve(directory)
        defer { stop() }
        let file = directory.appendingPathComponent("big.bin")
        let first = Delta.bytes(3 << 20, seed: 172)
        try Data(first).write(to: file)
        let scan = try AssetFileScan.scan(file)
        var second = first
        second[10] ^= 1
        second[second.count - 10] ^= 1
        try Data(second).write(to: file)
        var record = Record(recordType: "Blob")
        record["content"] = .asset(Asset(fileURL: file, scan: scan))
        await #expect(throws: CloudKitError.self) { _ = try await database.save(record) }
        do {
            _ = try await database.save(record)
        } catch let error as CloudKitError {
            #expect(error.code == .assetFileModified, "\(error)")
        }
        // with a fresh scan it goes through, as the file is now
        record["content"] = .asset(Asset(fileURL: file, scan: try AssetFileScan.scan(file)))
        let saved = try await database.save(record)
        let fetched = try await database.record(for: saved.recordID)
        let asset = try #require(fetched["content"]?.assetValue)
        #expect(asset.fileChecksum == (try AssetFileScan.scan(file)).fileChecksum)
    }
}
