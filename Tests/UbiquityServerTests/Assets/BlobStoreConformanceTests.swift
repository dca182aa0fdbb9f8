// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOCore
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// What every ``BlobStore`` does, run against each backend that can run here
/// (`BlobBackend.available`: the folder store always, the S3 store when `scripts/test` started
/// an S3 server).
struct BlobStoreConformanceTests {
    @Test("a stored asset reads back whole and in ranges; its checksum is base64 SHA-256 of the content", arguments: BlobBackend.available)
    func roundTrip(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let content = AssetTestSupport.bytes(3 << 20 + 123, seed: 1)
        // Written in odd pieces.
        let writer = try await store.makeWriter()
        var offset = 0
        var size = 1
        while offset < content.count {
            let end = min(content.count, offset + size)
            try await writer.append(ByteBuffer(bytes: content[offset..<end]))
            offset = end
            size = size * 3 + 7
        }
        let info = try await writer.finish()
        #expect(info.fileChecksum == AssetTestSupport.checksum(content))
        #expect(info.size == Int64(content.count))
        #expect(info.chunkCount == FastCDC.chunkLengths(of: content).count)
        #expect(try await store.info(fileChecksum: info.fileChecksum) == info)
        #expect(try await store.readAll(fileChecksum: info.fileChecksum) == content)
        for range: Range<Int64> in [0..<1, 5..<70_000, 100_000..<1_000_000, Int64(content.count - 10)..<Int64(content.count), 0..<0, 2_000_000..<2_000_001] {
            let part = try await store.readAll(fileChecksum: info.fileChecksum, range: range)
            #expect(part == Array(content[Int(range.lowerBound)..<Int(range.upperBound)]))
        }
        await #expect(throws: UbiquityError.self) { try await store.read(fileChecksum: info.fileChecksum, range: 0..<Int64(content.count + 1)) }
        await #expect(throws: UbiquityError.self) { try await store.read(fileChecksum: AssetTestSupport.checksum([1]), range: nil) }
        #expect(try await store.info(fileChecksum: "not base64") == nil)
    }

    @Test("the same content is stored once; an empty asset is an asset too", arguments: BlobBackend.available)
    func deduplication(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let content = AssetTestSupport.bytes(2 << 20, seed: 2)
        let first = try await store.write(content)
        let chunksBefore = try await store.usage().chunks
        let second = try await store.write(content)
        #expect(first == second)
        #expect(try await store.usage().chunks == chunksBefore)
        let usage = try await store.usage()
        #expect(usage.bytes == Int64(content.count) && usage.assets == 1)
        let empty = try await store.write([UInt8]())
        #expect(empty.size == 0 && empty.chunkCount == 0 && empty.fileChecksum == AssetTestSupport.checksum([]))
        #expect(try await store.readAll(fileChecksum: empty.fileChecksum) == [])
    }

    @Test("assets of 1 to 9 bytes (a chunk line with a one-digit size) read back", arguments: BlobBackend.available)
    func tinyAssets(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        for size in [1, 5, 9, 10] {
            let content = AssetTestSupport.bytes(size, seed: UInt64(size))
            let info = try await store.write(content)
            #expect(try await store.readAll(fileChecksum: info.fileChecksum) == content)
        }
    }

    @Test("chunks whose bytes do not match their hash are refused", arguments: BlobBackend.available)
    func chunkHashMismatch(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let bytes = AssetTestSupport.bytes(1000, seed: 3)
        let wrong = Hex.encode(SHA256.hash(data: [UInt8](repeating: 0, count: 10)))
        await #expect { try await store.putChunk(hash: wrong, bytes: ByteBuffer(bytes: bytes)) } throws: { error in
            (error as? UbiquityError)?.code == .invalidArgument
        }
        #expect(try await store.usage().chunks == 0)
        await #expect(throws: UbiquityError.self) { try await store.putChunk(hash: "abc", bytes: ByteBuffer(bytes: bytes)) }
    }

    @Test("committing a chunk list gives what a plain upload of the same bytes gives; missing chunks are named", arguments: BlobBackend.available)
    func commitManifest(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let content = AssetTestSupport.bytes(1 << 20 + 77, seed: 4)
        let chunks = AssetTestSupport.chunks(content)
        for chunk in chunks.dropLast() { try await store.putChunk(hash: chunk.ref.hash, bytes: ByteBuffer(bytes: chunk.bytes)) }
        #expect(try await store.missingChunks(chunks.map(\.ref.hash)) == [chunks.last!.ref.hash])
        await #expect { try await store.commitManifest(chunks.map(\.ref)) } throws: { error in
            guard let error = error as? UbiquityError, error.code == .notFound else { return false }
            return (error.underlying as? BlobMissingChunks)?.hashes == [chunks.last!.ref.hash]
        }
        try await store.putChunk(hash: chunks.last!.ref.hash, bytes: ByteBuffer(bytes: chunks.last!.bytes))
        let committed = try await store.commitManifest(chunks.map(\.ref))
        let plain = try await BlobStoreFixture.make(backend)
        defer { plain.cleanup() }
        #expect(committed == (try await plain.store.write(content)))
        #expect(try await store.readAll(fileChecksum: committed.fileChecksum) == content)
        // A list whose sizes lie is refused.
        var lying = chunks.map(\.ref)
        lying[0].size += 1
        await #expect(throws: UbiquityError.self) { try await store.commitManifest(lying) }
    }

    @Test("a damaged chunk ends the read with an error, never with wrong bytes", arguments: BlobBackend.available)
    func corruptionDetected(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let content = AssetTestSupport.bytes(1 << 20, seed: 5)
        let info = try await store.write(content)
        let chunks = AssetTestSupport.chunks(content)
        let victim = chunks[1].ref.hash
        try await fixture.damage(chunk: victim)
        var received: [UInt8] = []
        await #expect(throws: UbiquityError.self) {
            for try await buffer in try await store.read(fileChecksum: info.fileChecksum, range: nil) {
                received.append(contentsOf: buffer.readableBytesView)
            }
        }
        #expect(received.count <= chunks[0].ref.size)
        #expect(received == Array(content.prefix(received.count)))
    }

    @Test("an upload session continues where it stopped, also after a restart, and is used by one request at a time", arguments: BlobBackend.available)
    func resumableSessions(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let content = AssetTestSupport.bytes(2 << 20 + 5, seed: 6)
        let total = Int64(content.count)
        // First request: 700 KB, then it breaks off.
        await #expect(throws: UbiquityError.self) {
            try await store.withUploadSession(id: "s1", totalSize: total) { writer in
                try await writer.append(ByteBuffer(bytes: content[0..<700_000]))
                // Another request for the same session is refused while this one runs.
                await #expect { try await store.withUploadSession(id: "s1", totalSize: total) { _ in 0 } } throws: { error in
                    (error as? UbiquityError)?.code == .conflict
                }
                throw UbiquityError(.io, "connection reset")
            }
        }
        #expect(try await store.uploadSession(id: "s1")?.received == 700_000)
        // A restarted server (a new store on the same content) recovers the session from what it saved.
        let restarted = try fixture.reopen()
        #expect(try await restarted.uploadSession(id: "s1")?.received == 700_000)
        try await restarted.withUploadSession(id: "s1", totalSize: total) { writer in
            #expect(await writer.bytesWritten == 700_000)
            try await writer.append(ByteBuffer(bytes: content[700_000..<1_500_000]))
        }
        let info = try await restarted.withUploadSession(id: "s1", totalSize: total) { writer -> BlobInfo in
            #expect(await writer.bytesWritten == 1_500_000)
            try await writer.append(ByteBuffer(bytes: content[1_500_000...]))
            return try await writer.finish()
        }
        #expect(info.fileChecksum == AssetTestSupport.checksum(content))
        #expect(try await restarted.readAll(fileChecksum: info.fileChecksum) == content)
        #expect(try await restarted.uploadSession(id: "s1") == nil)
        // A session for another size, or more bytes than announced, is refused.
        try await restarted.withUploadSession(id: "s2", totalSize: 10) { writer in
            await #expect(throws: UbiquityError.self) { try await writer.append(ByteBuffer(bytes: [UInt8](repeating: 1, count: 11))) }
        }
        await #expect(throws: UbiquityError.self) { try await restarted.withUploadSession(id: "s2", totalSize: 20) { _ in 0 } }
        await #expect(throws: UbiquityError.self) { try await restarted.withUploadSession(id: "../x", totalSize: 20) { _ in 0 } }
    }

    @Test("garbage collection keeps referenced and recent assets and drops the rest", arguments: BlobBackend.available)
    func garbageCollection(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let kept = AssetTestSupport.bytes(1 << 20, seed: 7)
        var dropped = kept
        dropped[500_000] ^= 0xFF  // shares most chunks with `kept`
        let other = AssetTestSupport.bytes(600_000, seed: 8)
        let keptInfo = try await store.write(kept)
        let droppedInfo = try await store.write(dropped)
        let otherInfo = try await store.write(other)
        // Nothing is old enough yet.
        let none = try await store.collectGarbage(referenced: [], olderThan: Date(timeIntervalSinceNow: -3600))
        #expect(none.manifestsDeleted == 0 && none.chunksDeleted == 0)
        // Everything is old: only the referenced asset survives, with all its chunks.
        let report = try await store.collectGarbage(referenced: [keptInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
        #expect(report.manifestsDeleted == 2)
        #expect(report.chunksDeleted > 0)
        #expect(try await store.readAll(fileChecksum: keptInfo.fileChecksum) == kept)
        #expect(try await store.info(fileChecksum: droppedInfo.fileChecksum) == nil)
        #expect(try await store.info(fileChecksum: otherInfo.fileChecksum) == nil)
        let usage = try await store.usage()
        #expect(usage.assets == 1 && usage.bytes == Int64(kept.count))
    }

    @Test("a crash at any step of garbage collection loses nothing referenced", arguments: BlobBackend.available)
    func garbageCollectionCrash(_ backend: BlobBackend) async throws {
        for step in ["manifest", backend.chunkStep, "session"] {
            for crashAfter in [0, 1, 3] {
                let seen = StepCounter()
                let fixture = try await BlobStoreFixture.make(backend) { name in
                    if name == step, seen.next() > crashAfter { throw UbiquityError(.io, "simulated crash at \(name)") }
                }
                defer { fixture.cleanup() }
                let store = fixture.store
                let kept = AssetTestSupport.bytes(800_000, seed: 9)
                let keptInfo = try await store.write(kept)
                for seed in 10..<14 { _ = try await store.write(AssetTestSupport.bytes(300_000, seed: UInt64(seed))) }
                try await store.withUploadSession(id: "stale", totalSize: 1000) { try await $0.append(ByteBuffer(bytes: [1, 2, 3])) }
                _ = try? await store.collectGarbage(referenced: [keptInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
                #expect(try await store.readAll(fileChecksum: keptInfo.fileChecksum) == kept, "crash at \(step) after \(crashAfter)")
                // A complete run afterwards (a restarted server) finishes the job.
                let clean = try fixture.reopen()
                _ = try await clean.collectGarbage(referenced: [keptInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
                #expect(try await clean.readAll(fileChecksum: keptInfo.fileChecksum) == kept)
                let usage = try await clean.usage()
                #expect(usage.assets == 1 && usage.bytes == Int64(kept.count), "crash at \(step) after \(crashAfter)")
            }
        }
    }

    @Test("a chunk list committed with its chunk-list checksum is stored under that checksum; a wrong claim is refused", arguments: BlobBackend.available)
    func chunkListChecksum(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let content = AssetTestSupport.bytes(900_000, seed: 30)
        let chunks = AssetTestSupport.chunks(content)
        for chunk in chunks { try await store.putChunk(hash: chunk.ref.hash, bytes: ByteBuffer(bytes: chunk.bytes)) }
        let claimed = AssetChecksum.chunkList(chunks.map(\.ref))
        let info = try await store.commitManifest(chunks.map(\.ref), claimedChecksum: claimed)
        #expect(info.fileChecksum == claimed && info.size == Int64(content.count) && info.verified)
        #expect(try await store.readAll(fileChecksum: claimed) == content)
        #expect(try await store.chunkList(fileChecksum: claimed) == chunks.map(\.ref))
        let other = AssetChecksum.chunkList(Array(chunks.map(\.ref).dropLast()))
        await #expect { try await store.commitManifest(chunks.map(\.ref), claimedChecksum: other) } throws: { error in
            (error as? UbiquityError)?.code == .invalidArgument
        }
    }

    @Test("content collected and stored again by another process reads back whole here (nothing stale is remembered)", arguments: BlobBackend.available)
    func storedAgainElsewhere(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let here = fixture.store
        let content = AssetTestSupport.bytes(2 << 20, seed: 50)
        let info = try await here.write(content)
        #expect(try await here.readAll(fileChecksum: info.fileChecksum) == content)
        let elsewhere = try fixture.reopen()
        let report = try await elsewhere.collectGarbage(referenced: [], olderThan: Date(timeIntervalSinceNow: 3600))
        #expect(report.manifestsDeleted == 1)
        #expect(try await here.info(fileChecksum: info.fileChecksum) == nil)
        #expect(try await elsewhere.write(content) == info)
        #expect(try await here.readAll(fileChecksum: info.fileChecksum) == content)
        #expect(try await here.readAll(fileChecksum: info.fileChecksum, range: 1000..<900_000) == Array(content[1000..<900_000]))
    }

    @Test("garbage collection compacts a pack mostly unused: what is used moves to a new pack and reads back, the old pack goes",
          arguments: BlobBackend.available.filter(\.packed))
    func compaction(_ backend: BlobBackend) async throws {
        let fixture = try await BlobStoreFixture.make(backend)
        defer { fixture.cleanup() }
        let store = fixture.store
        let whole = AssetTestSupport.bytes(4 << 20, seed: 60)
        let wholeInfo = try await store.write(whole)
        // a quarter of it: its chunks are the whole's (but for the last), in the whole's pack
        let part = Array(whole.prefix(1 << 20))
        let partInfo = try await store.write(part)
        let before = try await store.usage()
        let report = try await store.collectGarbage(referenced: [partInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
        #expect(report.manifestsDeleted == 1 && report.packsCompacted == 1)
        #expect(try await store.info(fileChecksum: wholeInfo.fileChecksum) == nil)
        #expect(try await store.readAll(fileChecksum: partInfo.fileChecksum) == part)
        #expect(try await fixture.reopen().readAll(fileChecksum: partInfo.fileChecksum) == part)
        let after = try await store.usage()
        #expect(after.bytes < before.bytes / 2 && after.bytes >= Int64(part.count) && after.assets == 1)
        #expect(try await BlobMigration.verify(store).good == 1)
        // nothing more to do the next time
        let again = try await fixture.reopen().collectGarbage(referenced: [partInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
        #expect(again.packsCompacted == 0 && again.manifestsDeleted == 0)
    }

    @Test("a crash in the middle of a compaction loses nothing; the next collection finishes it", arguments: BlobBackend.available.filter(\.packed))
    func compactionCrash(_ backend: BlobBackend) async throws {
        for crashAt in ["compact", "pack"] {
            let fixture = try await BlobStoreFixture.make(backend) { name in
                if name == crashAt { throw UbiquityError(.io, "simulated crash at \(name)") }
            }
            defer { fixture.cleanup() }
            let whole = AssetTestSupport.bytes(4 << 20, seed: 61)
            _ = try await fixture.store.write(whole)
            let part = Array(whole.prefix(1 << 20))
            let partInfo = try await fixture.store.write(part)
            await #expect(throws: UbiquityError.self) {
                try await fixture.store.collectGarbage(referenced: [partInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
            }
            #expect(try await fixture.reopen().readAll(fileChecksum: partInfo.fileChecksum) == part, "crash at \(crashAt)")
            let clean = try fixture.reopen()
            _ = try await clean.collectGarbage(referenced: [partInfo.fileChecksum], olderThan: Date(timeIntervalSinceNow: 3600))
            #expect(try await clean.readAll(fileChecksum: partInfo.fileChecksum) == part)
            #expect(try await clean.usage().bytes < Int64(2 << 20), "crash at \(crashAt)")
        }
    }
}

/// A thread-safe counter for test hooks.
private final class StepCounter: Sendable {
    private let value = Mutex<Int>(0)
    func next() -> Int { value.withLock { $0 += 1; return $0 } }
}
