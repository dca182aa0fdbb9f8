// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOHTTP1
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// Users over HTTP: discoverability opt-in and out, discovery and lookups that return only
/// opted-in users, user records in the public database, per-container identities.
@Suite struct UsersHTTPTests {
    static func admin(_ server: ServerFixture) -> RecordsAdmin {
        RecordsAdmin(store: server.store, passwordHasher: PasswordHasher(cost: 4))
    }

    static func userRecordName(_ server: ServerFixture, token: String, container: String? = nil, apiToken: String? = nil) async throws -> String {
        let reply = try await server.send(.GET, "public", "users/current", token: token, apiToken: apiToken,
                                          rawPath: container.map { server.path("public", "users/current", container: $0) })
        return try #require(reply.json["userRecordName"]?.stringValue, "\(reply.body)")
    }

    @Test(arguments: StoreKind.available)
    func discoverabilityIsOptInAndLookupsReturnOnlyOptedInUsers(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        try await Self.admin(server).setUser("mei", .init(givenName: "Mei", familyName: "Chen", nickname: "mc"))
        let mei = try await Self.userRecordName(server, token: server.userToken)
        let ravi = try await Self.userRecordName(server, token: server.otherToken)
        // not opted in: no names in users/current, nobody finds her
        let current = try await server.send(.GET, "public", "users/current", token: server.userToken)
        #expect(current.json["firstName"] == JSONValue.null)
        #expect(current.json["lastName"] == JSONValue.null)
        let hidden = try await server.send("public", "users/discover", ["lookupInfos": [["emailAddress": "mei@example.org"], ["userRecordName": .string(mei)]]],
                                           token: server.otherToken)
        #expect(hidden.status == 200)
        #expect(hidden.items("users").isEmpty)
        #expect(try await server.send("public", "users/lookup/email", ["users": [["emailAddress": "mei@example.org"]]], token: server.otherToken).items("users").isEmpty)
        #expect(try await server.send("public", "users/lookup/id", ["users": [["userRecordName": .string(mei)]]], token: server.otherToken).items("users").isEmpty)
        let callerHidden = try await server.send(.GET, "public", "users/caller", token: server.userToken)
        #expect(callerHidden.items("users").first?["nameComponents"] == nil)
        #expect(callerHidden.items("users").first?["lookupInfo"]?["emailAddress"] == "mei@example.org")

        // she opts in herself
        let status = try await server.send(.GET, "public", "users/discoverability", token: server.userToken)
        #expect(status.json["discoverable"] == false)
        let optIn = try await server.send("public", "users/discoverability", ["discoverable": true], token: server.userToken)
        #expect(optIn.status == 200)
        #expect(optIn.json["discoverable"] == true)
        #expect(optIn.json["userRecordName"]?.stringValue == mei)
        let named = try await server.send(.GET, "public", "users/current", token: server.userToken)
        #expect(named.json["firstName"] == "Mei")
        #expect(named.json["lastName"] == "Chen")
        let caller = try await server.send(.GET, "public", "users/caller", token: server.userToken)
        #expect(caller.items("users").first?["nameComponents"]?["givenName"] == "Mei")
        #expect(caller.items("users").first?["userRecordName"]?.stringValue == mei)

        // discover: in request order, case-insensitive e-mails, unknown/phone/undiscoverable left out
        let found = try await server.send("public", "users/discover", ["lookupInfos": [
            ["emailAddress": "nobody@example.org"], ["userRecordName": .string(mei)], ["phoneNumber": "+33 1 23 45 67 89"],
            ["userRecordName": .string(ravi)], ["emailAddress": "MEI@Example.ORG"],
        ]], token: server.otherToken)
        let users = found.items("users")
        #expect(users.count == 2)
        #expect(users.first?["lookupInfo"]?["userRecordName"]?.stringValue == mei)
        #expect(users.last?["lookupInfo"]?["emailAddress"] == "MEI@Example.ORG")
        #expect(users.allSatisfy { $0["userRecordName"]?.stringValue == mei })
        #expect(users.first?["nameComponents"]?["familyName"] == "Chen")
        #expect(users.first?["nameComponents"]?["nickname"] == "mc")
        let byEmail = try await server.send("public", "users/lookup/email", ["users": [["emailAddress": "x@example.org"], ["emailAddress": "Mei@example.org"]]],
                                            token: server.otherToken)
        #expect(byEmail.items("users").count == 1)
        #expect(byEmail.items("users").first?["emailAddress"] == "Mei@example.org")
        #expect(byEmail.items("users").first?["firstName"] == "Mei")
        #expect(byEmail.items("users").first?["userRecordName"]?.stringValue == mei)
        let byID = try await server.send("public", "users/lookup/id", ["users": [["userRecordName": .string(ravi)], ["userRecordName": .string(mei)]]],
                                         token: server.otherToken)
        #expect(byID.items("users").map { $0["userRecordName"]?.stringValue } == [mei])
        #expect(byID.items("users").first?["lastName"] == "Chen")
        // no address book: GET discover and lookup/contacts are empty
        let all = try await server.send(.GET, "public", "users/discover", token: server.otherToken)
        #expect(all.status == 200 && all.items("users").isEmpty)
        let contacts = try await server.send("public", "users/lookup/contacts", token: server.otherToken)
        #expect(contacts.status == 200 && contacts.items("users").isEmpty)

        // a signed-in caller is needed; bad lookup infos name the element
        let anonymous = try await server.send("public", "users/discover", ["lookupInfos": [["emailAddress": "mei@example.org"]]])
        #expect(anonymous.status == 421)
        #expect(anonymous.json["redirectURL"]?.stringValue != nil)
        #expect(try await server.send("public", "users/lookup/email", ["users": [["emailAddress": "mei@example.org"]]]).status == 421)
        #expect(try await server.send("public", "users/discoverability", ["discoverable": true]).status == 421)
        let bad = try await server.send("public", "users/discover", ["lookupInfos": [["emailAddress": "a@b"], ["name": "x"]]], token: server.otherToken)
        #expect(bad.status == 400)
        #expect(bad.json["reason"]?.stringValue?.contains("lookupInfos[1]") == true)
        let badLookup = try await server.send("public", "users/lookup/email", ["users": [["userRecordName": "x"]]], token: server.otherToken)
        #expect(badLookup.status == 400)
        #expect(badLookup.json["reason"]?.stringValue?.contains("users[0].emailAddress") == true)

        // she opts out: nothing personal any more
        let optOut = try await server.send("public", "users/discoverability", ["discoverable": false], token: server.userToken)
        #expect(optOut.json["discoverable"] == false)
        #expect(try await server.send("public", "users/discover", ["lookupInfos": [["emailAddress": "mei@example.org"]]], token: server.otherToken)
            .items("users").isEmpty)
        #expect(try await server.send(.GET, "public", "users/current", token: server.userToken).json["firstName"] == JSONValue.null)
    }

    @Test(arguments: StoreKind.available)
    func identitiesAndDiscoverabilityArePerContainer(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let admin = Self.admin(server)
        let other = "iCloud.org.example.Other"
        let otherAPI = try await admin.addContainer(other)
        let here = try await Self.userRecordName(server, token: server.userToken)
        let there = try await Self.userRecordName(server, token: server.userToken, container: other, apiToken: otherAPI)
        #expect(here != there)
        #expect(UserDirectory.isUserRecordName(here) && UserDirectory.isUserRecordName(there))
        // discoverable here only
        try await admin.setUser("mei", .init(givenName: "Mei", discoverable: [server.container: true]))
        let discover: JSONValue = ["lookupInfos": [["emailAddress": "mei@example.org"]]]
        let foundHere = try await server.send("public", "users/discover", discover, token: server.otherToken)
        #expect(foundHere.items("users").first?["userRecordName"]?.stringValue == here)
        let otherPath = server.path("public", "users/discover", container: other)
        #expect(try await server.send("public", "users/discover", discover, token: server.otherToken, apiToken: otherAPI, rawPath: otherPath).items("users").isEmpty)
        // the admin makes her discoverable there too: found under that container's record name
        let identities = try await admin.setUser("mei", .init(discoverable: [other: true, server.container: false]))
        #expect(identities.map(\.userRecordName).sorted() == [here, there].sorted())
        let foundThere = try await server.send("public", "users/discover", discover, token: server.otherToken, apiToken: otherAPI, rawPath: otherPath)
        #expect(foundThere.items("users").first?["userRecordName"]?.stringValue == there)
        #expect(try await server.send("public", "users/discover", discover, token: server.otherToken).items("users").isEmpty)
    }

    @Test(arguments: StoreKind.available)
    func userRecordsAreReadableNotQueryableAndWritableOnlyByTheirUser(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let mei = try await Self.userRecordName(server, token: server.userToken)
        let ravi = try await Self.userRecordName(server, token: server.otherToken)
        // created by the user's first request; readable with the API token alone
        let lookup = try await server.send("public", "records/lookup", ["records": [["recordName": .string(mei)], ["recordName": .string(ravi)]]])
        #expect(lookup.items().count == 2)
        #expect(lookup.items().first?["recordType"] == "Users")
        #expect(lookup.items().first?["created"]?["userRecordName"]?.stringValue == mei)
        #expect(lookup.items().last?["recordType"] == "Users")
        // in another environment it is created by the first lookup of it
        let production = try await server.send("public", "records/lookup", ["records": [["recordName": .string(mei)], ["recordName": "_0123456789abcdef0123456789abcdef"]]],
                                               environment: "production")
        #expect(production.items().first?["recordType"] == "Users")
        #expect(production.items().last?["serverErrorCode"] == "NOT_FOUND")
        // not queryable
        let query = try await server.send("public", "records/query", ["query": ["recordType": "Users"]], token: server.userToken)
        #expect(query.status == 400)
        #expect(query.errorCode == "BAD_REQUEST")
        // its user may add fields
        let tag = try #require(lookup.items().first?["recordChangeTag"]?.stringValue)
        let own = try await server.modify([operation("update", mei, recordType: "Users", tag: tag, fields: ["bio": "hello"])], database: "public", token: server.userToken)
        #expect(own.items().first?["fields"]?["bio"]?["value"] == "hello", "\(own.body)")
        // nobody else may write it, or make records that pose as user records
        let hijack = try await server.modify([operation("forceUpdate", mei, recordType: nil, fields: ["bio": "pwned"])], database: "public", token: server.otherToken)
        #expect(hijack.items().first?["serverErrorCode"] == "ACCESS_DENIED")
        let pose = try await server.modify([operation("create", "fake", recordType: "Users")], database: "public", token: server.otherToken)
        #expect(pose.items().first?["serverErrorCode"] == "ACCESS_DENIED")
        let squat = try await server.modify([operation("create", "_0123456789abcdef0123456789abcdef", recordType: "Note")], database: "public", token: server.otherToken)
        #expect(squat.items().first?["serverErrorCode"] == "ACCESS_DENIED")
        let retype = try await server.modify([operation("forceReplace", mei, recordType: "Note")], database: "public", token: server.userToken)
        #expect(retype.items().first?["serverErrorCode"] == "BAD_REQUEST")
        // nor delete it, not even its user
        let delete = try await server.modify([operation("forceDelete", mei, recordType: nil)], database: "public", token: server.userToken)
        #expect(delete.items().first?["serverErrorCode"] == "ACCESS_DENIED")
        let after = try await server.send("public", "records/lookup", ["records": [["recordName": .string(mei)]]])
        #expect(after.items().first?["fields"]?["bio"]?["value"] == "hello")
    }

    @Test(arguments: StoreKind.available)
    func adminUserSetChecksItsArguments(kind: StoreKind) async throws {
        let server = try await ServerFixture.start(kind)
        defer { Task { await server.stop() } }
        let admin = Self.admin(server)
        await #expect(throws: UbiquityError.self) { try await admin.setUser("nobody", .init(givenName: "X")) }
        await #expect(throws: UbiquityError.self) { try await admin.setUser("mei", .init(discoverable: ["iCloud.missing": true])) }
        await #expect(throws: UbiquityError.self) { try await admin.setUser("mei", .init(email: "not an address")) }
        // e-mails are unique, case-insensitively; nothing is half-written
        await #expect(throws: UbiquityError.self) { try await admin.setUser("ravi", .init(givenName: "Ravi", email: "MEI@example.org")) }
        let names = try await server.store.read { tx in try await tx.users().nameComponents(accountID: try await tx.account(named: "ravi")!.id) }
        #expect(names.givenName == nil)
        // set, then clear with ""
        try await admin.setUser("ravi", .init(givenName: "Ravi", familyName: "Shah", email: "ravi@example.org"))
        try await admin.setUser("ravi", .init(familyName: ""))
        let after = try await server.store.read { tx in
            let account = try await tx.account(named: "ravi")!
            return (account.email, try await tx.users().nameComponents(accountID: account.id))
        }
        #expect(after.0 == "ravi@example.org")
        #expect(after.1.givenName == "Ravi" && after.1.familyName == nil)
    }
}
