// SPDX-License-Identifier: Apache-2.0
// assets-bench: measures asset uploads and downloads on loopback (see Benchmarks/assets/README.md).
//
//   assets-bench serve    --dir D --port P --key HEX [--no-sync] [--max BYTES] [--packs]
//                         (--packs: a PackBlobStore of pack files in D instead of a FileBlobStore)
//   assets-bench serve    --s3-endpoint URL --bucket NAME --port P --key HEX [--max BYTES]
//                         (an PackBlobStore in the bucket, created when missing; AWS_* credentials)
//   assets-bench upload   --server URL --key HEX --file F [--no-dedup] [--previous OLD]
//                         (--previous: the version uploaded before, whose chunk list the upload
//                         is sent relative to, as the sync engine does)
//   assets-bench download --server URL --key HEX --checksum C --size N --out F [--no-sync]
//
// Every command prints one JSON line with its figures. The key is the servers' HMAC key (hex),
// shared so the client can mint upload and download URLs without a records server.
import Crypto
import Foundation
import Hummingbird
import Logging
import UbiquityCloudKit
import UbiquityCore
import UbiquityServer
import UbiquityWire

func option(_ name: String) -> String? {
    let arguments = CommandLine.arguments
    guard let index = arguments.firstIndex(of: "--\(name)"), index + 1 < arguments.count else { return nil }
    return arguments[index + 1]
}

func flag(_ name: String) -> Bool { CommandLine.arguments.contains("--\(name)") }

func required(_ name: String) -> String {
    guard let value = option(name) else {
        FileHandle.standardError.write(Data("missing --\(name)\n".utf8))
        exit(2)
    }
    return value
}

func key() -> SymmetricKey {
    let digits = Array(required("key").utf8)
    var bytes: [UInt8] = []
    var index = 0
    while index + 1 < digits.count {
        bytes.append(UInt8(String(decoding: digits[index...index + 1], as: UTF8.self), radix: 16) ?? 0)
        index += 2
    }
    return SymmetricKey(data: bytes)
}

let binding = AssetBinding(container: "iCloud.bench", environment: .development, scope: .private, owner: "_bench",
                           zoneName: "_defaultZone", recordType: "Blob", fieldName: "data")

func emit(_ members: [String: JSONValue]) {
    FileHandle.standardOutput.write(JSONValue.object(members).serialized() + Data("\n".utf8))
}

var logger = Logger(label: "assets-bench")
logger.logLevel = .warning

switch CommandLine.arguments.dropFirst().first {
case "serve":
    let store: any BlobStore
    if let endpoint = option("s3-endpoint") {
        let location = try S3Location(url: "s3://\(required("bucket"))/blobs", endpoint: endpoint, region: nil, addressing: nil)
        let client = S3Client(location: location, credentials: try .resolve(file: nil, environment: ProcessInfo.processInfo.environment), logger: logger)
        try await client.createBucket()
        store = PackBlobStore(objects: client, logger: logger)
    } else if flag("packs") {
        store = PackBlobStore(objects: try FolderObjects(folder: URL(fileURLWithPath: required("dir")), durable: !flag("no-sync")), logger: logger)
    } else {
        var storeConfiguration = FileBlobStore.Configuration()
        storeConfiguration.syncBeforeCommit = !flag("no-sync")
        store = try FileBlobStore(directory: URL(fileURLWithPath: required("dir")), configuration: storeConfiguration, logger: logger)
    }
    let maximum = Int64(option("max") ?? "") ?? (8 << 30)
    // no records here: every stored asset counts as one the uploader can read (as AssetTestServer)
    let service = AssetService(store: store, key: key(), configuration: AssetConfiguration(maximumAssetSize: maximum), logger: logger,
                               canDeduplicate: { _, _ in true })
    let router = Router(context: BasicRequestContext.self)
    AssetRoutes(service: service).register(on: router)
    let app = Application(router: router, configuration: .init(address: .hostname("127.0.0.1", port: Int(required("port")) ?? 0)),
                          onServerRunning: { channel in emit(["listening": .integer(Int64(channel.localAddress?.port ?? 0))]) },
                          logger: logger)
    try await app.runService(gracefulShutdownSignals: [.sigterm, .sigint])

case "upload":
    let server = required("server")
    let uploadURL = AssetService(store: try FileBlobStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent("assets-bench-unused"),
                                                          logger: logger), key: key(), logger: logger).uploadURL(for: binding, baseURL: server)
    let transfer = AssetTransfer(options: .init(deduplicate: !flag("no-dedup")))
    let started = ContinuousClock.now
    let file = URL(fileURLWithPath: required("file"))
    let scan = try option("previous").map { previous in
        try AssetFileScan.scan(file, previous: try AssetFileScan.scan(URL(fileURLWithPath: previous)).chunkList)
    }
    let result = try await transfer.upload(fileURL: file, to: URL(string: uploadURL)!, scan: scan)
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    emit([
        "seconds": .number(seconds), "bytesSent": .integer(result.bytesSent), "chunksSent": .integer(Int64(result.chunksSent)),
        "deduplicated": .bool(result.deduplicated), "fileChecksum": .string(result.asset.fileChecksum ?? ""),
        "size": .integer(result.asset.size ?? 0),
    ])

case "download":
    let service = AssetService(store: try FileBlobStore(directory: FileManager.default.temporaryDirectory.appendingPathComponent("assets-bench-unused"),
                                                        logger: logger), key: key(), logger: logger)
    let url = service.downloadURL(fileChecksum: required("checksum"), size: Int64(required("size")) ?? 0, container: binding.container,
                                  baseURL: required("server"))
    let transfer = AssetTransfer(options: .init(syncDownloadedFiles: !flag("no-sync")))
    let started = ContinuousClock.now
    let result = try await transfer.download(from: url, to: URL(fileURLWithPath: required("out")))
    let elapsed = ContinuousClock.now - started
    let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
    emit(["seconds": .number(seconds), "bytesReceived": .integer(result.bytesReceived), "fileChecksum": .string(result.fileChecksum)])

default:
    FileHandle.standardError.write(Data("usage: assets-bench serve|upload|download …\n".utf8))
    exit(2)
}
