// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// Issue 24, finding 1: knowing a file's checksum (or its chunks' hashes) is not enough to get
/// it. Another user's upload is never answered from content it has not shown: not by checksum,
/// not by chunk list, not relative to it as a base; and nothing in the answers tells whether the
/// content is stored. The owner still deduplicates against her own content.
@Suite struct UploadDeduplicationHTTPTests {
    static func uploadToken(_ server: ServerFixture, token: String) async throws -> String {
        let reply = try await server.send("private", "assets/upload", ["tokens": [["recordType": "Photo", "fieldName": "image"]]], token: token)
        let url = try #require(reply.items("tokens").first?["url"]?.stringValue, "\(reply.body)")
        return String(url.split(separator: "/").last ?? "")
    }

    static func post(_ server: ServerFixture, _ path: String, _ body: JSONValue) async throws -> (status: Int, json: JSONValue) {
        let reply = try await AssetsHTTPTests.raw(.POST, server.url + "/assets/1/" + path, body: Array(body.serialized()))
        return (reply.status, (try? JSONValue.parse(Data(reply.body))) ?? .null)
    }

    @Test(arguments: StoreKind.available)
    func knowingAChecksumIsNotEnough(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, assets: true)
        defer { Task { await server.stop() } }
        // Mei's private file, saved in her record
        let secret = AssetTestSupport.bytes(600_000, seed: 240)
        let asset = try await AssetsHTTPTests.upload(server, secret, recordName: "p1")
        let saved = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": AssetsHTTPTests.assetField(asset)])],
                                            token: server.userToken)
        #expect(saved.items().first?["serverErrorCode"] == nil, "\(saved.body)")
        let checksum = AssetTestSupport.checksum(secret)
        let chunks = AssetTestSupport.chunks(secret).map(\.ref)
        let size = JSONValue.integer(Int64(secret.count))

        // Ravi knows the checksum and the chunk hashes, nothing more
        let ravi = try await Self.uploadToken(server, token: server.otherToken)
        let byChecksum = try await Self.post(server, "chunks/missing", ["token": .string(ravi), "fileChecksum": .string(checksum), "size": size])
        #expect(byChecksum.status == 404, "\(byChecksum.json)")
        #expect(byChecksum.json["singleFile"] == nil && !"\(byChecksum.json)".contains("receipt"))
        let byList = try await Self.post(server, "chunks/missing", ["token": .string(ravi), "packedChunks": .string(AssetChunkRef.packed(chunks))])
        #expect(byList.status == 200)
        #expect(Set(byList.json["missing"]?.arrayValue?.compactMap(\.stringValue) ?? []) == Set(chunks.map(\.hash)),
                "every chunk he has not sent is missing, stored or not")
        let commitPending = try await Self.post(server, "manifest", ["token": .string(ravi)])
        #expect(commitPending.status == 404 && commitPending.json["singleFile"] == nil, "\(commitPending.json)")
        let commitListed = try await Self.post(server, "manifest", ["token": .string(ravi), "packedChunks": .string(AssetChunkRef.packed(chunks)),
                                                                    "fileChecksum": .string(checksum), "size": size])
        #expect(commitListed.status == 404 && commitListed.json["singleFile"] == nil, "\(commitListed.json)")
        let relative = try await Self.post(server, "chunks/missing", ["token": .string(ravi), "base": .string(checksum),
                                                                      "edits": AssetChunkListDelta.make(base: chunks, new: chunks).json()])
        #expect(relative.status == 404 && relative.json["unknownBase"] == true, "answered as a base that is not stored: \(relative.json)")

        // the same answers as for content that is not stored at all
        let absent = AssetTestSupport.bytes(600_000, seed: 241)
        let none = try await Self.post(server, "chunks/missing", ["token": .string(ravi), "fileChecksum": .string(AssetTestSupport.checksum(absent)),
                                                                  "size": .integer(Int64(absent.count))])
        #expect(none.status == byChecksum.status)

        // sending the bytes himself works (stored once, silently)
        let own = try await AssetsHTTPTests.raw(.POST, server.url + "/assets/1/upload/" + ravi, body: secret)
        #expect(own.status == 200)

        // Mei deduplicates against her own content
        let mei = try await Self.uploadToken(server, token: server.userToken)
        let again = try await Self.post(server, "chunks/missing", ["token": .string(mei), "fileChecksum": .string(checksum), "size": size])
        #expect(again.status == 200 && again.json["singleFile"]?["fileChecksum"]?.stringValue == checksum, "\(again.json)")
    }
}
