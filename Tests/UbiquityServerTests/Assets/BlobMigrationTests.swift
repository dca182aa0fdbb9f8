// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

struct BlobMigrationTests {
    /// Every pair of backends that can run here (a folder to a bucket and back, or folder to folder).
    static var pairs: [(BlobBackend, BlobBackend)] {
        BlobBackend.available.flatMap { from in BlobBackend.available.map { (from, $0) } }
    }

    @Test("migration copies every asset, verified, and skips what the target holds when run again; verify finds damage", arguments: pairs)
    func migrateAndVerify(_ from: BlobBackend, _ to: BlobBackend) async throws {
        let source = try await BlobStoreFixture.make(from)
        defer { source.cleanup() }
        let target = try await BlobStoreFixture.make(to)
        defer { target.cleanup() }
        let big = AssetTestSupport.bytes(3 << 20, seed: 40)
        let small = AssetTestSupport.bytes(1000, seed: 41)
        let bigInfo = try await source.store.write(big)
        let smallInfo = try await source.store.write(small)
        let listed = AssetTestSupport.bytes(500_000, seed: 42)
        let chunks = AssetTestSupport.chunks(listed)
        for chunk in chunks { try await source.store.putChunk(hash: chunk.ref.hash, bytes: ByteBuffer(bytes: chunk.bytes)) }
        let listInfo = try await source.store.commitManifest(chunks.map(\.ref), claimedChecksum: AssetChecksum.chunkList(chunks.map(\.ref)))

        // one asset is there already: a migration that stopped half way
        _ = try await target.store.write(small)
        let seen = Mutex<[BlobMigration.Progress]>([])
        let report = try await BlobMigration(source: source.store, target: target.store).run { progress in seen.withLock { $0.append(progress) } }
        #expect(report.copied == 2 && report.skipped == 1 && report.failed.isEmpty)
        #expect(report.bytesCopied == Int64(big.count + listed.count))
        #expect(seen.withLock { $0.last } == BlobMigration.Progress(assets: 3, totalAssets: 3, bytes: Int64(big.count + small.count + listed.count),
                                                                  totalBytes: Int64(big.count + small.count + listed.count)))
        #expect(try await target.store.readAll(fileChecksum: bigInfo.fileChecksum) == big)
        #expect(try await target.store.readAll(fileChecksum: smallInfo.fileChecksum) == small)
        #expect(try await target.store.readAll(fileChecksum: listInfo.fileChecksum) == listed)
        let again = try await BlobMigration(source: source.store, target: target.store).run()
        #expect(again.copied == 0 && again.skipped == 3)

        let good = try await BlobMigration.verify(target.store)
        #expect(good.good == 3 && good.missing.isEmpty && good.corrupt.isEmpty)
        try await target.damage(chunk: AssetTestSupport.chunks(big)[3].ref.hash)
        let damaged = try await BlobMigration.verify(target.reopen())
        #expect(damaged.good == 2 && Array(damaged.corrupt.keys) == [bigInfo.fileChecksum])
    }
}
