// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Assets end to end through the records server: `assets/upload`, the upload URL, saving the
/// receipt in `records/modify`, download URLs on lookup, query and changes, `assets/rereference`,
/// quotas and garbage collection, on every store kind.
@Suite struct AssetsHTTPTests {
    /// Asks for one upload URL and posts `bytes` to it; returns the asset value to save.
    static func upload(_ server: ServerFixture, _ bytes: [UInt8], recordType: String = "Photo", field: String = "image",
                       recordName: String? = nil, zone: String? = nil, database: String = "private") async throws -> JSONValue {
        var token: [String: JSONValue] = ["recordType": .string(recordType), "fieldName": .string(field)]
        if let recordName { token["recordName"] = .string(recordName) }
        var body: [String: JSONValue] = ["tokens": .array([.object(token)])]
        if let zone { body["zoneID"] = ["zoneName": .string(zone)] }
        let reply = try await server.send(database, "assets/upload", .object(body), token: server.userToken)
        #expect(reply.status == 200, "\(reply.body)")
        let answered = try #require(reply.items("tokens").first)
        #expect(answered["fieldName"]?.stringValue == field)
        if let recordName { #expect(answered["recordName"]?.stringValue == recordName) } else { #expect(answered["recordName"]?.stringValue?.count == 36) }
        let url = try #require(answered["url"]?.stringValue)
        let posted = try await raw(.POST, url, body: bytes)
        #expect(posted.status == 200, "\(String(decoding: posted.body, as: UTF8.self))")
        let json = try JSONValue.parse(Data(posted.body))
        return try #require(json["singleFile"])
    }

    /// A request to an absolute URL.
    static func raw(_ method: HTTPMethod, _ url: String, body: [UInt8]? = nil) async throws -> (status: Int, body: [UInt8]) {
        var request = HTTPClientRequest(url: url)
        request.method = method
        if let body { request.body = .bytes(ByteBuffer(bytes: body)) }
        let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
        let buffer = try await response.body.collect(upTo: 64 << 20)
        return (Int(response.status.code), Array(buffer.readableBytesView))
    }

    /// Downloads an asset value's `downloadURL`.
    static func download(_ asset: JSONValue?) async throws -> (status: Int, body: [UInt8]) {
        let url = try #require(asset?["downloadURL"]?.stringValue)
        #expect(url.hasSuffix("${f}"))
        return try await raw(.GET, url.replacingOccurrences(of: "${f}", with: "photo.bin"))
    }

    static func assetField(_ value: JSONValue) -> JSONValue { .object(["value": value, "type": "ASSETID"]) }

    @Test(arguments: StoreKind.available)
    func uploadSaveLookupDownloadRoundTrip(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, assets: true)
        defer { Task { await server.stop() } }
        let bytes = AssetTestSupport.bytes(300_000, seed: 1)
        let asset = try await Self.upload(server, bytes, recordName: "p1")
        #expect(asset["fileChecksum"]?.stringValue == AssetTestSupport.checksum(bytes))
        #expect(asset["size"] == .integer(300_000))
        #expect(asset["receipt"]?.stringValue != nil)

        let saved = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(asset), "title": "Sea"])],
                                            token: server.userToken)
        let record = try #require(saved.items().first)
        #expect(record["serverErrorCode"] == nil, "\(saved.body)")
        #expect(record["fields"]?["image"]?["type"] == "ASSETID")
        #expect(record["fields"]?["image"]?["value"]?["receipt"] == nil)
        #expect(record["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue != nil)

        let looked = try await server.send("private", "records/lookup", ["records": [["recordName": "p1"]]], token: server.userToken)
        let value = looked.items().first?["fields"]?["image"]?["value"]
        #expect(value?["receipt"] == nil)
        #expect(value?["fileChecksum"] == asset["fileChecksum"])
        let fetched = try await Self.download(value)
        #expect(fetched.status == 200)
        #expect(fetched.body == bytes)

        // an asset list: each element needs its receipt, each gets a download URL
        let second = AssetTestSupport.bytes(1000, seed: 2)
        let listed = try await Self.upload(server, second, field: "pages", recordName: "p2")
        let listSave = try await server.modify([operation("create", "p2", recordType: "Photo", fields: [
            "pages": .object(["value": .array([listed]), "type": "ASSETID_LIST"])])], token: server.userToken)
        #expect(listSave.items().first?["serverErrorCode"] == nil, "\(listSave.body)")
        let listLooked = try await server.send("private", "records/lookup", ["records": [["recordName": "p2"]]], token: server.userToken)
        let element = listLooked.items().first?["fields"]?["pages"]?["value"]?[0]
        #expect(try await Self.download(element).body == second)
    }

    @Test(arguments: StoreKind.available)
    func forgedAndMisusedReceiptsAreRefusedNamingTheField(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, assets: true)
        defer { Task { await server.stop() } }
        let asset = try await Self.upload(server, AssetTestSupport.bytes(5000, seed: 3), recordName: "p1")
        guard case .object(var members) = asset else { Issue.record("no asset"); return }

        // altered receipt
        var forged = members
        let receipt = members["receipt"]?.stringValue ?? ""
        forged["receipt"] = .string(String(receipt.dropLast(2)) + (receipt.hasSuffix("AA") ? "BB" : "AA"))
        let altered = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(.object(forged))])],
                                              token: server.userToken)
        #expect(altered.items().first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(altered.items().first?["reason"]?.stringValue?.contains("fields.image") == true, "\(altered.body)")

        // a receipt for field image saved in field thumb
        let otherField = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["thumb": Self.assetField(asset)])],
                                                 token: server.userToken)
        #expect(otherField.items().first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(otherField.items().first?["reason"]?.stringValue?.contains("fields.thumb") == true, "\(otherField.body)")

        // a receipt for record p1 saved in record p2
        let otherRecord = try await server.modify([operation("create", "p2", recordType: "Photo", fields: ["image": Self.assetField(asset)])],
                                                  token: server.userToken)
        #expect(otherRecord.items().first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(otherRecord.items().first?["reason"]?.stringValue?.contains("fields.image") == true, "\(otherRecord.body)")

        // a receipt for another record type
        let otherType = try await server.modify([operation("create", "p1", recordType: "Video", fields: ["image": Self.assetField(asset)])],
                                                token: server.userToken)
        #expect(otherType.items().first?["serverErrorCode"] == "BAD_REQUEST")

        // no receipt at all
        members["receipt"] = nil
        let bare = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(.object(members))])],
                                           token: server.userToken)
        #expect(bare.items().first?["serverErrorCode"] == "BAD_REQUEST")
        #expect(bare.items().first?["reason"]?.stringValue?.contains("fields.image") == true)

        // another user's receipt
        let reply = try await server.send("private", "assets/upload", ["tokens": [["recordType": "Photo", "fieldName": "image", "recordName": "p9"]]],
                                          token: server.otherToken)
        let url = try #require(reply.items("tokens").first?["url"]?.stringValue)
        let theirs = try JSONValue.parse(Data(try await Self.raw(.POST, url, body: [1, 2, 3]).body))["singleFile"]
        let stolen = try await server.modify([operation("create", "p9", recordType: "Photo", fields: ["image": Self.assetField(try #require(theirs))])],
                                             token: server.userToken)
        #expect(stolen.items().first?["serverErrorCode"] == "BAD_REQUEST")

        // nothing was saved
        let looked = try await server.send("private", "records/lookup", ["records": [["recordName": "p1"], ["recordName": "p2"]]], token: server.userToken)
        #expect(looked.items().allSatisfy { $0["serverErrorCode"] == "NOT_FOUND" })
    }

    @Test(arguments: StoreKind.available)
    func unchangedAssetResavedWithoutReceiptAndRereference(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, assets: true)
        defer { Task { await server.stop() } }
        let bytes = AssetTestSupport.bytes(20_000, seed: 4)
        let asset = try await Self.upload(server, bytes)
        let created = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(asset), "n": 1])],
                                              token: server.userToken)
        let record = try #require(created.items().first)
        #expect(record["serverErrorCode"] == nil, "\(created.body)")

        // the fetched record sent back (downloadURL, no receipt) with another field changed
        let fetched = try #require(record["fields"]?["image"])
        let resaved = try await server.modify([operation("update", "p1", recordType: "Photo", tag: record["recordChangeTag"]?.stringValue,
                                                         fields: ["image": fetched, "n": 2])], token: server.userToken)
        #expect(resaved.items().first?["serverErrorCode"] == nil, "\(resaved.body)")
        #expect(resaved.items().first?["fields"]?["n"]?["value"] == 2)

        // rereference: a fresh receipt for the same content, saved in another record
        let reply = try await server.send("private", "assets/rereference", ["assets": [["recordName": "p1", "fieldName": "image"],
                                                                                       ["recordName": "missing", "fieldName": "image"]]],
                                          token: server.userToken)
        #expect(reply.status == 200, "\(reply.body)")
        let fresh = try #require(reply.items("assets").first)
        #expect(fresh["receipt"]?.stringValue != nil)
        #expect(fresh["fileChecksum"] == asset["fileChecksum"])
        #expect(reply.items("assets").last?["serverErrorCode"] == "NOT_FOUND")
        var value = fresh.objectValue ?? [:]
        value["recordName"] = nil
        value["fieldName"] = nil
        let copy = try await server.modify([operation("create", "p2", recordType: "Photo", fields: ["image": Self.assetField(.object(value))])],
                                           token: server.userToken)
        #expect(copy.items().first?["serverErrorCode"] == nil, "\(copy.body)")
        let looked = try await server.send("private", "records/lookup", ["records": [["recordName": "p2"]]], token: server.userToken)
        #expect(try await Self.download(looked.items().first?["fields"]?["image"]?["value"]).body == bytes)
    }

    @Test(arguments: StoreKind.available)
    func queryAndChangesCarryDownloadURLs(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, assets: true)
        defer { Task { await server.stop() } }
        let zone = try await server.send("private", "zones/modify", ["operations": [["operationType": "create", "zone": ["zoneID": ["zoneName": "Album"]]]]],
                                         token: server.userToken)
        #expect(zone.status == 200, "\(zone.body)")
        let bytes = AssetTestSupport.bytes(4000, seed: 5)
        let asset = try await Self.upload(server, bytes, recordName: "p1", zone: "Album")
        let saved = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(asset)])], zone: "Album",
                                            token: server.userToken)
        #expect(saved.items().first?["serverErrorCode"] == nil, "\(saved.body)")

        let query = try await server.send("private", "records/query", ["zoneID": ["zoneName": "Album"], "query": ["recordType": "Photo"]],
                                          token: server.userToken)
        #expect(try await Self.download(query.items().first?["fields"]?["image"]?["value"]).body == bytes)

        let changes = try await server.send("private", "changes/zone", ["zones": [["zoneID": ["zoneName": "Album"]]]], token: server.userToken)
        let changed = changes.items("zones").first?["records"]?[0]
        #expect(try await Self.download(changed?["fields"]?["image"]?["value"]).body == bytes)

        let legacy = try await server.send("private", "records/changes", ["zoneID": ["zoneName": "Album"]], token: server.userToken)
        #expect(try await Self.download(legacy.items().first?["fields"]?["image"]?["value"]).body == bytes)
    }

    @Test(arguments: StoreKind.available)
    func quotasCountRecordsAndDistinctAssets(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, configuration: RecordsServerConfiguration(privateQuotaBytes: 30_000, publicQuotaBytes: 0),
                                                   assets: true)
        defer { Task { await server.stop() } }
        let first = try await Self.upload(server, AssetTestSupport.bytes(20_000, seed: 6))
        let saved = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(first)])],
                                            token: server.userToken)
        #expect(saved.items().first?["serverErrorCode"] == nil, "\(saved.body)")

        // the same content in another record counts once
        let again = try await server.send("private", "assets/rereference", ["assets": [["recordName": "p1", "fieldName": "image"]]],
                                          token: server.userToken)
        var copy = again.items("assets").first?.objectValue ?? [:]
        copy["recordName"] = nil
        copy["fieldName"] = nil
        let shared = try await server.modify([operation("create", "p2", recordType: "Photo", fields: ["image": Self.assetField(.object(copy))])],
                                             token: server.userToken)
        #expect(shared.items().first?["serverErrorCode"] == nil, "\(shared.body)")

        // other content of 20,000 bytes does not fit: a per-item QUOTA_EXCEEDED, HTTP 200
        let second = try await Self.upload(server, AssetTestSupport.bytes(20_000, seed: 7))
        let over = try await server.modify([operation("create", "p3", recordType: "Photo", fields: ["image": Self.assetField(second)])],
                                           token: server.userToken)
        #expect(over.status == 200)
        #expect(over.items().first?["serverErrorCode"] == "QUOTA_EXCEEDED", "\(over.body)")

        // deleting is always allowed, and frees the space once no record refers to the content
        let deleted = try await server.modify([operation("forceDelete", "p1", recordType: nil), operation("forceDelete", "p2", recordType: nil)],
                                              token: server.userToken)
        #expect(deleted.items().allSatisfy { $0["deleted"] == true }, "\(deleted.body)")
        let fits = try await server.modify([operation("create", "p3", recordType: "Photo", fields: ["image": Self.assetField(second)])],
                                           token: server.userToken)
        #expect(fits.items().first?["serverErrorCode"] == nil, "\(fits.body)")

        // a database at its quota gets no upload URLs: 413 QUOTA_EXCEEDED
        let refused = try await server.send("public", "assets/upload", ["tokens": [["recordType": "Photo", "fieldName": "image"]]], token: server.userToken)
        #expect(refused.status == 413)
        #expect(refused.errorCode == "QUOTA_EXCEEDED")
    }

    @Test(arguments: StoreKind.available)
    func garbageCollectionKeepsReferencedAndYoungContent(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind, assets: true)
        defer { Task { await server.stop() } }
        let bytes = AssetTestSupport.bytes(50_000, seed: 8)
        let asset = try await Self.upload(server, bytes)
        let saved = try await server.modify([operation("create", "p1", recordType: "Photo", fields: ["image": Self.assetField(asset)])],
                                            token: server.userToken)
        let url = try #require(saved.items().first?["fields"]?["image"]?["value"]?["downloadURL"]?.stringValue)
            .replacingOccurrences(of: "${f}", with: "a.bin")

        // cut-off 0 (everything unreferenced goes): the saved content stays
        try await server.server.collectAssetGarbage(olderThan: Date().addingTimeInterval(1))
        #expect(try await Self.raw(.GET, url).body == bytes)

        // uploaded but not saved, younger than the cut-off: survives
        let pending = AssetTestSupport.bytes(3000, seed: 9)
        let unsaved = try await Self.upload(server, pending)
        try await server.server.collectAssetGarbage(olderThan: Date().addingTimeInterval(-3600))
        let assets = try #require(server.server.assets)
        #expect(try await assets.store.info(fileChecksum: unsaved["fileChecksum"]?.stringValue ?? "") != nil)

        // the record deleted: the content goes
        _ = try await server.modify([operation("forceDelete", "p1", recordType: nil)], token: server.userToken)
        try await server.server.collectAssetGarbage(olderThan: Date().addingTimeInterval(1))
        #expect(try await Self.raw(.GET, url).status == 404)
        #expect(try await assets.store.info(fileChecksum: asset["fileChecksum"]?.stringValue ?? "") == nil)
    }

    /// The periodic task runs on its own (that referenced content survives a collection is
    /// checked above, without the timer).
    @Test func thePeriodicCollectionDeletesUnreferencedContent() async throws {
        let configuration = RecordsServerConfiguration(assetGarbageCollectionInterval: 0.05, assetGarbageMinimumAge: 0.5)
        let server = try await ServerFixture.start(.sqlite, configuration: configuration, assets: true)
        defer { Task { await server.stop() } }
        let dropped = try await Self.upload(server, AssetTestSupport.bytes(2000, seed: 11))
        let assets = try #require(server.server.assets)
        var gone = false
        for _ in 0..<600 where !gone {
            gone = try await assets.store.info(fileChecksum: dropped["fileChecksum"]?.stringValue ?? "") == nil
            if !gone { try await Task.sleep(for: .milliseconds(50)) }
        }
        #expect(gone)
    }

    @Test(arguments: StoreKind.available)
    func signingKeyIsSharedAndSurvivesRestarts(kind: StoreKind) async throws {
        try await StoreFixture.withStore(kind) { store in
            let first = try await AssetService.signingKey(in: store)
            let second = try await AssetService.signingKey(in: store)
            #expect(first.withUnsafeBytes { Data($0) } == second.withUnsafeBytes { Data($0) })
        }
    }
}
