// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityServer
import UbiquityCloudKit

/// The Swift client's assets against a real `RecordsServer` with an asset store: saving a record
/// with `Asset(fileURL:)` uploads the file; fetched records download it.
@Suite struct ClientAssetTests {
    /// A server with an asset store on loopback and a container signed in to it; `stop` ends it.
    static func serve(_ directory: URL) async throws -> (database: CloudDatabase, stop: @Sendable () -> Void) {
        var logger = Logger(label: "test.client-assets")
        logger.logLevel = .warning
        let store = try SQLiteRecordStore(directory: directory.appendingPathComponent("data"), logger: logger)
        let admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
        let api = try await admin.addContainer("iCloud.org.example.Client")
        let web = try await admin.addUser("mei", email: nil, password: nil)
        let server = try await RecordsServer.open(store: store, configuration: .init(blobsDirectory: directory.appendingPathComponent("blobs").path),
                                                  logger: logger, blobConfiguration: FileBlobStore.Configuration(syncBeforeCommit: false))
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let task = Task { try await server.application { continuation.yield($0) }.run() }
        var iterator = stream.makeAsyncIterator()
        guard let url = await iterator.next() else {
            task.cancel()
            throw CancellationError()
        }
        let container = CloudContainer(identifier: "iCloud.org.example.Client", serverURL: URL(string: url)!,
                                       credentials: .apiToken(api, webAuthToken: web), logger: logger)
        return (container.privateCloudDatabase, { task.cancel() })
    }

    @Test func saveAssetFromFileAndDownloadIt() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-client-assets-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (database, stop) = try await ClientAssetTests.serve(directory)
        defer { stop() }

        let content = Data((0..<200_000).map { UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) })
        let file = directory.appendingPathComponent("photo.bin")
        try content.write(to: file)
        var record = Record(recordType: "Photo")
        record["title"] = "Sea"
        record["image"] = .asset(Asset(fileURL: file))
        let saved = try await database.save(record)
        let savedAsset = try #require(saved["image"]?.assetValue)
        #expect(savedAsset.size == Int64(content.count))
        #expect(savedAsset.downloadURL != nil)

        let fetched = try await database.record(for: record.recordID)
        let asset = try #require(fetched["image"]?.assetValue)
        #expect(asset.receipt == nil)
        let local = try await asset.download(to: directory.appendingPathComponent("downloaded.bin"))
        #expect(try Data(contentsOf: local) == content)

        // the fetched record saved back unchanged keeps its asset without a new upload
        var edited = fetched
        edited["title"] = "Sea at noon"
        let (results, _) = try await database.modifyRecords(saving: [edited], deleting: [], savePolicy: .allKeys)
        let resaved = try #require(try results[record.recordID]?.get())
        #expect(resaved["image"]?.assetValue?.fileChecksum == asset.fileChecksum)

        // into a cache folder: downloaded once, then served from the folder
        let cache = directory.appendingPathComponent("cache")
        let withFiles = try await database.downloadingAssets(of: fetched, into: cache)
        let cachedURL = try #require(withFiles["image"]?.assetValue?.fileURL)
        #expect(try Data(contentsOf: cachedURL) == content)
        let again = try await database.downloadingAssets(of: fetched, into: cache)
        #expect(again["image"]?.assetValue?.fileURL == cachedURL)
    }

    /// `perRecordProgressBlock` hears each record's uploads move to 1, never backwards.
    @Test func modifyRecordsOperationReportsUploadProgress() async throws {
        let directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-client-progress-\(UUID().uuidString.prefix(8))")
        defer { try? FileManager.default.removeItem(at: directory) }
        let (database, stop) = try await ClientAssetTests.serve(directory)
        defer { stop() }
        let big = directory.appendingPathComponent("big.bin"), empty = directory.appendingPathComponent("empty.bin")
        try Data((0..<3_000_000).map { UInt8(truncatingIfNeeded: $0 &* 131 &+ $0 >> 9) }).write(to: big)
        try Data().write(to: empty)
        var record = Record(recordType: "Photo")
        record["image"] = .asset(Asset(fileURL: big))
        record["thumbnails"] = .list([.asset(Asset(fileURL: empty))])
        let plain = Record(recordType: "Photo")

        let operation = ModifyRecordsOperation(recordsToSave: [record, plain], recordIDsToDelete: nil)
        let fractions = Mutex<[Record.ID: [Double]]>([:])
        let saved = Mutex<[Record.ID]>([])
        operation.perRecordProgressBlock = { id, fraction in fractions.withLock { $0[id, default: []].append(fraction) } }
        operation.perRecordSaveBlock = { id, result in if (try? result.get()) != nil { saved.withLock { $0.append(id) } } }
        database.add(operation)
        await operation.waitUntilFinished()
        #expect(Set(saved.withLock { $0 }) == [record.recordID, plain.recordID])
        let reported = try #require(fractions.withLock { $0 }[record.recordID])
        #expect(reported.count >= 2)
        #expect(reported.last == 1)
        #expect(zip(reported, reported.dropFirst()).allSatisfy { $0 <= $1 })
        #expect(fractions.withLock { $0 }[plain.recordID] == nil)
    }
}
