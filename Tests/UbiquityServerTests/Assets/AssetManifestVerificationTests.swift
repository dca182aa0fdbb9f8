// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// A manifest committed with the uploader's claimed checksum (`FileBlobStore+Verification.swift`):
/// answered without reading the chunks back, checked in the background, never a deduplication
/// target before that, and deleted (and counted) when the claim is false. Real server on
/// loopback, real store files; bytes counted, never time.
struct AssetManifestVerificationTests {
    /// Uploads the chunks of `bytes` the server lacks, through the routes.
    static func sendChunks(_ bytes: [UInt8], server: AssetTestServer, token: String) async throws -> [AssetChunkRef] {
        let chunks = AssetTestSupport.chunks(bytes)
        let question = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(token), "packedChunks": .string(AssetChunkRef.packed(chunks.map(\.ref))),
        ]))
        let missing = Set(question.json.objectValue?["missing"]?.arrayValue?.compactMap(\.stringValue) ?? [])
        for chunk in chunks where missing.contains(chunk.ref.hash) {
            let put = try await server.send(.PUT, "\(server.url)/assets/1/chunks/\(chunk.ref.hash)?token=\(token)", body: chunk.bytes)
            #expect(put.status == 200)
        }
        return chunks.map(\.ref)
    }

    @Test("a true claim: committed without reading the chunks back, then verified in the background, then a dedup target")
    func trueClaim() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let bytes = AssetTestSupport.bytes(3 << 20, seed: 71)
        let checksum = AssetTestSupport.checksum(bytes)
        let token = AssetTestServer.token(of: server.uploadURL())
        _ = try await Self.sendChunks(bytes, server: server, token: token)
        let commit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(checksum), "size": .integer(Int64(bytes.count)),
        ]))
        #expect(commit.status == 200 && commit.singleFile?.fileChecksum == checksum)
        #expect(server.store.commitReadBytes == 0)  // the request did not read the chunks back
        // readable at once (the uploader's own records may refer to it)
        #expect(try await server.store.readAll(fileChecksum: checksum) == bytes)
        await server.store.waitForVerifications()
        #expect(server.store.verificationReadBytes == Int64(bytes.count))
        #expect(server.store.verificationFailures == 0)
        #expect(try await server.store.info(fileChecksum: checksum)?.verified == true)
        #expect(AssetTestSupport.fileCount(server.folder, "verifying") == 0)
        // now a deduplication target
        let again = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(AssetTestServer.token(of: server.uploadURL())), "fileChecksum": .string(checksum), "size": .integer(Int64(bytes.count)),
        ]))
        #expect(again.status == 200 && again.singleFile?.fileChecksum == checksum)
    }

    @Test("a false claim never becomes a dedup target, is deleted and reported, and honest content of that checksum is stored as itself")
    func falseClaim() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let honest = AssetTestSupport.bytes(2 << 20, seed: 72)
        let poison = AssetTestSupport.bytes(2 << 20, seed: 73)
        let claimed = AssetTestSupport.checksum(honest)
        let token = AssetTestServer.token(of: server.uploadURL())
        _ = try await Self.sendChunks(poison, server: server, token: token)
        let commit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(claimed), "size": .integer(Int64(poison.count)),
        ]))
        #expect(commit.status == 200)
        // unverified until its check (which may already have deleted it)
        let stored = try await server.store.info(fileChecksum: claimed)
        #expect(stored == nil || stored?.verified == false)
        // another uploader asking about the honest content is not pointed at it
        let asked = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(AssetTestServer.token(of: server.uploadURL())), "fileChecksum": .string(claimed), "size": .integer(Int64(honest.count)),
        ]))
        #expect(asked.status == 404 && asked.singleFile == nil)
        await server.store.waitForVerifications()
        #expect(server.store.verificationFailures == 1)
        #expect(try await server.store.info(fileChecksum: claimed) == nil)  // deleted
        #expect(AssetTestSupport.fileCount(server.folder, "verifying") == 0)

        // the honest content, uploaded plainly, is stored as itself
        #expect(try await server.send(.POST, server.uploadURL(), body: honest).status == 200)
        #expect(try await server.store.readAll(fileChecksum: claimed) == honest)
    }

    @Test("a verified upload replaces a false claim still being checked; another list claiming the same checksum is read through at once")
    func replacedBeforeTheCheck() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let honest = AssetTestSupport.bytes(1 << 20, seed: 74)
        let poison = AssetTestSupport.bytes(1 << 20, seed: 75)
        let claimed = AssetTestSupport.checksum(honest)
        for chunk in AssetTestSupport.chunks(poison) + AssetTestSupport.chunks(honest) {
            try await store.putChunk(hash: chunk.ref.hash, bytes: .init(bytes: chunk.bytes))
        }
        // the false claim as it stands while its check has not run yet
        let poisoned = BlobManifest(fileChecksum: claimed, size: Int64(poison.count), chunks: AssetTestSupport.chunks(poison).map(\.ref), verified: false)
        try store.commit(poisoned)
        #expect(try await store.info(fileChecksum: claimed)?.verified == false)
        // the honest list claiming the same checksum: read through now, and it wins
        let honestInfo = try await store.commitManifest(AssetTestSupport.chunks(honest).map(\.ref), claimedChecksum: claimed)
        #expect(honestInfo.verified && honestInfo.fileChecksum == claimed)
        #expect(store.commitReadBytes == Int64(honest.count))
        // the check of the false claim then finds nothing left to check
        store.scheduleVerification(try #require(FileBlobStore.manifestKey(claimed)))
        await store.waitForVerifications()
        #expect(store.verificationFailures == 0)
        #expect(try await store.readAll(fileChecksum: claimed) == honest)
        #expect(try await store.info(fileChecksum: claimed)?.verified == true)

        // a plain (verified) upload replaces an unverified manifest too
        let other = AssetTestSupport.bytes(1 << 20, seed: 78)
        let otherChecksum = AssetTestSupport.checksum(other)
        try store.commit(BlobManifest(fileChecksum: otherChecksum, size: Int64(poison.count), chunks: AssetTestSupport.chunks(poison).map(\.ref),
                                      verified: false))
        let writer = try await store.makeWriter()
        try await writer.append(.init(bytes: other))
        #expect(try await writer.finish().verified)
        #expect(try await store.readAll(fileChecksum: otherChecksum) == other)
    }

    @Test("a claim left unverified by a stopped server is checked when the store opens again")
    func resumedAfterRestart() async throws {
        let (store, folder) = try AssetTestSupport.makeStore()
        defer { try? FileManager.default.removeItem(at: folder) }
        let bytes = AssetTestSupport.bytes(1 << 20, seed: 76)
        let checksum = AssetTestSupport.checksum(bytes)
        for chunk in AssetTestSupport.chunks(bytes) { try await store.putChunk(hash: chunk.ref.hash, bytes: .init(bytes: chunk.bytes)) }
        _ = try await store.commitManifest(AssetTestSupport.chunks(bytes).map(\.ref), claimedChecksum: checksum)
        await store.waitForVerifications()
        // as a crash before the check would leave it: the manifest unverified, its marker present
        let path = try #require(store.manifestPath(checksum))
        var manifest = try #require(try store.loadManifest(checksum))
        manifest.verified = false
        try store.writeManifest(manifest, at: path)
        _ = FileManager.default.createFile(atPath: folder.path + "/verifying/" + (FileBlobStore.manifestKey(checksum) ?? ""), contents: nil)
        #expect(try await store.info(fileChecksum: checksum)?.verified == false)

        let reopened = try FileBlobStore(directory: folder, configuration: store.configuration, logger: AssetTestSupport.logger)
        await reopened.waitForVerifications()
        #expect(try await reopened.info(fileChecksum: checksum)?.verified == true)
        #expect(reopened.verificationReadBytes == Int64(bytes.count))
        #expect(AssetTestSupport.fileCount(folder, "verifying") == 0)
    }

    @Test("bad claims are clear errors")
    func badClaims() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let bytes = AssetTestSupport.bytes(1 << 20, seed: 77)
        let token = AssetTestServer.token(of: server.uploadURL())
        _ = try await Self.sendChunks(bytes, server: server, token: token)
        let notAChecksum = try await server.post("/assets/1/manifest", json: .object(["token": .string(token), "fileChecksum": .string("abc")]))
        #expect(notAChecksum.status == 400)
        let wrongSize = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(AssetTestSupport.checksum(bytes)), "size": .integer(5),
        ]))
        #expect(wrongSize.status == 400)
        #expect(String(decoding: wrongSize.body, as: UTF8.self).contains("size"))
    }
}
