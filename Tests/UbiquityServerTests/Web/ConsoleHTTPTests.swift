// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOHTTP1
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The developer Console over HTTP on a real server (loopback): a container opens only for its
/// developers; records saved through the API are browsed, queried and shown with their
/// references, values holding markup shown as text; the schema's differences and its
/// deployment (CSRF-checked); users and subscriptions; the request log, live, and telemetry.
/// (In a browser: DriveBrowserTests.)
@Suite struct ConsoleHTTPTests {
    typealias Browser = DriveHTTPTests.Browser

    @Test func aContainersDeveloperSeesItsRecordsSchemaUsersLogsAndTelemetry() async throws {
        let server = try await ServerFixture.start(.sqlite, assets: true)
        let mei = Browser(server.url), lena = Browser(server.url)
        defer { Task { await mei.shutdown(); await lena.shutdown() } }
        do {
            let container = server.container
            let admin = RecordsAdmin(store: server.store, configuration: .init(), passwordHasher: PasswordHasher(cost: 4))
            _ = try await admin.addContainer("iCloud.org.example.Other")
            _ = try await admin.addUser("lena", email: nil, password: "lena's password")
            #expect(try await admin.developers(container: container, add: ["mei"]) == ["mei"])

            // the app saves records in the public database through the API
            let saved = try await server.modify([
                operation("create", "author-1", recordType: "Author", fields: ["name": .string("Mei")]),
                operation("create", "note-1", fields: [
                    "title": .string("<script>alert('x')</script>"), "rank": .number(3),
                    "author": .object(["value": .object(["recordName": .string("author-1"), "action": .string("NONE")]), "type": .string("REFERENCE")]),
                ]),
            ], database: "public", token: server.userToken)
            #expect(saved.status == 200, "\(saved.body)")
            let subscribed = try await server.send("public", "subscriptions/modify", .object(["operations": .array([.object([
                "operationType": .string("create"),
                "subscription": .object(["subscriptionID": .string("new-notes"), "subscriptionType": .string("query"),
                                         "query": .object(["recordType": .string("Note")]), "firesOn": .array([.string("create")])]),
            ])])]), token: server.userToken)
            #expect(subscribed.status == 200, "\(subscribed.body)")
            _ = try await server.send("public", "records/lookup", .object(["records": .array([.object(["recordName": .string("missing")])])]),
                                      token: "not-a-token")

            // not signed in: the sign-in page, coming back here after
            let records = "/console/\(container)/records"
            var page = try await mei.request(.GET, records)
            #expect(page.status == 303 && page.location == "/signin?next=" + (records.addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~"))) ?? ""))
            page = try await mei.request(.GET, try #require(page.location))
            #expect(page.body.contains(#"name="next" value="/console/"#))
            page = try await mei.request(.POST, "/signin", form: ["user": "mei", "password": "correct horse", "next": records])
            #expect(page.status == 303 && page.location == records)

            // the container list, then the latest records, the markup shown as text
            #expect((try await mei.request(.GET, "/console")).body.contains("/console/\(container)/records"))
            // the container switcher without JavaScript: a form sent to /console
            page = try await mei.request(.GET, "/console?container=\(container)")
            #expect(page.status == 303 && page.location == "/console/\(container)/records")
            #expect(try await mei.request(.GET, "/console?container=iCloud.org.example.Other").status == 200)
            page = try await mei.request(.GET, records)
            #expect(page.status == 200)
            #expect(page.body.contains("note-1") && page.body.contains("author-1"))
            page = try await mei.request(.GET, "\(records)?type=Note")
            #expect(page.body.contains("note-1") && !page.body.contains("author-1"))
            // a query as the API runs it, and a refused one shown as a message
            page = try await mei.request(.GET, "\(records)?type=Note&field=rank&comparator=GREATER_THAN&value=2")
            #expect(page.body.contains("note-1"), "\(page.body)")
            page = try await mei.request(.GET, "\(records)?type=Note&field=rank&comparator=GREATER_THAN&value=5")
            #expect(!page.body.contains("note-1"))
            page = try await mei.request(.GET, "\(records)?type=Note&field=rank&value=many")
            #expect(page.status == 200 && page.body.contains("expected a whole number"))

            // a record's fields, its reference followed, and what refers to the author
            page = try await mei.request(.GET, "/console/\(container)/record?env=development&db=public&zone=_defaultZone&name=note-1")
            #expect(page.status == 200)
            #expect(page.body.contains("&lt;script&gt;alert(&#39;x&#39;)&lt;/script&gt;") || page.body.contains("&lt;script&gt;alert(&#x27;x&#x27;)&lt;/script&gt;"),
                    "\(page.body)")
            #expect(!page.body.contains("<script>alert"))
            #expect(page.body.contains("REFERENCE") && page.body.contains("name=author-1"))
            page = try await mei.request(.GET, "/console/\(container)/record?env=development&db=public&zone=_defaultZone&name=author-1")
            #expect(page.body.contains("Referenced by") && page.body.contains("name=note-1"))
            #expect(try await mei.request(.GET, "/console/\(container)/record?env=development&db=public&zone=_defaultZone&name=nope").status == 404)

            // the schema: what a deployment adds; deploying needs the session's CSRF token
            page = try await mei.request(.GET, "/console/\(container)/schema")
            #expect(page.body.contains("adds record type Note") && page.body.contains("Deploy to production"))
            let csrf = try #require(Browser.first(#"name="csrf" value="([0-9a-f]+)""#, in: page.body))
            #expect(try await mei.request(.POST, "/console/\(container)/schema/deploy", form: [:]).status == 403)
            page = try await mei.request(.POST, "/console/\(container)/schema/deploy", form: ["csrf": csrf])
            #expect(page.status == 200 && page.body.contains("Deployed to production") && page.body.contains("record type Note"), "\(page.body)")
            #expect(try await admin.schema(container: container, environment: .production).recordTypes["Note"] != nil)
            #expect((try await mei.request(.GET, "/console/\(container)/schema")).body.contains("nothing to deploy"))

            // users and subscriptions
            let meiRecordName = try #require(try await server.send("public", "users/current", nil, token: server.userToken)
                .json.objectValue?["userRecordName"]?.stringValue)
            #expect((try await mei.request(.GET, "/console/\(container)/users")).body.contains(meiRecordName))
            page = try await mei.request(.GET, "/console/\(container)/subscriptions")
            #expect(page.body.contains("new-notes") && page.body.contains("Note · on create"), "\(page.body)")

            // the request log: operations, statuses and error codes; telemetry per operation
            page = try await mei.request(.GET, "/console/\(container)/logs")
            #expect(page.body.contains("records/modify") && page.body.contains("subscriptions/modify"))
            #expect(page.body.contains("AUTHENTICATION_FAILED") || page.body.contains("AUTHENTICATION_REQUIRED"), "\(page.body)")
            let newest = try #require(Browser.first(#"data-after="([0-9]+)""#, in: page.body))
            page = try await mei.request(.GET, "/console/\(container)/telemetry")
            #expect(page.body.contains("records/modify") && page.body.contains("users/current"))
            // live: a waiting page gets the next request
            let live = Task { try await mei.request(.GET, "/console/\(container)/logs/live?after=\(newest)") }
            try await Task.sleep(for: .milliseconds(300))
            _ = try await server.send("public", "zones/list", nil, token: server.userToken)
            let next = try await live.value
            #expect(next.status == 200 && next.body.contains("zones/list"), "\(next.body)")

            // another account, and another container: "not found", nothing shown
            #expect(try await mei.request(.GET, "/console/iCloud.org.example.Other/records").status == 404)
            #expect(try await lena.signIn("lena", "lena's password").status == 303)
            #expect(!(try await lena.request(.GET, "/console")).body.contains(container))
            for path in ["records", "record?name=note-1", "schema", "users", "subscriptions", "logs", "telemetry", "logs/live?after=0"] {
                let refused = try await lena.request(.GET, "/console/\(container)/\(path)")
                #expect(refused.status == 404, "\(path)")
                #expect(!refused.body.contains("note-1") && !refused.body.contains("records/modify"), "\(path)")
            }
            let lenaCSRF = try await lena.csrf()
            #expect(try await lena.request(.POST, "/console/\(container)/schema/deploy", form: ["csrf": lenaCSRF]).status == 404)
            // and the developer's removal closes the container at once
            _ = try await admin.developers(container: container, remove: ["mei"])
            #expect(try await mei.request(.GET, records).status == 404)
        } catch {
            await server.stop()
            throw error
        }
        await server.stop()
    }
}
