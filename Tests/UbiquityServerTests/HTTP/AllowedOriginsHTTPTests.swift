// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer

/// CloudKit JS apps on another origin than the server's: the 421's `redirectURL` carries the
/// app's origin, the sign-in page keeps it, and the token is posted to it only when the
/// container allows that origin (`ubiq admin container origins`); otherwise only to a window of
/// the page's own origin, as before.
@Suite struct AllowedOriginsHTTPTests {
    static let app = "https://notes.example.org"

    /// The `postMessage` target of a success page.
    static func target(_ page: ServerFixture.Reply) throws -> String {
        let start = try #require(page.body.range(of: "var origin = \""))
        let rest = page.body[start.upperBound...]
        return String(rest[..<(try #require(rest.firstIndex(of: "\"")))]).replacingOccurrences(of: "\\/", with: "/")  // a JavaScript string
    }

    static func signIn(_ server: ServerFixture, origin: String?) async throws -> ServerFixture.Reply {
        var form = "container=\(server.container)&apiToken=\(ServerFixture.encode(server.apiToken))&userName=mei&password=\(ServerFixture.encode("correct horse"))"
        if let origin { form += "&origin=\(ServerFixture.encode(origin))" }
        return try await server.send(.POST, "", "", rawBody: Array(form.utf8), apiToken: "", rawPath: "/auth/signin",
                                     headers: [("Origin", server.url)], contentType: "application/x-www-form-urlencoded")
    }

    @Test(arguments: StoreKind.available)
    func theTokenGoesToAnAllowedAppOriginOnly(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        // the app's request without a user: 421, its redirectURL naming the app's origin
        let refused = try await server.send("private", "records/query", ["query": ["recordType": "Note"]], headers: [("Origin", Self.app)])
        #expect(refused.status == 421)
        let redirect = try #require(refused.json["redirectURL"]?.stringValue)
        #expect(redirect.contains("origin=https://notes.example.org") || redirect.contains("origin=https%3A%2F%2Fnotes.example.org"), "\(redirect)")
        // the page keeps it
        let path = String(redirect.dropFirst(server.url.count))
        let form = try await server.send(.GET, "", "", apiToken: "", rawPath: path)
        #expect(form.body.contains(#"name="origin" value="https://notes.example.org""#), "\(form.body)")

        // not allowed yet: the token goes only to the page's own origin
        #expect(try Self.target(try await Self.signIn(server, origin: Self.app)) == server.url)
        // allowed: to the app
        let admin = RecordsAdmin(store: server.store)
        #expect(try await admin.allowedOrigins(container: server.container, add: ["HTTPS://Notes.Example.org:443/"]) == [Self.app])
        #expect(try Self.target(try await Self.signIn(server, origin: Self.app)) == Self.app)
        // another origin still does not get it
        #expect(try Self.target(try await Self.signIn(server, origin: "https://evil.example.com")) == server.url)
        // removed again
        #expect(try await admin.allowedOrigins(container: server.container, remove: [Self.app]).isEmpty)
        #expect(try Self.target(try await Self.signIn(server, origin: Self.app)) == server.url)
        // what is not an origin is refused, naming it
        await #expect(throws: UbiquityError.self) { try await admin.allowedOrigins(container: server.container, add: ["notes.example.org/path"]) }
        await #expect(throws: UbiquityError.self) { try await admin.allowedOrigins(container: "iCloud.org.example.Nobody", add: [Self.app]) }
    }
}
