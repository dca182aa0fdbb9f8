// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// Issue 24, finding 4: a request is authenticated before its body is read, so a bad token
/// answers at once with nothing buffered, and request bodies held in memory are bounded
/// server-wide. Raw connections announce large bodies and send only a little of them: the
/// answers must come before the rest is sent.
@Suite struct RequestBodyLimitsHTTPTests {
    static let announced = 32 << 20  // the records API's limit: what the review's attack sent

    func head(_ server: ServerFixture, _ query: String, length: Int?, headers: [String] = [], database: String = "public") -> String {
        var text = "POST \(server.path(database, "records/query"))\(query) HTTP/1.1\r\nHost: localhost\r\nContent-Type: text/plain\r\n"
        if let length { text += "Content-Length: \(length)\r\n" } else { text += "Transfer-Encoding: chunked\r\n" }
        for header in headers { text += header + "\r\n" }
        return text + "\r\n"
    }

    @Test("a bogus API token is refused before the body is read, and the connection closes")
    func bogusTokenRefusedUnread() async throws {
        let server = try await ServerFixture.start(.sqlite)
        defer { Task { await server.stop() } }
        let connection = try RawConnection.to(server.url)
        try connection.send(head(server, "?ckAPIToken=bogus", length: Self.announced))
        try connection.send([UInt8](repeating: 0x20, count: 64 << 10))  // 64 KiB of the 32 MiB announced
        let answer = try #require(try await connection.answer())
        #expect(answer.status == 401)
        #expect(answer.json["serverErrorCode"]?.stringValue == "AUTHENTICATION_FAILED")
        #expect(answer.headers["connection"] == "close")
        // the rest of the body is not waited for: the server closes the connection
        #expect(await connection.closedByServer())

        // a bogus web-auth token (421, with the sign-in page) and an unknown device token alike
        let web = try RawConnection.to(server.url)
        try web.send(head(server, "?ckAPIToken=\(ServerFixture.encode(server.apiToken))&ckWebAuthToken=bogus", length: Self.announced, database: "private"))
        let refused = try #require(try await web.answer())
        #expect(refused.status == 421)
        #expect(refused.headers["connection"] == "close")
        #expect(await web.closedByServer())

        // the server goes on serving, and a good token with a small body works as before
        let fine = try await server.send("public", "records/query", ["query": ["recordType": "Note"]])
        #expect(fine.status == 200)
    }

    @Test("a server-to-server request with an unknown key or a stale date is refused before its body; a known key's body is capped")
    func signatureRefusedUnreadWhereItCanBe() async throws {
        let server = try await ServerFixture.start(.sqlite)
        defer { Task { await server.stop() } }
        let now = ServerToServerSignature.formatDate(Date())
        let unknown = try RawConnection.to(server.url)
        try unknown.send(head(server, "", length: Self.announced, headers: [
            "\(CloudKitAuthHeaders.keyID): no-such-key", "\(CloudKitAuthHeaders.iso8601Date): \(now)", "\(CloudKitAuthHeaders.signatureV1): AAAA",
        ]))
        let answer = try #require(try await unknown.answer())
        #expect(answer.status == 401)
        #expect(await unknown.closedByServer())

        let key = P256.Signing.PrivateKey()
        let keyID = try await RecordsAdmin(store: server.store).addKey(container: server.container, publicKeyPEM: key.publicKey.pemRepresentation)
        let stale = try RawConnection.to(server.url)
        try stale.send(head(server, "", length: Self.announced, headers: [
            "\(CloudKitAuthHeaders.keyID): \(keyID)", "\(CloudKitAuthHeaders.iso8601Date): \(ServerToServerSignature.formatDate(Date().addingTimeInterval(-3600)))",
            "\(CloudKitAuthHeaders.signatureV1): AAAA",
        ]))
        #expect(try #require(try await stale.answer()).status == 401)
        // a registered key with a current date: the signature covers the body, which is read
        // (up to the 32 MiB cap) before it is checked; more than the cap is refused unread
        let large = try RawConnection.to(server.url)
        try large.send(head(server, "", length: Self.announced + 1, headers: [
            "\(CloudKitAuthHeaders.keyID): \(keyID)", "\(CloudKitAuthHeaders.iso8601Date): \(now)", "\(CloudKitAuthHeaders.signatureV1): AAAA",
        ]))
        let capped = try #require(try await large.answer())
        #expect(capped.status == 400)
        #expect(capped.json["reason"]?.stringValue?.hasPrefix("limit exceeded") == true)
    }

    @Test("bodies in memory at once are bounded: over the budget is 503 TRY_AGAIN_LATER, unread; the budget frees when a request ends")
    func bodyBudgetRefusesWhenExceeded() async throws {
        // the sum of bodies held at once (the budget's own accounting, no timing involved)
        let counted = RequestBodyBudget(limit: 100_000)
        #expect(counted.reserve(80_000))
        #expect(!counted.reserve(30_000))
        #expect(counted.bytesInFlight == 80_000)
        counted.release(80_000)
        #expect(counted.reserve(30_000))
        counted.release(30_000)
        #expect(counted.bytesInFlight == 0)

        // a real server with a budget smaller than one announced body: refused before it is read
        let budget = 20_000
        let server = try await ServerFixture.start(.sqlite, configuration: RecordsServerConfiguration(maximumBodyBytesInFlight: budget))
        defer { Task { await server.stop() } }
        let token = "?ckAPIToken=\(ServerFixture.encode(server.apiToken))"
        let query = Array(#"{"query":{"recordType":"Note"}}"#.utf8)
        let over = try RawConnection.to(server.url)
        try over.send(head(server, token, length: 30_000))
        let refused = try #require(try await over.answer())
        #expect(refused.status == 503)
        #expect(refused.json["serverErrorCode"]?.stringValue == "TRY_AGAIN_LATER")
        #expect(refused.json["retryAfter"] == .integer(1))
        #expect(refused.headers["retry-after"] == "1")
        #expect(refused.headers["connection"] == "close")
        #expect(await over.closedByServer())
        // a body without Content-Length counts as it arrives, and is refused once it is over
        let chunked = try RawConnection.to(server.url)
        try chunked.send(head(server, token, length: nil))
        let piece = 25_000
        try chunked.send("\(String(piece, radix: 16))\r\n" + String(repeating: " ", count: piece) + "\r\n")
        let overChunked = try #require(try await chunked.answer())
        #expect(overChunked.status == 503)
        // nothing stays counted: a body within the budget is answered
        let again = try RawConnection.to(server.url)
        try again.send(head(server, token, length: 10_000))
        try again.send(query + [UInt8](repeating: 0x20, count: 10_000 - query.count))
        #expect(try #require(try await again.answer()).status == 200)
    }
}
