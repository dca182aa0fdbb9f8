// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// Chunk lists relative to a stored asset's (`docs/assets.md`, "Lists relative to a base"): the
/// upload's `chunks/missing` with `base` + `edits`, and the download's `?manifest=1&base=…`.
/// Real server on loopback, real store files; bytes counted, never time.
struct AssetRelativeListTests {
    /// Stores `bytes` through the routes (chunks, then a manifest) and returns its chunks.
    static func store(_ bytes: [UInt8], server: AssetTestServer) async throws -> [AssetChunkRef] {
        let token = AssetTestServer.token(of: server.uploadURL())
        let chunks = try await AssetManifestVerificationTests.sendChunks(bytes, server: server, token: token)
        let commit = try await server.post("/assets/1/manifest", json: .object(["token": .string(token)]))
        #expect(commit.status == 200 && commit.singleFile?.fileChecksum == AssetTestSupport.checksum(bytes))
        return chunks
    }

    /// The hashes a `chunks/missing` answer names.
    static func missing(_ reply: AssetTestServer.Reply) -> Set<String> {
        Set(reply.json.objectValue?["missing"]?.arrayValue?.compactMap(\.stringValue) ?? [])
    }

    /// Sends the chunks of `chunks` that `missing` names, for the upload `token`.
    static func send(_ chunks: [(ref: AssetChunkRef, bytes: [UInt8])], missing: Set<String>, token: String, server: AssetTestServer) async throws {
        for chunk in chunks where missing.contains(chunk.ref.hash) {
            #expect(try await server.send(.PUT, "\(server.url)/assets/1/chunks/\(chunk.ref.hash)?token=\(token)", body: chunk.bytes).status == 200)
        }
    }

    /// `bytes` with one byte changed in the middle.
    static func edited(_ bytes: [UInt8]) -> [UInt8] {
        var out = bytes
        out[bytes.count / 2] ^= 0x5A
        return out
    }

    @Test("an upload list relative to the stored previous version: a few hundred bytes up, only the changed chunk missing, the right asset committed")
    func relativeUpload() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let old = AssetTestSupport.bytes(8 << 20, seed: 91)
        let oldChunks = try await Self.store(old, server: server)
        let new = Self.edited(old)
        let newChunks = AssetTestSupport.chunks(new)
        let refs = newChunks.map(\.ref)
        let delta = AssetChunkListDelta.make(base: oldChunks, new: refs)
        #expect(delta.literalCount <= 2)
        let token = AssetTestServer.token(of: server.uploadURL())
        let body: JSONValue = .object([
            "token": .string(token), "fileChecksum": .string(AssetTestSupport.checksum(new)), "size": .integer(Int64(new.count)),
            "base": .string(AssetTestSupport.checksum(old)), "edits": delta.json(), "listChecksum": .string(AssetChunkListDelta.listChecksum(refs)),
        ])
        #expect(body.serialized().count < 1024)
        let question = try await server.post("/assets/1/chunks/missing", json: body)
        #expect(question.status == 200)
        let missing = Self.missing(question)
        #expect(!missing.isEmpty && missing.count <= delta.literalCount)
        try await Self.send(newChunks, missing: missing, token: token, server: server)
        // the list was remembered for the token: commit with the checksum alone
        let commit = try await server.post("/assets/1/manifest", json: .object([
            "token": .string(token), "fileChecksum": .string(AssetTestSupport.checksum(new)), "size": .integer(Int64(new.count)),
        ]))
        #expect(commit.status == 200 && commit.singleFile?.fileChecksum == AssetTestSupport.checksum(new))
        #expect(try await server.store.chunkList(fileChecksum: AssetTestSupport.checksum(new)) == refs)
        await server.store.waitForVerifications()
        #expect(server.store.verificationFailures == 0)
        #expect(try await server.store.readAll(fileChecksum: AssetTestSupport.checksum(new)) == new)
    }

    @Test("a base chunk gone between the relative question and the commit: the commit answers 404 naming it; sent, the commit succeeds")
    func baseChunkGone() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let old = AssetTestSupport.bytes(4 << 20, seed: 94)
        let oldChunks = try await Self.store(old, server: server)
        let new = Self.edited(old)
        let newChunks = AssetTestSupport.chunks(new)
        let refs = newChunks.map(\.ref)
        let token = AssetTestServer.token(of: server.uploadURL())
        let question = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(token), "base": .string(AssetTestSupport.checksum(old)),
            "edits": AssetChunkListDelta.make(base: oldChunks, new: refs).json(), "listChecksum": .string(AssetChunkListDelta.listChecksum(refs)),
        ]))
        let missing = Self.missing(question)
        try await Self.send(newChunks, missing: missing, token: token, server: server)
        // a shared chunk disappears (as if collected) before the commit
        let gone = try #require(refs.first { !missing.contains($0.hash) })
        let hex = gone.hash
        let path = server.store.chunkPath(hex)
        #expect(unlink(path) == 0, "\(path)")
        let commit = try await server.post("/assets/1/manifest", json: .object(["token": .string(token)]))
        #expect(commit.status == 404 && commit.json.objectValue?["missing"]?.arrayValue?.compactMap(\.stringValue) == [hex])
        let bytes = try #require(newChunks.first { $0.ref.hash == hex }).bytes
        #expect(try await server.send(.PUT, "\(server.url)/assets/1/chunks/\(hex)?token=\(token)", body: bytes).status == 200)
        let again = try await server.post("/assets/1/manifest", json: .object(["token": .string(token)]))
        #expect(again.status == 200 && again.singleFile?.fileChecksum == AssetTestSupport.checksum(new))
        #expect(try await server.store.readAll(fileChecksum: AssetTestSupport.checksum(new)) == new)
    }

    @Test("an unknown base is a 404 naming it (unknownBase), a list that does not rebuild is a 409, bad edits a 400; the whole list still works")
    func unknownOrWrongBase() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let old = AssetTestSupport.bytes(4 << 20, seed: 92)
        let oldChunks = try await Self.store(old, server: server)
        let new = Self.edited(old)
        let refs = AssetTestSupport.chunks(new).map(\.ref)
        let delta = AssetChunkListDelta.make(base: oldChunks, new: refs)
        let token = AssetTestServer.token(of: server.uploadURL())
        func ask(base: String, edits: JSONValue, listChecksum: String) async throws -> AssetTestServer.Reply {
            try await server.post("/assets/1/chunks/missing", json: .object([
                "token": .string(token), "fileChecksum": .string(AssetTestSupport.checksum(new)), "size": .integer(Int64(new.count)),
                "base": .string(base), "edits": edits, "listChecksum": .string(listChecksum),
            ]))
        }
        let unknown = try await ask(base: AssetTestSupport.checksum([1, 2, 3]), edits: delta.json(), listChecksum: AssetChunkListDelta.listChecksum(refs))
        #expect(unknown.status == 404 && unknown.errorCode == "NOT_FOUND")
        #expect(unknown.json.objectValue?["unknownBase"]?.boolValue == true)
        #expect(unknown.json.objectValue?["reason"]?.stringValue?.contains("base") == true)
        let mismatch = try await ask(base: AssetTestSupport.checksum(old), edits: delta.json(), listChecksum: AssetChunkListDelta.listChecksum(oldChunks))
        #expect(mismatch.status == 409 && mismatch.errorCode == "CONFLICT")
        let past = AssetChunkListDelta(pieces: [.base(0..<oldChunks.count + 5)])
        let bad = try await ask(base: AssetTestSupport.checksum(old), edits: past.json(), listChecksum: AssetChunkListDelta.listChecksum(refs))
        #expect(bad.status == 400 && bad.json.objectValue?["reason"]?.stringValue?.contains("edits") == true)
        // the whole list, as before
        let whole = try await server.post("/assets/1/chunks/missing", json: .object([
            "token": .string(token), "packedChunks": .string(AssetChunkRef.packed(refs)),
        ]))
        #expect(whole.status == 200 && whole.json.objectValue?["missing"]?.arrayValue?.isEmpty == false)
    }

    @Test("a download list relative to the version the client holds: small, rebuilt exactly; an unknown base gets the whole list")
    func relativeDownloadList() async throws {
        let server = try await AssetTestServer.start()
        defer { server.shutdown() }
        let old = AssetTestSupport.bytes(8 << 20, seed: 93)
        let oldChunks = try await Self.store(old, server: server)
        let new = Self.edited(old)
        let newChunks = try await Self.store(new, server: server)
        let template = server.service.downloadURL(fileChecksum: AssetTestSupport.checksum(new), size: Int64(new.count), container: "c", baseURL: server.url)
        let url = template.replacingOccurrences(of: "${f}", with: "x")
        let oldList = AssetChunkList(fileChecksum: AssetTestSupport.checksum(old), size: Int64(old.count), chunking: .default, hashBytes: 12,
                                     chunks: oldChunks)
        let hex = Hex.encode(Data(base64Encoded: AssetTestSupport.checksum(old))!)

        let whole = try await server.send(.GET, url + "?manifest=1&hashBytes=12")
        let relative = try await server.send(.GET, url + "?manifest=1&hashBytes=12&base=\(hex)")
        #expect(relative.status == 200 && relative.json.objectValue?["edits"] != nil)
        #expect(relative.body.count * 4 < whole.body.count, "\(relative.body.count) vs \(whole.body.count)")
        let rebuilt = try AssetChunkList(json: relative.json, base: oldList)
        #expect(rebuilt == AssetChunkList(fileChecksum: AssetTestSupport.checksum(new), size: Int64(new.count), chunking: .default, hashBytes: 12,
                                          chunks: newChunks))

        let unknownHex = Hex.encode(Data(base64Encoded: AssetTestSupport.checksum([9]))!)
        let fallback = try await server.send(.GET, url + "?manifest=1&hashBytes=12&base=\(unknownHex)")
        #expect(fallback.status == 200 && fallback.json.objectValue?["packedChunks"] != nil && fallback.json.objectValue?["base"] == nil)
        let malformed = try await server.send(.GET, url + "?manifest=1&base=xyz")
        #expect(malformed.status == 400)
    }
}
