// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
@testable import Ubiquity
import UbiquityCore
import UbiquityServer
import UbiquityWire
@testable import UbiquityCloudKit

/// Chunk lists sent relative to the previous version (`docs/assets.md`, "Lists relative to a
/// base"), by the Swift client against a real `RecordsServer`: the upload from a scan that was
/// given the previous list, and the chunk-level download from a basis with a kept list. Bytes
/// counted, never time.
@Suite struct ClientAssetRelativeListTests {
    typealias Delta = ClientAssetDeltaTests

    /// A fresh upload URL for a `Blob` record's `content` field.
    static func uploadURL(_ database: CloudDatabase) async throws -> URL {
        let record = Record(recordType: "Blob")
        let response = try await database.send("assets/upload", body: .object([
            "zoneID": record.recordID.zoneID.wire.json,
            "tokens": .array([.object(["recordType": .string("Blob"), "fieldName": .string("content")])]),
        ]))
        let text = try #require(response.objectValue?["tokens"]?.arrayValue?.first?.objectValue?["url"]?.stringValue)
        return try #require(URL(string: text))
    }

    /// A server and a file whose first version (`size` random bytes from `seed`) is uploaded and
    /// saved in a record.
    struct Rig {
        let directory: URL
        let database: CloudDatabase
        let transfer: AssetTransfer
        let file: URL
        let first: [UInt8]
        let firstScan: AssetFileScan
        let uploadedFirst: AssetUploadResult
        /// The checksum kind of every scan (``AssetFileScan/scan(_:chunking:previous:pieceSize:identity:)``).
        let identity: AssetChecksum.Kind

        /// The first version's list as a device keeps it (12-byte chunk hashes).
        var firstKept: AssetChunkList {
            AssetChunkList(fileChecksum: firstScan.fileChecksum, size: firstScan.size, chunking: .default, hashBytes: 12,
                           chunks: firstScan.chunkList.chunks)
        }

        /// The first version with its middle byte changed, written to the file, scanned against
        /// the first version's list and uploaded; with the bytes of the chunks the first lacks.
        func uploadMiddleEdit() async throws -> (second: [UInt8], scan: AssetFileScan, uploaded: AssetUploadResult, changed: Int64) {
            var second = first
            second[second.count / 2] ^= 0x11
            try Data(second).write(to: file)
            let scan = try AssetFileScan.scan(file, previous: firstScan.chunkList, identity: identity)
            let uploaded = try await transfer.upload(fileURL: file, to: try await ClientAssetRelativeListTests.uploadURL(database), scan: scan)
            return (second, scan, uploaded, ClientAssetRelativeListTests.newChunkBytes(scan.chunkList, old: firstScan.chunkList))
        }

        /// A copy of the first version beside the file (`old.bin`), as the other device keeps it.
        func keepFirstVersion() throws -> URL {
            let copy = directory.appendingPathComponent("old.bin")
            try Data(first).write(to: copy)
            return copy
        }

        /// `asset` saved in a new record and read back from the server (with its download URL).
        func savedAndFetched(_ asset: Asset) async throws -> Asset {
            var record = Record(recordType: "Blob")
            record["content"] = .asset(asset)
            let saved = try await database.save(record)
            return try #require(try await database.record(for: saved.recordID)["content"]?.assetValue)
        }
    }

    /// Runs `body` with a ``Rig``; the server is stopped and the folder removed afterwards.
    static func withFirstVersion(size: Int, seed: UInt64, identity: AssetChecksum.Kind = .sha256, _ body: (Rig) async throws -> Void) async throws {
        let directory = try Delta.folder()
        defer { try? FileManager.default.removeItem(at: directory) }
        let (database, stop) = try await ClientAssetTests.serve(directory)
        defer { stop() }
        let transfer = AssetTransfer(options: .init(retryDelay: .milliseconds(10), syncDownloadedFiles: false))
        let file = directory.appendingPathComponent("big.bin")
        let first = Delta.bytes(size, seed: seed)
        try Data(first).write(to: file)
        let firstScan = try AssetFileScan.scan(file, identity: identity)
        let uploadedFirst = try await transfer.upload(fileURL: file, to: try await uploadURL(database), scan: firstScan)
        // saved in its record, as a device saves every version it uploads: only content one's
        // own records refer to is a base later uploads may be sent relative to
        var record = Record(recordType: "Blob")
        record["content"] = .asset(uploadedFirst.asset)
        _ = try await database.save(record)
        try await body(Rig(directory: directory, database: database, transfer: transfer, file: file, first: first, firstScan: firstScan,
                           uploadedFirst: uploadedFirst, identity: identity))
    }

    /// The bytes of the chunks of `new` that `old` lacks.
    static func newChunkBytes(_ new: AssetChunkList, old: AssetChunkList) -> Int64 {
        let known = Set(old.chunks)
        return new.chunks.filter { !known.contains($0) }.reduce(0) { $0 + Int64($1.size) }
    }

    @Test("an edit uploaded from a scan given the previous list: the list goes up relative (bytes ≈ the changed chunk), and downloads relative too")
    func editRoundTrip() async throws {
        try await Self.withFirstVersion(size: 16 << 20, seed: 181) { rig in
            let (directory, transfer, firstScan) = (rig.directory, rig.transfer, rig.firstScan)
            #expect(rig.uploadedFirst.asset.fileChecksum == firstScan.fileChecksum)
            let oldCopy = try rig.keepFirstVersion()

            let (second, secondScan, uploaded, changed) = try await rig.uploadMiddleEdit()
            #expect(secondScan.previous?.fileChecksum == firstScan.fileChecksum)
            #expect(uploaded.asset.fileChecksum == secondScan.fileChecksum && uploaded.deduplicated)
            // the whole list alone would be 256 chunks × 48 characters of base64 (~12 KB)
            #expect(uploaded.bytesSent - changed < 2048, "sent \(uploaded.bytesSent) bytes for \(changed) changed")

            // a record holding it; the device with the old version downloads only the difference
            let asset = try await rig.savedAndFetched(uploaded.asset)
            let kept = rig.firstKept
            let target = directory.appendingPathComponent("target.bin")
            let result = try await asset.download(to: target, reusing: AssetDownloadBasis(fileURL: oldCopy, chunkList: kept) { true }, transfer: transfer)
            #expect(try Data(contentsOf: target) == Data(second))
            #expect(result.usedBasis && !result.basisScanned)
            #expect(result.bytesReceived - changed < 2048, "received \(result.bytesReceived) bytes for \(changed) changed")
            #expect(result.chunkList?.chunks.count == secondScan.chunkList.chunks.count)
            #expect(result.chunkList?.fileChecksum == secondScan.fileChecksum)
        }
    }

    @Test("a previous list the server does not hold: the whole list is sent, the upload still succeeds")
    func unknownBase() async throws {
        try await Self.withFirstVersion(size: 8 << 20, seed: 182) { rig in
            let (database, transfer, file, first, firstScan) = (rig.database, rig.transfer, rig.file, rig.first, rig.firstScan)
            var second = first
            second[100] ^= 0x22
            try Data(second).write(to: file)
            // a previous list under a checksum the server never stored
            var stranger = firstScan.chunkList
            stranger.fileChecksum = Data(repeating: 7, count: 32).base64EncodedString()
            let scan = try AssetFileScan.scan(file, previous: stranger)
            let uploaded = try await transfer.upload(fileURL: file, to: try await Self.uploadURL(database), scan: scan)
            #expect(uploaded.asset.fileChecksum == scan.fileChecksum)
            let wholeList = Int64(scan.chunkList.chunks.count * 36 * 4 / 3)
            #expect(uploaded.bytesSent > wholeList, "the whole list went up after the relative one was refused")
        }
    }
}
