// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// The server's history of the synced folder, with real processes (one `ubiq serve`, two
/// `ubiq daemon` devices) and the CLI: a file deleted on one device is in Recently Deleted on
/// the other (`ubiq trash list`), and restoring it (`ubiq trash restore`) puts it back on both;
/// an earlier version (`ubiq versions`, `ubiq restore --version`) comes back everywhere. Every
/// wait is a hang guard (120 s), never a timing assertion.
@Suite(.serialized) struct ServerHistoryTests {
    typealias Cloud = SyncRig.Cloud
    typealias SyncDevice = SyncRig.SyncDevice

    /// A history command on `device`, with the server options its daemon has.
    static func run(_ device: SyncDevice, _ arguments: [String]) throws -> UbiqRun {
        try device.device.run(arguments + ["--server", device.cloud.url, "--api-token=" + device.cloud.apiToken,
                                           "--web-auth-token=" + device.cloud.webToken])
    }

    static func json(_ run: UbiqRun) -> [String: Any]? {
        try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
    }

    @Test func aDeletedFileAndFolderComeBackOnEveryDevice() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("keep/notes.txt", "my notes")
        try a.write("keep/deeper/plan.txt", "the plan")
        #expect(SyncRig.eventually("B has the folder") { b.read("keep/deeper/plan.txt") == "the plan" })

        // B deletes one file, then the whole folder
        try FileManager.default.removeItem(at: b.url("keep/notes.txt"))
        #expect(SyncRig.eventually("A lost the file") { !a.exists("keep/notes.txt") }, "A:\n\(a.daemonOutput)\nB:\n\(b.daemonOutput)")
        let listed = try Self.run(a, ["trash", "list", "--json"])
        #expect(listed.status == 0, "\(listed)")
        let items = Self.json(listed)?["items"] as? [[String: Any]] ?? []
        #expect(items.first?["path"] as? String == "keep/notes.txt", "\(listed.stdout)")
        #expect(items.first?["deletedBy"] as? String == "beta", "\(listed.stdout)")

        // restored by path from A: back on both, as it was
        let restored = try Self.run(a, ["trash", "restore", "keep/notes.txt"])
        #expect(restored.status == 0, "\(restored)")
        #expect(SyncRig.eventually("the file is back on A and B") { a.read("keep/notes.txt") == "my notes" && b.read("keep/notes.txt") == "my notes" })
        #expect((Self.json(try Self.run(a, ["trash", "list", "--json"]))?["items"] as? [[String: Any]])?.isEmpty == true)

        try FileManager.default.removeItem(at: b.url("keep"))
        #expect(SyncRig.eventually("A lost the folder") { !a.exists("keep") })
        var folder: [String: Any]?
        #expect(SyncRig.eventually("the folder is in Recently Deleted, with what it held") {
            let items = (try? Self.run(a, ["trash", "list", "--json"])).flatMap { Self.json($0)?["items"] as? [[String: Any]] } ?? []
            folder = items.first { $0["path"] as? String == "keep" }
            return items.count == 1 && folder?["contains"] as? Int == 3
        })
        let id = try #require(folder?["id"] as? Int)
        #expect(try Self.run(b, ["trash", "restore", String(id)]).status == 0)
        for device in [a, b] {
            #expect(SyncRig.eventually("\(device.name) has the folder back") {
                device.read("keep/notes.txt") == "my notes" && device.read("keep/deeper/plan.txt") == "the plan"
            })
        }

        // bad input: an unknown id or path is refused, and nothing changes
        let unknown = try Self.run(a, ["trash", "restore", "no/such/file.txt"])
        #expect(unknown.status != 0)
        #expect(unknown.stderr.contains("not in Recently Deleted"), "\(unknown)")
        #expect(try Self.run(a, ["trash", "empty"]).status != 0)  // needs --yes
    }

    @Test func anEarlierVersionComesBackOnEveryDevice() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("essay.txt", "first draft")
        #expect(SyncRig.eventually("B has the first draft") { b.read("essay.txt") == "first draft" })
        try b.write("essay.txt", "second draft, from B")
        #expect(SyncRig.eventually("A has the second draft") { a.read("essay.txt") == "second draft, from B" })

        var server: [[String: Any]] = []
        #expect(SyncRig.eventually("the server lists both versions") {
            let run = try? Self.run(a, ["versions", a.url("essay.txt").path, "--json", "--folder", a.folder.path])
            server = run.flatMap { Self.json($0)?["server"] as? [[String: Any]] } ?? []
            return server.count == 2
        })
        #expect(server.first?["current"] as? Bool == true)
        #expect(server.first?["savedBy"] as? String == "beta")
        let first = try #require(server.last?["id"] as? Int)

        let restore = try Self.run(a, ["restore", a.url("essay.txt").path, "--version", String(first), "--folder", a.folder.path])
        #expect(restore.status == 0, "\(restore)")
        for device in [a, b] {
            #expect(SyncRig.eventually("\(device.name) has the first draft again") { device.read("essay.txt") == "first draft" })
        }
        // the draft it replaced is kept: three versions now
        let after = try Self.run(b, ["versions", b.url("essay.txt").path, "--json", "--folder", b.folder.path])
        #expect((Self.json(after)?["server"] as? [[String: Any]])?.count == 3, "\(after)")

        // a version of another file is refused
        let wrong = try Self.run(a, ["restore", a.url("essay.txt").path, "--version", "999999", "--folder", a.folder.path])
        #expect(wrong.status != 0)
        #expect(a.read("essay.txt") == "first draft")
    }
}
