// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
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
}
