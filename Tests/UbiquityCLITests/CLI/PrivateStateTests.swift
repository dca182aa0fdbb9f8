// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport

/// Issue 24, findings 7 and 8, with real processes: a daemon refuses a runtime folder another
/// user could write to (clear message, nothing served there), and a first run (daemon and local
/// server) leaves its state, the server's data included, reachable by this user only.
@Suite(.serialized) struct PrivateStateTests {
    @Test func aRuntimeFolderOpenToOthersIsRefused() throws {
        let a = SignedInDevice()
        let runtime = a.device.root.appendingPathComponent("run/ubiquity").path
        mkdir(runtime, 0o777)
        chmod(runtime, 0o777)
        let daemon = try a.device.run(["daemon", "--log-level", "warning"], timeout: 60)
        #expect(daemon.status != 0, "\(daemon)")
        #expect(daemon.stderr.contains("writable by others"), "\(daemon)")
        #expect(!FileManager.default.fileExists(atPath: runtime + "/control.sock"))
    }

    @Test func aFirstRunsStateIsPrivate() throws {
        let a = SignedInDevice()
        let daemon = try a.device.start(Binaries.ubiq, ["daemon", "--local-server", "--local-server-port", "0", "--local-user", "mei",
                                                        "--log-level", "warning"])
        a.process.set(daemon)
        #expect(daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil, "\(daemon.output)")
        try Data("private".utf8).write(to: a.folder.appendingPathComponent("note.txt"))
        #expect(SyncRig.eventually("uploaded") {
            guard let run = try? a.device.run(["status", a.folder.appendingPathComponent("note.txt").path, "--json"]),
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else { return false }
            return json["sync"] as? String == "uploaded"
        })
        // every file of the daemon's and the server's state: no other user can reach it (a
        // private folder on the way, or the file itself private)
        var open: [String] = []
        for top in ["state/ubiquity", "config/ubiquity", "data/ubiquity/server"] {
            let root = a.device.root.appendingPathComponent(top).path
            var st = stat()
            guard lstat(root, &st) == 0 else { continue }
            if st.st_mode & 0o077 != 0 { open.append("\(top) \(String(st.st_mode & 0o777, radix: 8))") }
        }
        for file in ["state/ubiquity/index.sqlite", "data/ubiquity/server/records.sqlite"] {
            var st = stat()
            let path = a.device.root.appendingPathComponent(file).path
            if lstat(path, &st) == 0, st.st_mode & 0o077 != 0 { open.append("\(file) \(String(st.st_mode & 0o777, radix: 8))") }
        }
        #expect(open.isEmpty, "reachable by others: \(open)")
    }
}
