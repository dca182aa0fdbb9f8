// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Authentication and access rules, as CloudKit Web Services documents them.
@Suite struct AuthHTTPTests {
    @Test(arguments: StoreKind.available)
    func tokensAndTheirErrors(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        // no API token → 401; a wrong one → 401; one of another container → 401
        let none = try await server.send(.GET, "public", "zones/list", apiToken: "")
        #expect(none.status == 401)
        #expect(none.errorCode == "AUTHENTICATION_FAILED")
        #expect(try await server.send(.GET, "public", "zones/list", apiToken: "forged").status == 401)
        let elsewhere = try await server.send(.GET, "public", "zones/list", rawPath: server.path("public", "zones/list", container: "iCloud.other"))
        #expect(elsewhere.errorCode == "AUTHENTICATION_FAILED")
        // API token alone: public reads fine, users/current and private → 421 with a sign-in redirect
        #expect(try await server.send(.GET, "public", "zones/list").status == 200)
        let current = try await server.send(.GET, "public", "users/current")
        #expect(current.status == 421)
        #expect(current.errorCode == "AUTHENTICATION_REQUIRED")
        let redirect = try #require(current.json["redirectURL"]?.stringValue)
        #expect(redirect.hasPrefix(server.url + "/auth/signin?"))
        // every 421 says where to sign in, whichever check refused the caller
        let privateQuery = try await server.send("private", "records/query", ["query": ["recordType": "Note"]])
        #expect(privateQuery.status == 421)
        #expect(privateQuery.json["redirectURL"]?.stringValue?.hasPrefix(server.url + "/auth/signin?") == true)
        // anonymous writes to the public database need a user
        let anonymousWrite = try await server.modify([operation("create", "x")], database: "public", token: nil)
        #expect(anonymousWrite.status == 421)
        #expect(anonymousWrite.json["redirectURL"]?.stringValue?.hasPrefix(server.url + "/auth/signin?") == true)
        // a forged web-auth token → 421 (sign in again)
        let forged = try await server.send(.GET, "public", "users/current", token: "forged-token")
        #expect(forged.status == 421)
        // a user: users/current and users/caller, a rotated token in the header that works too
        let me = try await server.send(.GET, "public", "users/current", token: server.userToken)
        let name = try #require(me.json["userRecordName"]?.stringValue)
        #expect(name.hasPrefix("_") && name.count == 33)
        let caller = try await server.send(.GET, "public", "users/caller", token: server.userToken)
        #expect(caller.items("users").first?["userRecordName"]?.stringValue == name)
        let rotated = try #require(me.headers["x-apple-cloudkit-web-auth-token"])
        let again = try await server.send(.GET, "public", "users/current", token: rotated)
        #expect(again.json["userRecordName"]?.stringValue == name)
        #expect(try await server.send(.GET, "public", "users/current", token: server.userToken).status == 200)
        // the other user has another record name; user names differ per container by design
        let other = try await server.send(.GET, "public", "users/current", token: server.otherToken)
        #expect(other.json["userRecordName"]?.stringValue != name)
    }

    @Test(arguments: StoreKind.available)
    func privateDatabasesArePrivateAndPublicRecordsBelongToTheirCreator(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        _ = try await server.modify([operation("create", "secret", fields: ["t": "mine"])], token: server.userToken)
        let theirs = try await server.send("private", "records/lookup", ["records": [["recordName": "secret"]]], token: server.otherToken)
        #expect(theirs.items().first?["serverErrorCode"] == "NOT_FOUND")
        let me = try await server.send(.GET, "public", "users/current", token: server.userToken)
        let owner = try #require(me.json["userRecordName"]?.stringValue)
        let reach = try await server.send("private", "records/lookup", ["records": [["recordName": "secret"]], "zoneID": ["zoneName": "_defaultZone", "ownerRecordName": JSONValue.string(owner)]], token: server.otherToken)
        #expect(reach.errorCode == "ACCESS_DENIED")
        #expect(reach.status == 403)
        // public: readable by all, writable by its creator only
        let made = try await server.modify([operation("create", "post", fields: ["t": "hello"])], database: "public", token: server.userToken)
        let tag = made.items().first?["recordChangeTag"]?.stringValue
        #expect(try await server.send("public", "records/lookup", ["records": [["recordName": "post"]]]).items().first?["fields"]?["t"]?["value"] == "hello")
        let hijack = try await server.modify([operation("update", "post", recordType: nil, tag: tag, fields: ["t": "pwned"])], database: "public", token: server.otherToken)
        #expect(hijack.items().first?["serverErrorCode"] == "ACCESS_DENIED")
        let delete = try await server.modify([operation("forceDelete", "post", recordType: nil)], database: "public", token: server.otherToken)
        #expect(delete.items().first?["serverErrorCode"] == "ACCESS_DENIED")
        // the shared database has nothing shared yet
        let shared = try await server.send("shared", "records/query", ["query": ["recordType": "Note"], "zoneID": ["zoneName": "Z", "ownerRecordName": JSONValue.string(owner)]], token: server.otherToken)
        #expect(shared.errorCode == "ZONE_NOT_FOUND")
    }

    @Test(arguments: StoreKind.available)
    func serverToServerKeysSignRequestsForThePublicDatabase(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let key = P256.Signing.PrivateKey()
        let keyID = try await RecordsAdmin(store: server.store).addKey(container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
        func signed(_ database: String, _ operation: String, _ body: JSONValue, key signer: P256.Signing.PrivateKey = key,
                    date: Date = Date(), id: String? = nil) async throws -> ServerFixture.Reply {
            let bytes = Array(body.serialized())
            let path = server.path(database, operation)
            let signature = try ServerToServerSignature.sign(privateKey: signer, date: date, body: bytes, path: path)
            return try await server.send(database, operation, rawBody: bytes, apiToken: "", headers: [
                (CloudKitAuthHeaders.keyID, id ?? keyID), (CloudKitAuthHeaders.iso8601Date, signature.date),
                (CloudKitAuthHeaders.signatureV1, signature.signature),
            ], contentType: "application/json")
        }
        let saved = try await signed("public", "records/modify", ["operations": [operation("create", "from-server", fields: ["v": 1])]])
        #expect(saved.status == 200)
        #expect(saved.items().first?["recordChangeTag"] != nil)
        let queried = try await signed("public", "records/query", ["query": ["recordType": "Note"]])
        #expect(queried.items().count == 1)
        #expect(try await signed("private", "records/query", ["query": ["recordType": "Note"]]).status == 403)
        let wrongKey = try await signed("public", "records/query", ["query": ["recordType": "Note"]], key: P256.Signing.PrivateKey())
        #expect(wrongKey.status == 401)
        #expect(wrongKey.errorCode == "AUTHENTICATION_FAILED")
        let stale = try await signed("public", "records/query", ["query": ["recordType": "Note"]], date: Date().addingTimeInterval(-3600))
        #expect(stale.status == 401)
        #expect(try await signed("public", "records/query", ["query": ["recordType": "Note"]], id: "unknown").status == 401)
        // mixing an API token with signature headers is refused
        let mixed = try await server.send("public", "records/query", ["query": ["recordType": "Note"]], headers: [(CloudKitAuthHeaders.keyID, keyID)])
        #expect(mixed.status == 400)
    }

    /// API tokens have Apple's shape (64 lowercase hex digits: third-party clients check it
    /// before sending anything); a token of the earlier shape (43 base64url characters) keeps
    /// working.
    @Test(arguments: StoreKind.available)
    func apiTokensHaveApplesShapeAndEarlierOnesStillWork(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        #expect(server.apiToken.utf8.count == 64)
        #expect(server.apiToken.allSatisfy { "0123456789abcdef".contains($0) })
        #expect(try await server.send(.GET, "public", "zones/list").status == 200)
        let earlier = SecretToken.generate()  // the shape API tokens had before
        #expect(earlier.utf8.count == 43)
        try await server.store.write { tx in
            try await tx.addAPIToken(container: server.container, digest: SecretToken.digest(earlier), createdAt: 1)
        }
        #expect(try await server.send(.GET, "public", "zones/list", apiToken: earlier).status == 200)
        #expect(try await server.send("private", "records/query", ["query": ["recordType": "Note"]], token: server.userToken,
                                      apiToken: earlier).status == 200)
    }

    @Test(arguments: StoreKind.available)
    func signInPageIssuesAWebAuthTokenAndCORSIsOpen(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let current = try await server.send(.GET, "public", "users/current")
        let redirect = try #require(current.json["redirectURL"]?.stringValue)
        let page = try await server.send(.GET, "", "", rawPath: String(redirect.dropFirst(server.url.count)).components(separatedBy: "?").first!)
        #expect(page.status == 200)
        #expect(page.body.contains("<form"))
        let form = "container=\(server.container)&apiToken=\(ServerFixture.encode(server.apiToken))&userName=mei&password=correct+horse"
        let posted = try await server.send(.POST, "", "", rawBody: Array(form.utf8), apiToken: "", rawPath: "/auth/signin", contentType: "application/x-www-form-urlencoded")
        #expect(posted.status == 200)
        #expect(posted.body.contains("postMessage"))
        let wrong = try await server.send(.POST, "", "", rawBody: Array("apiToken=\(ServerFixture.encode(server.apiToken))&userName=mei&password=nope".utf8),
                                          apiToken: "", rawPath: "/auth/signin", contentType: "application/x-www-form-urlencoded")
        #expect(wrong.status == 401)
        // CORS preflight for a browser client
        let preflight = try await server.send(.OPTIONS, "public", "records/query", headers: [("Origin", "https://app.example.org"), ("Access-Control-Request-Method", "POST")])
        #expect(preflight.headers["access-control-allow-origin"] == "https://app.example.org")
        let health = try await server.send(.GET, "", "", apiToken: "", rawPath: "/healthz")
        #expect(health.body == "ok\n")
    }
}
