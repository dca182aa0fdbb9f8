// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// The CloudKitAtlas sample (Apple's tour of the CloudKit API, through the public Swift client)
/// as a real process against `ubiq serve` on SQLite: every step passes, twice in a row.
@Suite("CloudKitAtlas against ubiq serve")
struct CloudKitAtlasTests {
    /// Every step the sample prints, in order.
    static let steps = [
        "user-record-id", "user-record", "caller-identity",
        "save-record", "fetch-record", "update-record",
        "query-records", "query-equality", "query-dynamic-key", "query-comparison", "query-near", "query-tokens", "query-compound",
        "subscription-save", "subscription-fetch", "subscription-notification",
        "zone-create", "zone-changes", "zone-changes-token",
        "reference-save", "reference-query", "reference-cascade-delete",
        "asset-save", "asset-download",
        "discoverability", "discover-email",
        "cleanup",
    ]

    @Test("every operation of the sample passes, in text and in JSON, and the run can be repeated")
    func everyStepPasses() throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        let container = "iCloud.org.example.Atlas"
        let added = try device.run(["admin", "--data", data, "container", "add", container])
        #expect(added.status == 0, "\(added)")
        let apiToken = added.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let mei = try device.run(["admin", "--data", data, "user", "add", "mei", "--email", "mei@example.org"])
        #expect(mei.status == 0, "\(mei)")
        let webToken = mei.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        // another user, made discoverable by the administrator, for --discover-email
        #expect(try device.run(["admin", "--data", data, "user", "add", "ravi", "--email", "ravi@example.org"]).status == 0)
        let ravi = try device.run(["admin", "--data", data, "user", "set", "ravi", "--given-name", "Ravi", "--discoverable", container])
        #expect(ravi.status == 0, "\(ravi)")

        let server = try ServeRig.startServer(device, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let connection = ["--server", server.url, "--container", container, "--api-token", apiToken, "--web-auth-token", webToken]

        // text: `ok STEP: DETAIL` for every step; the caller discovers themself
        let text = try device.start(Binaries.atlas, connection)
        let textStatus = text.wait(seconds: 180)
        let lines = text.output
        #expect(textStatus == 0, "\(lines.joined(separator: "\n"))")
        #expect(lines.count == Self.steps.count, "\(lines.joined(separator: "\n"))")
        for (step, line) in zip(Self.steps, lines) {
            #expect(line.hasPrefix("ok \(step): "), "\(line)")
        }
        #expect(lines.first { $0.hasPrefix("ok discover-email: ") }?.contains("mei@example.org") == true)

        // JSON lines, again on the same server (everything of the first run was deleted)
        let json = try device.start(Binaries.atlas, connection + ["--json", "--discover-email", "RAVI@example.org"])
        let jsonStatus = json.wait(seconds: 180)
        #expect(jsonStatus == 0, "\(json.output.joined(separator: "\n"))")
        let objects = try json.output.map { line in
            try #require(try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any], "\(line)")
        }
        #expect(objects.compactMap { $0["step"] as? String } == Self.steps)
        #expect(objects.allSatisfy { ($0["ok"] as? Bool) == true }, "\(json.output.joined(separator: "\n"))")
        let discovered = objects.first { $0["step"] as? String == "discover-email" }?["detail"] as? String
        #expect(discovered?.contains("(Ravi)") == true, "\(discovered ?? "no discover-email line")")
    }

    @Test("a bad command line exits 64 naming the argument; a failing step exits 1")
    func commandLineAndFailures() throws {
        let device = Device()
        let missing = try device.start(Binaries.atlas, ["--server", "http://127.0.0.1:1", "--container", "iCloud.x", "--api-token", "t"])
        #expect(missing.wait(seconds: 30) == 64)
        let badURL = try device.start(Binaries.atlas, ["--server", "not a url"])
        #expect(badURL.wait(seconds: 30) == 64)
        // nothing listens on port 1: every step fails, and says why
        let unreachable = try device.start(Binaries.atlas, ["--server", "http://127.0.0.1:1", "--container", "iCloud.x",
                                                            "--api-token", "t", "--web-auth-token", "w"])
        #expect(unreachable.wait(seconds: 120) == 1)
        #expect(unreachable.output.first?.hasPrefix("FAIL user-record-id: ") == true, "\(unreachable.output)")
        #expect(unreachable.output.contains { $0.hasPrefix("FAIL fetch-record: skipped: needs save-record") }, "\(unreachable.output)")
    }
}
