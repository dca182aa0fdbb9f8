// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// What only the folder store does (its files' ages, its read counter); what every store does is
/// `BlobStoreConformanceTests`.
struct FileBlobStoreTests {
    @Test("garbage collection keeps the chunks of an upload session in progress")
    func garbageCollectionKeepsSessions() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = AssetTestSupport.bytes(1 << 20, seed: 20)
        try await store.withUploadSession(id: "live", totalSize: Int64(content.count)) { try await $0.append(ByteBuffer(bytes: content[..<600_000])) }
        // Its chunks are made two hours old; the session itself was active just now.
        let chunksFolder = folder.appendingPathComponent("chunks")
        for case let url as URL in FileManager.default.enumerator(at: chunksFolder, includingPropertiesForKeys: nil)! {
            try FileManager.default.setAttributes([.modificationDate: Date(timeIntervalSinceNow: -7200)], ofItemAtPath: url.path)
        }
        let report = try await store.collectGarbage(referenced: [], olderThan: Date(timeIntervalSinceNow: -3600))
        #expect(report.chunksDeleted == 0 && report.sessionsDeleted == 0)
        #expect(try await store.uploadSession(id: "live")?.received == 600_000)
        let info = try await store.withUploadSession(id: "live", totalSize: Int64(content.count)) { writer -> BlobInfo in
            try await writer.append(ByteBuffer(bytes: content[600_000...]))
            return try await writer.finish()
        }
        #expect(try await store.readAll(fileChecksum: info.fileChecksum) == content)
    }

    @Test("reading is driven by the consumer: nothing is read ahead of what is asked")
    func readIsPulled() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let content = AssetTestSupport.bytes(8 << 20, seed: 21)
        let info = try await store.write(content)
        let before = store.chunksRead
        var iterator = try await store.read(fileChecksum: info.fileChecksum, range: nil).makeAsyncIterator()
        #expect(store.chunksRead == before)
        _ = try await iterator.next()
        let afterOne = store.chunksRead - before
        // One batch (about 1 MiB of chunks), not the whole 8 MiB.
        #expect(afterOne >= 1 && afterOne <= 1 + (1 << 20) / (16 << 10))
    }
}
