// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// `--json` on the commands that print a result (the consistency audit of issue 7).
@Suite("CLI JSON output")
struct CLIJSONTests {
    func object(_ run: UbiqRun) throws -> [String: Any] {
        try #require(run.status == 0, "\(run)")
        return try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
    }

    @Test("exclude, include and account logout print JSON objects")
    func documentAndAccount() throws {
        let device = Device()
        let file = device.file("cache.db", "x")
        let exclude = try object(try device.run(["exclude", file.path, "--json"]))
        #expect(exclude["path"] as? String == file.path && exclude["excluded"] as? Bool == true, "\(exclude)")
        let include = try object(try device.run(["include", file.path, "--json"]))
        #expect(include["path"] as? String == file.path && include["excluded"] as? Bool == false, "\(include)")
        let logout = try object(try device.run(["account", "logout", "--json"]))
        #expect(logout["signedOut"] as? Bool == false, "\(logout)")
    }

    @Test("admin commands print JSON objects with --json; the secret is still printed once")
    func admin() throws {
        let device = Device()
        let data = device.root.appendingPathComponent("srv").path
        let container = "iCloud.com.example.Notes"
        let add = try object(try device.run(["admin", "--data", data, "container", "add", container, "--json"]))
        #expect(Set(add.keys) == ["container", "apiToken"] && add["container"] as? String == container, "\(add)")
        #expect((add["apiToken"] as? String)?.isEmpty == false)
        let list = try object(try device.run(["admin", "--data", data, "container", "list", "--json"]))
        #expect(list["container"] as? String == container, "\(list)")
        let user = try object(try device.run(["admin", "--data", data, "user", "add", "mei", "--json"]))
        #expect(Set(user.keys) == ["user", "webAuthToken"], "\(user)")
        let token = try object(try device.run(["admin", "--data", data, "user", "token", "mei", "--device", "--json"]))
        #expect(token["kind"] as? String == "device" && token["user"] as? String == "mei", "\(token)")
        let role = try object(try device.run(["admin", "--data", data, "role", "add", container, "Moderator", "--json"]))
        #expect(role["role"] as? String == "Moderator" && role["environment"] as? String == "development", "\(role)")
        let show = try object(try device.run(["admin", "--data", data, "role", "show", container, "--json"]))
        #expect(Set(show.keys) == ["container", "environment", "roles", "permissions"], "\(show)")
        let gc = try object(try device.run(["admin", "--data", data, "gc", "--json"]))
        #expect(Set(gc.keys) == ["assetsDeleted", "chunksDeleted", "bytesFreed", "uploadsDeleted", "packsCompacted"], "\(gc)")
    }
}
