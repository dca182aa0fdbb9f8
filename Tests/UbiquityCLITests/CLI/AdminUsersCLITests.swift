// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import UbiquityServer

/// `ubiq admin user set` and `ubiq serve --rate-limit/--burst` as real processes.
@Suite struct AdminUsersCLITests {
    @Test func userSetChangesNamesEmailAndDiscoverability() async throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        let container = "iCloud.org.example.Admin"
        #expect(try device.run(["admin", "--data", data, "container", "add", container]).status == 0)
        #expect(try device.run(["admin", "--data", data, "user", "add", "mei", "--email", "mei@example.org"]).status == 0)
        #expect(try device.run(["admin", "--data", data, "user", "add", "ravi"]).status == 0)

        let set = try device.run(["admin", "--data", data, "user", "set", "mei", "--given-name", "Mei", "--family-name", "Chen",
                                  "--nickname", "mc", "--discoverable", container])
        #expect(set.status == 0, "\(set)")
        let line = set.stdout.trimmingCharacters(in: .whitespacesAndNewlines).split(separator: " ")
        #expect(line.count == 3)
        #expect(line.first.map(String.init) == container)
        #expect(line.last == "discoverable")
        let recordName = line.count == 3 ? String(line[1]) : ""
        #expect(recordName.hasPrefix("_") && recordName.count == 33)

        // errors: which argument and what was expected
        let nothing = try device.run(["admin", "--data", data, "user", "set", "mei"])
        #expect(nothing.status == 64)
        #expect(nothing.stderr.contains("nothing to change"))
        let both = try device.run(["admin", "--data", data, "user", "set", "mei", "--discoverable", container, "--undiscoverable", container])
        #expect(both.status == 64)
        let nobody = try device.run(["admin", "--data", data, "user", "set", "nobody", "--given-name", "X"])
        #expect(nobody.status == 1)
        #expect(nobody.stderr.contains("nobody"))
        let noContainer = try device.run(["admin", "--data", data, "user", "set", "mei", "--discoverable", "iCloud.missing"])
        #expect(noContainer.status == 1)
        #expect(noContainer.stderr.contains("iCloud.missing"))
        let badEmail = try device.run(["admin", "--data", data, "user", "set", "ravi", "--email", "not an address"])
        #expect(badEmail.status == 64)
        #expect(badEmail.stderr.contains("e-mail"))
        let taken = try device.run(["admin", "--data", data, "user", "set", "ravi", "--email", "MEI@example.org"])
        #expect(taken.status != 0)

        // what the store now has
        var logger = Logger(label: "test.admin-users")
        logger.logLevel = .warning
        let store = try SQLiteRecordStore(directory: URL(fileURLWithPath: data), logger: logger)
        defer { Task { try? await store.close() } }
        let admin = RecordsAdmin(store: store)
        let identities = try await admin.setUser("mei", .init())
        #expect(identities.isEmpty)
        let undiscoverable = try device.run(["admin", "--data", data, "user", "set", "mei", "--undiscoverable", container, "--family-name", ""])
        #expect(undiscoverable.status == 0)
        #expect(undiscoverable.stdout.contains("\(recordName) undiscoverable"))
        let after = try await admin.setUser("mei", .init(discoverable: [container: false]))
        #expect(after.first?.nameComponents.givenName == "Mei")
        #expect(after.first?.nameComponents.familyName == nil)
        #expect(after.first?.nameComponents.nickname == "mc")
        #expect(after.first?.account.email == "mei@example.org")
    }

    @Test func serveChecksItsRateLimitFlags() throws {
        let device = Device()
        let bad = try device.run(["serve", "--rate-limit", "fast", "--port", "0"])
        #expect(bad.status == 64)
        #expect(bad.stderr.contains("--rate-limit"))
        #expect(try device.run(["serve", "--burst", "0", "--port", "0"]).status == 64)
    }

    /// Issue 24, finding 10: listing and revoking tokens, changing a password, disabling an
    /// account, as an administrator scripts them.
    @Test func userTokensRevokePasswordAndDisable() async throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        func admin(_ arguments: [String], input: String? = nil) throws -> UbiqRun {
            try device.run(["admin", "--data", data, "user"] + arguments, input: input)
        }
        let first = try admin(["add", "mei", "--password-stdin"], input: "old password")
        #expect(first.status == 0, "\(first)")
        let web = first.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try admin(["token", "mei", "--device"]).status == 0)
        #expect(try admin(["token", "mei", "--container", "iCloud.org.example.Notes"]).status == 0)

        let listed = try admin(["tokens", "mei", "--json"])
        #expect(listed.status == 0, "\(listed)")
        let lines = listed.stdout.split(separator: "\n").compactMap { try? JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any] }
        #expect(lines.count == 3)
        #expect(lines.map { $0["kind"] as? String } == ["webAuth", "device", "webAuth"])
        #expect(lines.map { $0["container"] as? String } == [nil, nil, "iCloud.org.example.Notes"])
        #expect(!listed.stdout.contains(web))  // never the token itself
        let session = try #require(lines.last?["session"] as? String)

        let one = try admin(["revoke", "mei", "--session", session])
        #expect(one.status == 0, "\(one)")
        #expect(one.stdout.contains("revoked 1 token of mei"))
        let leaked = try admin(["revoke", "mei", "--token-stdin"], input: web + "\n")
        #expect(leaked.stdout.contains("revoked 1 token"), "\(leaked)")
        #expect(try admin(["tokens", "mei"]).stdout.split(separator: "\n").count == 1)

        // errors say which argument and what was expected; nothing is revoked by a bad one
        let none = try admin(["revoke", "mei"])
        #expect(none.status == 64)
        #expect(none.stderr.contains("--all, --session ID or --token-stdin"))
        let short = try admin(["revoke", "mei", "--session", "ab"])
        #expect(short.status == 64)
        #expect(short.stderr.contains("at least 8"))
        let unknown = try admin(["revoke", "mei", "--session", "0123456789abcdef"])
        #expect(unknown.status == 1)
        #expect(unknown.stderr.contains("no session"))
        #expect(try admin(["token", "mei", "--device", "--container", "iCloud.x"]).status == 64)

        let password = try admin(["password", "mei", "--password-stdin"], input: "new password")
        #expect(password.status == 0, "\(password)")
        #expect(password.stdout.contains("changed the password of mei; revoked 1 token"))
        #expect(try admin(["password", "mei"]).status == 64)

        #expect(try admin(["token", "mei"]).status == 0)
        let disabled = try admin(["disable", "mei", "--json"])
        #expect(disabled.stdout.contains("\"disabled\":true"), "\(disabled)")
        #expect(disabled.stdout.contains("\"revoked\":1"))
        #expect(try admin(["enable", "mei"]).stdout.contains("enabled mei"))
        #expect(try admin(["disable", "nobody"]).status == 1)

        // what the store now has: the new password, enabled
        var logger = Logger(label: "test.admin-sessions")
        logger.logLevel = .warning
        let store = try SQLiteRecordStore(directory: URL(fileURLWithPath: data), logger: logger)
        defer { Task { try? await store.close() } }
        let records = RecordsAdmin(store: store)
        #expect(try await records.signInDevice(user: "mei", password: "new password") != nil)
        #expect(try await records.signInDevice(user: "mei", password: "old password") == nil)
    }
}
