// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// Chunk-list checksums on the server (`FileBlobStore+Verification.swift`) and the commit's
/// retain (`FileBlobStore+Retention.swift`): a claimed list checksum is checked from the list at
/// once — a wrong one refused and never stored, so never a deduplication target — and a commit
/// relative to a stored base restarts the age of only the chunks the base lacks, while a
/// collection can never delete a chunk between that check and the new manifest. Real server on
/// loopback, real store files; chunks and bytes counted, never time.
struct AssetChunkListChecksumTests {
    static func listChecksum(_ chunks: [AssetChunkRef]) -> String {
        AssetChecksum.chunkList(chunks)
    }

    @Test("a true list claim: committed verified at once, without reading the chunks back; then a deduplication target")
    func trueClaim() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let bytes = AssetTestSupport.bytes(3 << 20, seed: 171)
        let token = AssetTestServer.token(of: server.uploadURL())
        let chunks = try await AssetManifestVerificationTests.sendChunks(bytes, server: server, token: token)
        let claimed = Self.listChecksum(chunks)
        let commit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(claimed), "size": .integer(Int64(bytes.count)),
        ]))
        #expect(commit.status == 200 && commit.singleFile?.fileChecksum == claimed)
        #expect(server.store.commitReadBytes == 0)
        await server.store.waitForVerifications()
        #expect(server.store.verificationReadBytes == 0)  // nothing left to check
        #expect(try await server.store.info(fileChecksum: claimed)?.verified == true)
        #expect(AssetTestSupport.fileCount(server.folder, "verifying") == 0)
        #expect(try await server.store.readAll(fileChecksum: claimed) == bytes)
        // a deduplication target at once, for anyone
        let again = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(AssetTestServer.token(of: server.uploadURL())), "fileChecksum": .string(claimed), "size": .integer(Int64(bytes.count)),
        ]))
        #expect(again.status == 200 && again.singleFile?.fileChecksum == claimed)
        // its chunk list downloads, and `base` takes its 66-digit hex
        let hex = try #require(AssetChecksum.hex(claimed))
        #expect(hex.count == 66)
        #expect(try await server.store.chunkList(fileChecksum: claimed) == chunks)
    }

    @Test("a wrong list claim is refused with 400, nothing is stored under it, and it is never a deduplication target")
    func wrongClaim() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let honest = AssetTestSupport.bytes(2 << 20, seed: 172)
        let poison = AssetTestSupport.bytes(2 << 20, seed: 173)
        let honestChunks = AssetTestSupport.chunks(honest).map(\.ref)
        let claimed = Self.listChecksum(honestChunks)
        // another user's poison claims the honest content's list checksum
        let token = AssetTestServer.token(of: server.uploadURL())
        _ = try await AssetManifestVerificationTests.sendChunks(poison, server: server, token: token)
        let commit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(claimed), "size": .integer(Int64(poison.count)),
        ]))
        #expect(commit.status == 400)
        #expect(commit.json.objectValue?["reason"]?.stringValue?.contains("fileChecksum") == true)
        #expect(try await server.store.info(fileChecksum: claimed) == nil)
        let asked = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(AssetTestServer.token(of: server.uploadURL())), "fileChecksum": .string(claimed), "size": .integer(Int64(honest.count)),
        ]))
        #expect(asked.status == 404)  // not stored: the honest uploader sends its own list
        // the honest upload is stored as itself
        let honestToken = AssetTestServer.token(of: server.uploadURL())
        _ = try await AssetManifestVerificationTests.sendChunks(honest, server: server, token: honestToken)
        let honestCommit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(honestToken), "fileChecksum": .string(claimed), "size": .integer(Int64(honest.count)),
        ]))
        #expect(honestCommit.status == 200 && honestCommit.singleFile?.fileChecksum == claimed)
        #expect(try await server.store.readAll(fileChecksum: claimed) == honest)
        // a claim that is neither kind is refused too
        let otherToken = AssetTestServer.token(of: server.uploadURL())
        _ = try await AssetManifestVerificationTests.sendChunks(honest, server: server, token: otherToken)
        let other = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(otherToken), "fileChecksum": .string(Data(repeating: 2, count: 33).base64EncodedString()),
            "packedChunks": .string(AssetChunkRef.packed(honestChunks)),
        ]))
        #expect(other.status == 400)
    }

    @Test("a whole-content SHA-256 claim still works as before (checked in the background)")
    func wholeClaimStillAccepted() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let bytes = AssetTestSupport.bytes(2 << 20, seed: 174)
        let token = AssetTestServer.token(of: server.uploadURL())
        _ = try await AssetManifestVerificationTests.sendChunks(bytes, server: server, token: token)
        let checksum = AssetTestSupport.checksum(bytes)
        let commit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(checksum), "size": .integer(Int64(bytes.count)),
        ]))
        #expect(commit.status == 200 && commit.singleFile?.fileChecksum == checksum)
        await server.store.waitForVerifications()
        #expect(try await server.store.info(fileChecksum: checksum)?.verified == true)
    }

    /// Stores `bytes` chunk by chunk and commits them under their list checksum; returns it and the list.
    static func commitList(_ store: FileBlobStore, _ bytes: [UInt8], base: String? = nil) async throws -> (String, [AssetChunkRef]) {
        let chunks = AssetTestSupport.chunks(bytes)
        let missing = Set(try await store.missingChunks(chunks.map(\.ref.hash)))
        for chunk in chunks where missing.contains(chunk.ref.hash) {
            try await store.putChunk(hash: chunk.ref.hash, bytes: .init(bytes: chunk.bytes))
        }
        let refs = chunks.map(\.ref)
        let checksum = listChecksum(refs)
        _ = try await store.commitManifest(refs, claimedChecksum: checksum, base: base)
        return (checksum, refs)
    }

    /// Sets the modification time of every file under `folder` an hour back.
    static func age(_ folder: URL) throws {
        let old = Date(timeIntervalSinceNow: -3600)
        let walker = FileManager.default.enumerator(atPath: folder.path)
        while let name = walker?.nextObject() as? String {
            try? FileManager.default.setAttributes([.modificationDate: old], ofItemAtPath: folder.appendingPathComponent(name).path)
        }
    }

    @Test("a commit relative to a stored base retains only the chunks the base lacks")
    func retainsOnlyNewChunks() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = AssetTestSupport.bytes(4 << 20, seed: 175)
        let (base, baseChunks) = try await Self.commitList(store, first)
        var second = first
        second[second.count / 2] ^= 0x5A
        let before = store.commitRetains
        let (_, newChunks) = try await Self.commitList(store, second, base: base)
        let after = store.commitRetains
        let lacking = Set(newChunks).subtracting(baseChunks).count
        #expect(after.retained - before.retained == lacking)
        #expect(after.skipped - before.skipped == newChunks.count - lacking)
        // without a base (or an unknown one): every chunk
        let third = AssetTestSupport.bytes(1 << 20, seed: 176)
        let (_, thirdChunks) = try await Self.commitList(store, third, base: Data(repeating: 9, count: 32).base64EncodedString())
        #expect(store.commitRetains.retained - after.retained == thirdChunks.count)
    }

    @Test("the race: a collection started while a skipping commit is between its check and its manifest waits for it, and keeps the base's chunks the new manifest names")
    func collectionWaitsForSkippingCommit() async throws {
        let gate = CommitGate()
        let (store, folder) = try AssetTestSupport.makeStore { $0.garbageCollectionStep = { _ in gate.collectorStepped() } }
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = AssetTestSupport.bytes(4 << 20, seed: 177)
        let (base, _) = try await Self.commitList(store, first)
        var second = first
        second[100] ^= 0x33
        let secondChunks = AssetTestSupport.chunks(second)
        for chunk in secondChunks { try await store.putChunk(hash: chunk.ref.hash, bytes: .init(bytes: chunk.bytes)) }
        // everything old, the base unreferenced: a collection would delete the base manifest and
        // every chunk no remaining manifest names
        try Self.age(folder)
        let refs = secondChunks.map(\.ref)
        let checksum = Self.listChecksum(refs)
        // a commit registered as skipping (as between its check and its rename)…
        #expect(store.beginSkippingCommit())
        let collection = Task.detached { try await store.collectGarbage(referenced: [checksum], olderThan: Date(timeIntervalSinceNow: -60)) }
        // …holds the collection back: it has not deleted anything (its steps come only after)
        for _ in 0..<50 where !gate.stepped { try await Task.sleep(for: .milliseconds(2)) }
        #expect(!gate.stepped, "the collection ran while a skipping commit was under way")
        try store.retain(refs, skippingBase: base)
        try store.commit(BlobManifest(fileChecksum: checksum, size: Int64(second.count), chunks: refs))
        store.endSkippingCommit()
        let report = try await collection.value
        #expect(report.manifestsDeleted == 1)  // the base
        #expect(try await store.info(fileChecksum: base) == nil)
        // the new manifest's chunks, the base's shared ones included, all survived
        #expect(try await store.missingChunks(refs.map(\.hash)).isEmpty)
        #expect(try await store.readAll(fileChecksum: checksum) == second)
    }

    @Test("the race, other way round: a commit while a collection runs retains every chunk, and one collected meanwhile is reported missing")
    func commitDuringCollectionRetainsAll() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let first = AssetTestSupport.bytes(2 << 20, seed: 178)
        let (base, baseChunks) = try await Self.commitList(store, first)
        // a collection is running
        store.beginCollecting()
        #expect(!store.beginSkippingCommit())
        // a base chunk deleted between the client's check and the commit
        let victim = baseChunks[3].hash
        #expect(unlink(store.chunkPath(victim)) == 0)
        store.endCollecting()
        // with no collection running, the skipping commit trusts the base's manifest; while one
        // runs it retains every chunk and finds the hole
        var second = first
        second[second.count - 10] ^= 0x44
        let chunks = AssetTestSupport.chunks(second)
        for chunk in chunks where chunk.ref.hash != victim { try await store.putChunk(hash: chunk.ref.hash, bytes: .init(bytes: chunk.bytes)) }
        let refs = chunks.map(\.ref)
        store.beginCollecting()
        defer { store.endCollecting() }
        do {
            _ = try await store.commitManifest(refs, claimedChecksum: Self.listChecksum(refs), base: base)
            Issue.record("a commit naming a collected chunk succeeded")
        } catch let error as UbiquityError {
            #expect(error.code == .notFound)
            #expect((error.underlying as? BlobMissingChunks)?.hashes == [victim])
        }
    }
}

/// Records whether garbage collection reached one of its deleting steps.
final class CommitGate: Sendable {
    private let flag = Mutex(false)
    var stepped: Bool { flag.withLock { $0 } }
    func collectorStepped() { flag.withLock { $0 = true } }
}
