// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

struct AssetTransferTests {
    static func bytes(_ count: Int, seed: UInt64) -> [UInt8] {
        var random = SeededRandom(seed: seed)
        return (0..<(count + 7) / 8).flatMap { _ in withUnsafeBytes(of: random.next()) { Array($0) } }.prefix(count).map { $0 }
    }

    /// A folder for the test's files.
    static func folder() throws -> URL {
        let url = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-asset-transfer-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: url, withIntermediateDirectories: true)
        return url
    }

    static func write(_ bytes: [UInt8], in folder: URL, name: String = "file.bin") throws -> URL {
        let url = folder.appendingPathComponent(name)
        try Data(bytes).write(to: url)
        return url
    }

    /// Fast retries for tests.
    let transfer = AssetTransfer(options: .init(retryDelay: .milliseconds(10), syncDownloadedFiles: false))

    @Test("uploads to a plain upload URL with one POST of the streamed file")
    func plainUpload() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        server.state.withLock { $0.extensions = false }
        let content = Self.bytes(3 << 20, seed: 40)
        let progress = Mutex<[Int64]>([])
        let result = try await transfer.upload(fileURL: try Self.write(content, in: folder), to: server.uploadURL()) { report in
            progress.withLock { $0.append(report.completedBytes) }
        }
        #expect(result.asset.fileChecksum == MiniAssetServer.checksum(content))
        #expect(result.asset.size == Int64(content.count))
        #expect(result.asset.receipt != nil)
        #expect(!result.deduplicated && result.bytesSent == Int64(content.count))
        let reports = progress.withLock { $0 }
        #expect(reports == reports.sorted() && reports.last == Int64(content.count))
        await server.stop()
    }

    @Test("a broken upload connection is resumed from the bytes the server holds")
    func resumedUpload() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        server.state.withLock { $0.cutUploadAfter = 1 << 20 }
        let content = Self.bytes(3 << 20 + 99, seed: 41)
        let noDedup = AssetTransfer(options: .init(deduplicate: false, retryDelay: .milliseconds(10)))
        let result = try await noDedup.upload(fileURL: try Self.write(content, in: folder), to: server.uploadURL())
        #expect(result.asset.fileChecksum == MiniAssetServer.checksum(content))
        #expect(result.resumptions == 1)
        // The second attempt sent only what the server lacked: the first sent at most the whole file.
        #expect(result.bytesSent <= 2 * Int64(content.count) - (1 << 20))
        #expect(server.state.withLock { $0.assets[MiniAssetServer.checksum(content)] } == content)
        await server.stop()
    }

    @Test("deduplication: the same file again sends no chunk; one changed byte sends at most two chunks")
    func deduplicatedUploads() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let original = Self.bytes(4 << 20, seed: 42)
        // The first upload: everything is missing, so the file is streamed whole.
        let first = try await transfer.upload(fileURL: try Self.write(original, in: folder, name: "a"), to: server.uploadURL())
        #expect(first.asset.fileChecksum == MiniAssetServer.checksum(original))
        #expect(first.chunksSent == 0 && first.bytesSent >= Int64(original.count))
        // The server (like the real one) keeps the chunks of what it stored.
        server.state.withLock { state in
            var offset = 0
            for length in FastCDC.chunkLengths(of: original) {
                let chunk = Array(original[offset..<offset + length])
                state.chunks[Hex.encode(SHA256.hash(data: chunk))] = chunk
                offset += length
            }
        }
        let again = try await transfer.upload(fileURL: try Self.write(original, in: folder, name: "b"), to: server.uploadURL())
        #expect(again.deduplicated && again.chunksSent == 0)
        #expect(again.asset.fileChecksum == first.asset.fileChecksum)
        #expect(again.bytesSent < 1024, "a re-upload sent \(again.bytesSent) bytes")

        var edited = original
        edited[original.count / 2] ^= 0x77
        let progress = Mutex<[AssetTransferProgress]>([])
        let changed = try await transfer.upload(fileURL: try Self.write(edited, in: folder, name: "c"), to: server.uploadURL()) { report in
            progress.withLock { $0.append(report) }
        }
        #expect(changed.deduplicated && changed.chunksSent >= 1 && changed.chunksSent <= 2)
        #expect(changed.asset.fileChecksum == MiniAssetServer.checksum(edited))
        let chunkBytes = server.state.withLock { $0.received["chunk"] ?? 0 }
        #expect(chunkBytes <= 2 * 256 << 10)
        // The chunk list (packed: 64 chunks × 48 characters) and two small questions are the rest.
        #expect(changed.bytesSent <= Int64(chunkBytes) + 8192)
        let phases = Set(progress.withLock { $0.map(\.phase) })
        #expect(phases == [.scanning, .uploading])
        #expect(progress.withLock { $0.last?.fractionCompleted } == 1)
        await server.stop()
    }

    @Test("a download streams to a temporary file, resumes with Range after a cut, and lands under the name asked")
    func resumedDownload() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = Self.bytes(5 << 20 + 3, seed: 43)
        let checksum = MiniAssetServer.checksum(content)
        server.state.withLock { state in
            state.assets[checksum] = content
            state.cutDownloadAfter = 2 << 20
        }
        let target = folder.appendingPathComponent("photo.jpg")
        let result = try await transfer.download(from: server.downloadURL(checksum), to: target)
        #expect(try [UInt8](Data(contentsOf: target)) == content)
        #expect(result.fileChecksum == checksum && result.size == Int64(content.count))
        #expect(result.resumptions == 1)
        #expect(result.bytesReceived < Int64(content.count) + (1 << 20))
        #expect(server.state.withLock { $0.log.contains { $0.hasSuffix("/photo.jpg") } })
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path) == ["photo.jpg"])
        await server.stop()
    }

    @Test("content that does not match its checksum is refused and leaves no file")
    func checksumMismatch() async throws {
        let server = try await MiniAssetServer.start()
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = Self.bytes(100_000, seed: 44)
        let checksum = MiniAssetServer.checksum(content)
        server.state.withLock { state in
            state.assets[checksum] = content
            state.lyingETag = "\"\(MiniAssetServer.checksum([1]))\""
        }
        let target = folder.appendingPathComponent("x.bin")
        await #expect { try await transfer.download(from: server.downloadURL(checksum), to: target) } throws: { error in
            (error as? CloudKitError)?.code == .assetNotAvailable
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: folder.path).isEmpty)
        // A missing asset is the server's NOT_FOUND.
        await #expect { try await transfer.download(from: server.downloadURL(MiniAssetServer.checksum([9])), to: target) } throws: { error in
            (error as? CloudKitError)?.code == .unknownItem
        }
        await server.stop()
    }

    @Test("a missing file is assetFileNotFound")
    func missingFile() async throws {
        let server = try await MiniAssetServer.start()
        await #expect { try await transfer.upload(fileURL: URL(fileURLWithPath: "/nonexistent/\(UUID())"), to: server.uploadURL()) } throws: { error in
            (error as? CloudKitError)?.code == .assetFileNotFound
        }
        await server.stop()
    }
}
