// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
@testable import Ubiquity
import UbiquityCore
import UbiquityServer
import UbiquityWire
import UbiquityCloudKit

/// Assets known by their chunk-list checksum (`docs/assets.md`, "Chunk-list checksums"), by the
/// Swift client against a real `RecordsServer`: the first upload (streamed, then named by its
/// list), an edit sent relative to it, and downloads whole and from a basis, each checked against
/// the list checksum. Bytes counted, never time.
@Suite struct ClientAssetChunkListChecksumTests {
    typealias Relative = ClientAssetRelativeListTests

    @Test("upload from a chunk-list scan, an edit relative to it, and downloads whole and from a basis")
    func roundTrip() async throws {
        try await Relative.withFirstVersion(size: 16 << 20, seed: 281, identity: .chunkList) { rig in
            let (directory, database, transfer, file, firstScan) = (rig.directory, rig.database, rig.transfer, rig.file, rig.firstScan)
            #expect(AssetChecksum.kind(of: firstScan.fileChecksum) == .chunkList)
            // every chunk is new: streamed, then committed under the list checksum
            #expect(rig.uploadedFirst.asset.fileChecksum == firstScan.fileChecksum)
            let oldCopy = try rig.keepFirstVersion()

            let (second, secondScan, uploaded, changed) = try await rig.uploadMiddleEdit()
            #expect(secondScan.reusedChunks > 0)
            #expect(uploaded.asset.fileChecksum == secondScan.fileChecksum && uploaded.deduplicated)
            #expect(uploaded.bytesSent - changed < 2048, "sent \(uploaded.bytesSent) bytes for \(changed) changed")

            let asset = try await rig.savedAndFetched(uploaded.asset)
            #expect(asset.fileChecksum == secondScan.fileChecksum)
            // whole: checked against the list checksum as it arrives
            let whole = directory.appendingPathComponent("whole.bin")
            let wholeResult = try await transfer.download(from: try #require(asset.downloadURL), to: whole, expectedChecksum: asset.fileChecksum)
            #expect(wholeResult.fileChecksum == secondScan.fileChecksum)
            #expect(try Data(contentsOf: whole) == Data(second))
            // from the old version with its kept list (relative list downward, base in 66 hex digits)
            let target = directory.appendingPathComponent("target.bin")
            let result = try await asset.download(to: target, reusing: AssetDownloadBasis(fileURL: oldCopy, chunkList: rig.firstKept) { true },
                                                  transfer: transfer)
            #expect(try Data(contentsOf: target) == Data(second))
            #expect(result.usedBasis && !result.basisScanned)
            #expect(result.bytesReceived - changed < 2048, "received \(result.bytesReceived) bytes for \(changed) changed")
            // from a basis without a kept list: the assembled file is checked by its list checksum
            let scanned = directory.appendingPathComponent("scanned.bin")
            let fromScan = try await asset.download(to: scanned, reusing: AssetDownloadBasis(fileURL: oldCopy), transfer: transfer)
            #expect(try Data(contentsOf: scanned) == Data(second))
            #expect(fromScan.usedBasis && fromScan.fileChecksum == secondScan.fileChecksum)
            // a whole-content checksum upload of the same content still works, under its own identity
            let wholeScan = try AssetFileScan.scan(file)
            let wholeUpload = try await transfer.upload(fileURL: file, to: try await Relative.uploadURL(database), scan: wholeScan)
            #expect(wholeUpload.asset.fileChecksum == wholeScan.fileChecksum)
            #expect(AssetChecksum.kind(of: wholeScan.fileChecksum) == .sha256)
        }
    }
}
