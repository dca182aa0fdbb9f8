// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// A blob store backend the tests run against.
enum BlobBackend: String, CaseIterable, Sendable, CustomTestStringConvertible {
    /// `FileBlobStore` in a temporary folder: always.
    case file
    /// `PackBlobStore` over `FolderObjects` (pack files) in a temporary folder: always.
    case packs
    /// `PackBlobStore` in a fresh bucket of the S3 server at `UBIQUITY_TEST_S3_URL` (moto's,
    /// started by `scripts/test`): only when that is set.
    case s3

    /// The backends that can run here.
    static var available: [BlobBackend] { BlobStoreFixture.s3URL == nil ? [.file, .packs] : [.file, .packs, .s3] }

    var testDescription: String { rawValue }

    /// The name garbage collection gives the step that deletes chunks' bytes.
    var chunkStep: String { self == .file ? "chunk" : "pack" }

    /// Whether it keeps chunks in packs (`PackBlobStore`).
    var packed: Bool { self != .file }
}

/// Where a test's blob store lives (a temporary folder, or a fresh bucket), so tests run in
/// parallel; ``reopen()`` opens another store on the same content (a restarted server, or a
/// second server).
struct BlobStoreFixture: Sendable {
    /// The S3 server for tests, from `UBIQUITY_TEST_S3_URL`.
    static var s3URL: URL? {
        guard let text = ProcessInfo.processInfo.environment["UBIQUITY_TEST_S3_URL"], !text.isEmpty else { return nil }
        return URL(string: text)
    }

    let backend: BlobBackend
    let store: any BlobStore
    private let folder: URL?
    /// The objects of a `PackBlobStore` backend.
    private let objects: (any BlobObjects)?
    private let step: (@Sendable (String) throws -> Void)?

    /// A fresh store; `step` is its garbage collection hook.
    static func make(_ backend: BlobBackend, step: (@Sendable (String) throws -> Void)? = nil) async throws -> BlobStoreFixture {
        switch backend {
        case .file:
            let (store, folder) = try AssetTestSupport.makeStore { $0.garbageCollectionStep = step }
            return BlobStoreFixture(backend: backend, store: store, folder: folder, objects: nil, step: step)
        case .packs:
            let folder = try AssetTestSupport.temporaryDirectory()
            let objects = try FolderObjects(folder: folder, durable: false)
            return BlobStoreFixture(backend: backend, store: packStore(objects, step: step), folder: folder, objects: objects, step: step)
        case .s3:
            let client = try await makeBucket()
            let objects = S3Client(location: client.location, credentials: .init(accessKeyID: "test", secretAccessKey: "test"),
                                   partSize: 5 << 20, logger: AssetTestSupport.logger)
            return BlobStoreFixture(backend: backend, store: packStore(objects, step: step), folder: nil, objects: objects, step: step)
        }
    }

    /// A client for a new, empty bucket on the test server (prefix `p/`).
    static func makeBucket(prefix: String = "p/") async throws -> S3Client {
        guard let endpoint = s3URL else { throw UbiquityError(.unsupported, "UBIQUITY_TEST_S3_URL is not set: no S3 server for tests") }
        let bucket = "ubiq-test-" + UUID().uuidString.lowercased().prefix(18)
        let location = try S3Location(endpoint: endpoint, bucket: String(bucket), prefix: prefix)
        let client = S3Client(location: location, credentials: .init(accessKeyID: "test", secretAccessKey: "test"), logger: AssetTestSupport.logger)
        try await client.createBucket()
        return client
    }

    /// A pack store with small packs (so a few MiB make several), touching packs on every reuse.
    static func packStore(_ objects: any BlobObjects, step: (@Sendable (String) throws -> Void)? = nil) -> PackBlobStore {
        var configuration = PackBlobStore.Configuration(packSize: 6 << 20, readSize: 1 << 20, retouchAfter: .zero)
        configuration.garbageCollectionStep = step
        return PackBlobStore(objects: objects, configuration: configuration, logger: AssetTestSupport.logger)
    }

    /// Another store on the same content, without the garbage collection hook.
    func reopen() throws -> any BlobStore {
        switch backend {
        case .file:
            return try FileBlobStore(directory: folder!, configuration: .init(syncBeforeCommit: false, writeBacklog: 1 << 20), logger: AssetTestSupport.logger)
        case .packs, .s3:
            return Self.packStore(objects!)
        }
    }

    /// Flips a bit of a stored chunk's bytes (where the backend keeps them).
    func damage(chunk hash: String) async throws {
        switch backend {
        case .file:
            let path = folder!.appendingPathComponent("chunks/\(hash.prefix(2))/\(hash.dropFirst(2).prefix(2))/\(hash)")
            var bytes = try [UInt8](Data(contentsOf: path))
            bytes[100] ^= 1
            try Data(bytes).write(to: path)
        case .packs, .s3:
            let objects = objects!
            for index in try await objects.list(prefix: "indexes/") {
                let text = String(buffer: try await objects.get(index.key, range: nil)!)
                guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix(hash) }) else { continue }
                let fields = line.split(separator: " ")
                let key = "packs/\(fields[2])"
                var bytes = Array(try await objects.get(key, range: nil)!.readableBytesView)
                bytes[Int(fields[3])! + 100] ^= 1
                try await objects.put(key, body: ByteBuffer(bytes: bytes))
                return
            }
            Issue.record("chunk \(hash) is in no pack index")
        }
    }

    /// Deletes the folder (a bucket is left to the throw-away server).
    func cleanup() {
        if let folder { try? FileManager.default.removeItem(at: folder) }
    }
}
