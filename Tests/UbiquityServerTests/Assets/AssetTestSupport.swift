// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import Foundation
import Hummingbird
import Logging
import NIOCore
import NIOHTTP1
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Helpers shared by the asset tests: temporary stores, content, and a Hummingbird app with only
/// the asset routes on a loopback port.
enum AssetTestSupport {
    static let logger: Logger = {
        var logger = Logger(label: "test.assets")
        logger.logLevel = .critical
        return logger
    }()

    static let binding = AssetBinding(container: "iCloud.org.example.Tests", environment: .development, scope: .private,
                                      owner: "_0123456789abcdef0123456789abcdef", zoneName: "_defaultZone", recordType: "Photo",
                                      fieldName: "image", recordName: "photo-1")

    /// A fresh folder, removed by `cleanup`.
    static func temporaryDirectory() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-assets-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    /// A store in a fresh folder (no fsync: tests share the disk with everyone).
    static func makeStore(_ configure: (inout FileBlobStore.Configuration) -> Void = { _ in }) throws -> (FileBlobStore, URL) {
        let folder = try temporaryDirectory()
        var configuration = FileBlobStore.Configuration(syncBeforeCommit: false, writeBacklog: 1 << 20)
        configure(&configuration)
        return (try FileBlobStore(directory: folder, configuration: configuration, logger: logger), folder)
    }

    /// Repeatable pseudo-random bytes.
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        // a word at a time (the same bytes as one at a time, little-endian): cheap even in a
        // debug build, so tests making megabytes do not hold a thread of the cooperative pool
        return [UInt8](unsafeUninitializedCapacity: count) { buffer, initialized in
            let raw = UnsafeMutableRawBufferPointer(buffer)
            var index = 0
            while index + 8 <= count {
                raw.storeBytes(of: random.next().littleEndian, toByteOffset: index, as: UInt64.self)
                index += 8
            }
            var word = random.next()
            while index < count {
                raw[index] = UInt8(truncatingIfNeeded: word)
                word >>= 8
                index += 1
            }
            initialized = count
        }
    }

    /// Standard base64 of the SHA-256: the fileChecksum of `bytes`.
    static func checksum(_ bytes: [UInt8]) -> String { Data(SHA256.hash(data: bytes)).base64EncodedString() }

    /// The chunks of `bytes` as the store cuts them, with their bytes.
    static func chunks(_ bytes: [UInt8], parameters: FastCDC.Parameters = .default) -> [(ref: AssetChunkRef, bytes: [UInt8])] {
        var offset = 0
        return FastCDC.chunkLengths(of: bytes, parameters: parameters).map { length in
            defer { offset += length }
            let piece = Array(bytes[offset..<offset + length])
            return (AssetChunkRef(hash: Hex.encode(SHA256.hash(data: piece)), size: length), piece)
        }
    }

    /// Number of files under `folder/sub`.
    static func fileCount(_ folder: URL, _ sub: String) -> Int {
        let root = folder.appendingPathComponent(sub)
        guard let enumerator = FileManager.default.enumerator(at: root, includingPropertiesForKeys: [.isRegularFileKey]) else { return 0 }
        var count = 0
        for case let url as URL in enumerator where (try? url.resourceValues(forKeys: [.isRegularFileKey]).isRegularFile) == true { count += 1 }
        return count
    }
}

/// A Hummingbird app with only the asset routes, on 127.0.0.1 and a free port.
final class AssetTestServer: Sendable {
    let url: String
    let service: AssetService
    let store: FileBlobStore
    let folder: URL
    private let task: Task<Void, any Error>

    private init(url: String, service: AssetService, store: FileBlobStore, folder: URL, task: Task<Void, any Error>) {
        self.url = url
        self.service = service
        self.store = store
        self.folder = folder
        self.task = task
    }

    static func start(configuration: AssetConfiguration = AssetConfiguration(maximumAssetSize: 64 << 20),
                      store configure: (inout FileBlobStore.Configuration) -> Void = { _ in }) async throws -> AssetTestServer {
        let (store, folder) = try AssetTestSupport.makeStore(configure)
        // (no records here: every stored asset counts as one the uploader can read, so the
        // deduplication mechanics are tested; who may deduplicate is UploadDeduplicationHTTPTests')
        let service = AssetService(store: store, key: SymmetricKey(size: .bits256), configuration: configuration, logger: AssetTestSupport.logger,
                                   canDeduplicate: { _, _ in true })
        let router = Router(context: BasicRequestContext.self)
        AssetRoutes(service: service).register(on: router)
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: 0), serverName: "assets-test"),
                              onServerRunning: { channel in continuation.yield("http://127.0.0.1:\(channel.localAddress?.port ?? 0)") },
                              logger: AssetTestSupport.logger)
        let task = Task { try await app.run() }
        var iterator = stream.makeAsyncIterator()
        guard let url = await iterator.next() else { throw UbiquityError(.serviceUnavailable, "the asset test server did not start") }
        return AssetTestServer(url: url, service: service, store: store, folder: folder, task: task)
    }

    func stop() async {
        task.cancel()
        _ = try? await task.value
        try? FileManager.default.removeItem(at: folder)
    }

    /// Stops the server without waiting and deletes its folder (for `defer`).
    func shutdown() {
        task.cancel()
        try? FileManager.default.removeItem(at: folder)
    }

    /// A fresh upload URL for the test binding.
    func uploadURL(binding: AssetBinding = AssetTestSupport.binding, now: Date = Date()) -> String {
        service.uploadURL(for: binding, baseURL: url, now: now)
    }

    /// A reply.
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: [UInt8]
        var json: JSONValue { (try? JSONValue.parse(Data(body))) ?? .null }
        var errorCode: String? { json.objectValue?["serverErrorCode"]?.stringValue }
        var singleFile: WireAsset? { json.objectValue?["singleFile"].flatMap { try? WireAsset(json: $0, path: "singleFile") } }
    }

    /// Sends a request with a whole body.
    func send(_ method: HTTPMethod, _ url: String, body: [UInt8]? = nil, headers: [(String, String)] = []) async throws -> Reply {
        var request = HTTPClientRequest(url: url)
        request.method = method
        for (name, value) in headers { request.headers.add(name: name, value: value) }
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        return try await Self.collect(HTTPClient.shared.execute(request, timeout: .seconds(60)))
    }

    /// POSTs JSON.
    func post(_ path: String, json: JSONValue) async throws -> Reply {
        try await send(.POST, url + path, body: Array(json.serialized()), headers: [("Content-Type", "application/json")])
    }

    static func collect(_ response: HTTPClientResponse) async throws -> Reply {
        let buffer = try await response.body.collect(upTo: 256 << 20)
        var headers: [String: String] = [:]
        for header in response.headers { headers[header.name.lowercased()] = header.value }
        return Reply(status: Int(response.status.code), headers: headers, body: Array(buffer.readableBytesView))
    }

    /// The token part of an upload URL.
    static func token(of uploadURL: String) -> String { String(uploadURL.split(separator: "/").last ?? "") }
}
