// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The web's Drive over HTTP on a real server (loopback): the session cookie's flags, CSRF on
/// every change, an upload through the asset path, and that one user's files, versions and
/// Recently Deleted are never reachable by another's URLs, and stored names holding markup are
/// shown as text. (The whole flow in a browser: DriveBrowserTests.)
@Suite struct DriveHTTPTests {
    /// A browser's part: cookies kept, redirects not followed.
    final class Browser: Sendable {
        let base: String
        let client = HTTPClient(eventLoopGroupProvider: .singleton, configuration: .init(redirectConfiguration: .disallow))
        let cookie = SendableBox<String?>(nil)

        init(_ base: String) { self.base = base }

        struct Page {
            var status: Int
            var headers: HTTPHeaders
            var body: String
            var location: String? { headers.first(name: "Location") }
        }

        func request(_ method: HTTPMethod, _ path: String, form: [String: String]? = nil, json: JSONValue? = nil, raw: [UInt8]? = nil,
                     headers extra: [String: String] = [:]) async throws -> Page {
            var request = HTTPClientRequest(url: path.hasPrefix("http") ? path : base + path)
            request.method = method
            if let value = cookie.value { request.headers.add(name: "Cookie", value: "ubiq_drive=\(value)") }
            for (name, value) in extra { request.headers.add(name: name, value: value) }
            if let form {
                request.headers.add(name: "Content-Type", value: "application/x-www-form-urlencoded")
                let text = form.map { "\($0.key)=\($0.value.addingPercentEncoding(withAllowedCharacters: .alphanumerics) ?? "")" }.joined(separator: "&")
                request.body = .bytes(ByteBuffer(string: text))
            } else if let json {
                request.headers.add(name: "Content-Type", value: "application/json")
                request.body = .bytes(ByteBuffer(bytes: json.serializedBytes()))
            } else if let raw {
                request.body = .bytes(ByteBuffer(bytes: raw))
            }
            let response = try await client.execute(request, timeout: .seconds(30))
            let body = String(buffer: try await response.body.collect(upTo: 16 << 20))
            if let set = response.headers.first(name: "Set-Cookie"), set.hasPrefix("ubiq_drive=") {
                let value = String(set.dropFirst("ubiq_drive=".count).prefix { $0 != ";" })
                cookie.value = value.isEmpty ? nil : value
            }
            return Page(status: Int(response.status.code), headers: response.headers, body: body)
        }

        func signIn(_ user: String, _ password: String) async throws -> Page {
            try await request(.POST, "/signin", form: ["user": user, "password": password])
        }

        /// The CSRF token of the signed-in page.
        func csrf() async throws -> String {
            let page = try await request(.GET, "/")
            return try #require(Self.first(#"name="csrf-token" content="([0-9a-f]+)""#, in: page.body))
        }

        static func first(_ pattern: String, in text: String) -> String? {
            guard let regex = try? NSRegularExpression(pattern: pattern),
                  let match = regex.firstMatch(in: text, range: NSRange(text.startIndex..., in: text)),
                  let range = Range(match.range(at: 1), in: text) else { return nil }
            return String(text[range])
        }

        func shutdown() async { try? await client.shutdown() }
    }

    /// A value a `Sendable` class can change.
    final class SendableBox<T: Sendable>: @unchecked Sendable {
        private let lock = NSLock()
        private var stored: T
        init(_ value: T) { stored = value }
        var value: T {
            get { lock.withLock { stored } }
            set { lock.withLock { stored = newValue } }
        }
    }

    /// Uploads `content` as `name` the way the page's script does; returns the item's record name.
    static func upload(_ browser: Browser, name: String, content: String, csrf: String) async throws -> String {
        let start = try await browser.request(.POST, "/drive/upload", json: .object(["folder": .string(""), "name": .string(name)]),
                                              headers: ["X-CSRF-Token": csrf])
        #expect(start.status == 200, "\(start.body)")
        let answer = try JSONValue.parse(Data(start.body.utf8))
        let url = try #require(answer.objectValue?["url"]?.stringValue)
        let recordName = try #require(answer.objectValue?["recordName"]?.stringValue)
        let sent = try await browser.request(.POST, url, raw: Array(content.utf8))
        #expect(sent.status == 200, "\(sent.body)")
        let asset = try #require(try JSONValue.parse(Data(sent.body.utf8)).objectValue?["singleFile"])
        let saved = try await browser.request(.POST, "/drive/uploaded", json: .object([
            "folder": .string(""), "name": .string(name), "recordName": .string(recordName), "asset": asset,
        ]), headers: ["X-CSRF-Token": csrf])
        #expect(saved.status == 200, "\(saved.body)")
        return recordName
    }

    @Test func oneUsersDriveIsNeverReachedByAnother() async throws {
        let server = try await ServerFixture.start(.sqlite, assets: true)
        let mei = Browser(server.url), ravi = Browser(server.url)
        defer { Task { await mei.shutdown(); await ravi.shutdown() } }
        do {
            // signing in: a wrong password sets no cookie; the right one sets an HttpOnly, SameSite one
            var page = try await mei.signIn("mei", "wrong")
            #expect(page.status == 401)
            #expect(mei.cookie.value == nil)
            page = try await mei.signIn("mei", "correct horse")
            #expect(page.status == 303 && page.location == "/")
            let flags = page.headers.first(name: "Set-Cookie") ?? ""
            #expect(flags.contains("HttpOnly") && flags.contains("SameSite=Strict") && !flags.contains("Secure"), "\(flags)")
            let meiCSRF = try await mei.csrf()

            // mei uploads a file through the asset path and downloads it
            let file = try await Self.upload(mei, name: "private.txt", content: "mei's secret", csrf: meiCSRF)
            page = try await mei.request(.GET, "/")
            #expect(page.body.contains("/drive/file/\(file)"))
            let download = try await mei.request(.GET, "/drive/file/\(file)")
            #expect(download.status == 303)
            let bytes = try await mei.request(.GET, try #require(download.location))
            #expect(bytes.body == "mei's secret")
            let versions = try await mei.request(.GET, "/versions?id=\(file)")
            let version = try #require(Browser.first(#"/versions/file\?id=([0-9]+)"#, in: versions.body))

            // a stored name holding markup is shown as text
            page = try await mei.request(.POST, "/drive/folder", form: ["csrf": meiCSRF, "parent": "", "name": "<b onmouseover=alert(1)>x"])
            #expect(page.status == 303)
            page = try await mei.request(.GET, "/")
            #expect(page.body.contains("&lt;b onmouseover=alert(1)&gt;x"))
            #expect(!page.body.contains("<b onmouseover"))
            #expect(page.headers.first(name: "Content-Security-Policy")?.contains("script-src 'self'") == true)

            // a change without the session's CSRF token is refused
            page = try await mei.request(.POST, "/drive/delete", form: ["id": file])
            #expect(page.status == 403)
            page = try await mei.request(.POST, "/drive/upload", json: .object(["folder": .string(""), "name": .string("x")]))
            #expect(page.status == 403)

            // ravi: none of mei's URLs reach anything
            let admin = RecordsAdmin(store: server.store, configuration: .init(), passwordHasher: PasswordHasher(cost: 4))
            _ = try await admin.setPassword(ofUser: "ravi", to: "ravi's password", keepTokens: true)
            #expect(try await ravi.signIn("ravi", "ravi's password").status == 303)
            let raviCSRF = try await ravi.csrf()
            #expect(!(try await ravi.request(.GET, "/")).body.contains("private.txt"))
            #expect(try await ravi.request(.GET, "/drive/file/\(file)").status == 404)
            #expect(try await ravi.request(.GET, "/versions?id=\(file)").status == 404)
            #expect(try await ravi.request(.GET, "/versions/file?id=\(version)").status == 404)
            #expect(try await ravi.request(.POST, "/drive/delete", form: ["csrf": raviCSRF, "id": file]).status == 404)
            #expect(try await ravi.request(.POST, "/drive/rename", form: ["csrf": raviCSRF, "id": file, "name": "mine.txt"]).status == 404)
            #expect(try await ravi.request(.POST, "/versions/restore", form: ["csrf": raviCSRF, "version": version, "id": file]).status == 404)
            #expect(try await ravi.request(.POST, "/shares/new", form: ["csrf": raviCSRF, "id": file, "days": "3"]).status == 404)
            #expect(try await ravi.request(.GET, "/s/not-a-link").status == 404)
            // mei's token in ravi's form is no good either
            #expect(try await ravi.request(.POST, "/drive/delete", form: ["csrf": meiCSRF, "id": file]).status == 403)

            // mei deletes it: in mei's Recently Deleted, not ravi's
            #expect(try await mei.request(.POST, "/drive/delete", form: ["csrf": meiCSRF, "id": file]).status == 303)
            let trash = try await mei.request(.GET, "/trash")
            #expect(trash.body.contains("private.txt"))
            let trashID = try #require(Browser.first(#"action="/trash/restore"[^>]*>\s*<input type="hidden" name="csrf" value="[0-9a-f]+">\s*<input type="hidden" name="id" value="([0-9]+)""#, in: trash.body))
            #expect(!(try await ravi.request(.GET, "/trash")).body.contains("private.txt"))
            #expect(try await ravi.request(.POST, "/trash/restore", form: ["csrf": raviCSRF, "id": trashID]).status == 404)
            #expect(try await mei.request(.POST, "/trash/restore", form: ["csrf": meiCSRF, "id": trashID]).status == 303)
            #expect((try await mei.request(.GET, "/")).body.contains("/drive/file/\(file)"))

            // signing out ends the session: the old cookie opens nothing
            let old = mei.cookie.value
            #expect(try await mei.request(.POST, "/signout", form: ["csrf": meiCSRF]).status == 303)
            mei.cookie.value = old
            page = try await mei.request(.GET, "/")
            #expect(page.status == 303 && page.location == "/signin")
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
