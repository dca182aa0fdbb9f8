// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// Issue 24, findings 9 and 10, over HTTP: a web-auth token opens only the container it was
/// signed in for, rotation never extends a sign-in, and an administrator can revoke tokens,
/// change a password and disable an account, each effective on the next request.
@Suite struct TokenSessionsHTTPTests {
    /// The token the sign-in page hands to its opener (`postMessage`).
    static func signIn(_ server: ServerFixture, password: String = "correct horse") async throws -> ServerFixture.Reply {
        let form = "container=\(server.container)&apiToken=\(ServerFixture.encode(server.apiToken))&userName=mei&password=\(ServerFixture.encode(password))&keepSignedIn=on"
        return try await server.send(.POST, "", "", rawBody: Array(form.utf8), apiToken: "", rawPath: "/auth/signin", contentType: "application/x-www-form-urlencoded")
    }

    static func token(in page: ServerFixture.Reply) throws -> String {
        // `var token = "…";` in the page's script
        let start = try #require(page.body.range(of: "var token = \""))
        let rest = page.body[start.upperBound...]
        return String(rest[..<(try #require(rest.firstIndex(of: "\"")))])
    }

    static func query(_ server: ServerFixture, token: String, apiToken: String? = nil, container: String? = nil) async throws -> ServerFixture.Reply {
        try await server.send(.POST, "private", "records/query", ["query": ["recordType": "Note"]], token: token, apiToken: apiToken,
                              rawPath: container.map { server.path("private", "records/query", container: $0) })
    }

    @Test(arguments: StoreKind.available)
    func aSignedInTokenOpensOnlyItsContainerAndRotationKeepsItsExpiry(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let admin = RecordsAdmin(store: server.store)
        let otherContainer = "iCloud.org.example.Other"
        let otherAPIToken = try await admin.addContainer(otherContainer)

        let page = try await Self.signIn(server)
        #expect(page.status == 200, "\(page.body)")
        let token = try Self.token(in: page)
        let own = try await Self.query(server, token: token)
        #expect(own.status == 200, "\(own.body)")
        // the finding: the same token with another app's (public) API token read the user's data there
        let elsewhere = try await Self.query(server, token: token, apiToken: otherAPIToken, container: otherContainer)
        #expect(elsewhere.status == 421, "\(elsewhere.body)")
        #expect(elsewhere.errorCode == "AUTHENTICATION_REQUIRED")
        #expect(elsewhere.json["reason"]?.stringValue?.contains("another container") == true)

        // a rotated token is bound the same way and ends when the signed-in one does
        let rotated = try #require(own.headers["x-apple-cloudkit-web-auth-token"])
        #expect(rotated != token)
        #expect(try await Self.query(server, token: rotated).status == 200)
        #expect(try await Self.query(server, token: rotated, apiToken: otherAPIToken, container: otherContainer).status == 421)
        let rows = try await server.store.read { tx in
            (try await tx.webAuthToken(digest: SecretToken.digest(token), now: 0)?.token, try await tx.webAuthToken(digest: SecretToken.digest(rotated), now: 0)?.token)
        }
        let first = try #require(rows.0), second = try #require(rows.1)
        #expect(second.expiresAt == first.expiresAt)
        #expect(second.session == first.session)
        #expect(second.container == server.container)

        // tokens an administrator issues: every container, unless bound
        let anywhere = try await admin.issueToken(forUser: "mei")
        #expect(try await Self.query(server, token: anywhere, apiToken: otherAPIToken, container: otherContainer).status == 200)
        let bound = try await admin.issueToken(forUser: "mei", container: otherContainer)
        #expect(try await Self.query(server, token: bound, apiToken: otherAPIToken, container: otherContainer).status == 200)
        #expect(try await Self.query(server, token: bound).status == 421)
    }

    @Test(arguments: StoreKind.available)
    func revokingAChangedPasswordAndADisabledAccountTakeEffectAtOnce(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let admin = RecordsAdmin(store: server.store, passwordHasher: PasswordHasher(cost: 4))

        // revoking a session revokes its rotations too
        let page = try await Self.signIn(server)
        let token = try Self.token(in: page)
        let rotated = try #require(try await Self.query(server, token: token).headers["x-apple-cloudkit-web-auth-token"])
        let sessions = try await admin.tokens(ofUser: "mei")
        #expect(sessions.count == 3)  // `user add`'s token, the signed-in one and its rotation
        #expect(Set(sessions.map(\.session)).count == 2)
        let signedIn = try #require(sessions.first { $0.container == server.container })
        #expect(try await admin.revokeTokens(ofUser: "mei", .sessions([signedIn.sessionID])) == 2)
        #expect(try await Self.query(server, token: token).status == 421)
        #expect(try await Self.query(server, token: rotated).status == 421)
        #expect(try await Self.query(server, token: server.userToken).status == 200)  // the other session lives
        await #expect(throws: UbiquityError.self) { try await admin.revokeTokens(ofUser: "ravi", .token(server.userToken)) }  // not ravi's
        #expect(try await admin.revokeTokens(ofUser: "mei", .token(server.userToken)) == 2)  // with the rotation the last query got
        #expect(try await Self.query(server, token: server.userToken).status == 421)

        // a new password: the old one fails, every token is revoked
        let before = try await admin.issueToken(forUser: "mei", device: true)
        #expect(try await admin.setPassword(ofUser: "mei", to: "battery staple") == 1)
        #expect(try await server.send("private", "records/query", ["query": ["recordType": "Note"]], token: before, apiToken: "").status == 421)
        #expect(try await Self.signIn(server).status == 401)
        let again = try await Self.signIn(server, password: "battery staple")
        #expect(again.status == 200)

        // disabled: tokens refused, sign-in refused with a reason, no token issued later works
        let device = try await admin.issueToken(forUser: "mei", device: true)
        #expect(try await admin.setDisabled(true, user: "mei") == 2)
        #expect(try await server.send("private", "records/query", ["query": ["recordType": "Note"]], token: device, apiToken: "").status == 421)
        let refused = try await Self.signIn(server, password: "battery staple")
        #expect(refused.status == 401)
        #expect(refused.body.contains("disabled"))
        let deviceSignIn = try await server.send(.POST, "", "", ["userName": "mei", "password": "battery staple", "deviceName": "laptop"],
                                                 apiToken: "", rawPath: "/auth/device", contentType: "application/json")
        #expect(deviceSignIn.status == 401)
        #expect(deviceSignIn.json["reason"]?.stringValue?.contains("disabled") == true)
        let issuedLater = try await admin.issueToken(forUser: "mei")
        #expect(try await Self.query(server, token: issuedLater).status == 421)
        // enabled again: signs in anew
        try await admin.setDisabled(false, user: "mei")
        #expect(try await Self.query(server, token: issuedLater).status == 200)
        #expect(try await Self.signIn(server, password: "battery staple").status == 200)
    }
}
