// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// The daemon syncs for the signed-in account (`ubiq account login`, no tokens on its command
/// line): documents and the key-value store reach another device of the account; switching
/// accounts keeps the old account's documents aside and empties the key-value store; signing
/// out stops the sync. Real processes; every wait is a hang guard, never a timing assertion.
@Suite(.serialized) struct AccountSyncTests {
    @Test func theDaemonFollowsTheSignedInAccount() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw-mei").status == 0)
        #expect(try admin.run(["admin", "--data", data, "user", "add", "ravi", "--password-stdin"], input: "pw-ravi").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let host = URL(string: server.url)!.host!

        let a = SignedInDevice(), b = SignedInDevice()
        // hooks: A hears of its uploads, B of its downloads
        let uploads = a.device.root.appendingPathComponent("uploads.log"), downloads = b.device.root.appendingPathComponent("downloads.log")
        try HookRunnerTests.script(a.device.root.appendingPathComponent("config/ubiquity/hooks/did-upload"), "echo \"$UBIQUITY_PATH\" >> '\(uploads.path)'")
        try HookRunnerTests.script(b.device.root.appendingPathComponent("config/ubiquity/hooks/did-download"), "echo \"$UBIQUITY_PATH\" >> '\(downloads.path)'")
        func lines(_ file: URL) -> [String] { ((try? String(contentsOf: file, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init) }
        // not signed in: the daemon runs and syncs nothing
        try a.startDaemon()
        try a.login(server.url, user: "mei", password: "pw-mei")
        try b.login(server.url, user: "mei", password: "pw-mei")
        try b.startDaemon()
        // A's daemon picks the account up as it signs in
        #expect(SyncRig.eventually("A's folder exists") { FileManager.default.fileExists(atPath: a.folder.path) })
        try Data("from A".utf8).write(to: a.folder.appendingPathComponent("notes.txt"))
        #expect(SyncRig.eventually("B has A's note") { b.file("notes.txt") == "from A" })
        #expect(SyncRig.eventually("A's did-upload hook ran") { lines(uploads).contains { $0.hasSuffix("/Ubiquity/notes.txt") } })
        #expect(SyncRig.eventually("B's did-download hook ran") { lines(downloads).contains { $0.hasSuffix("/Ubiquity/notes.txt") } })

        // the key-value store through the daemons
        #expect(try a.device.run(["kv", "set", "shared", "hello"]).status == 0)
        #expect(SyncRig.eventually("B's store has A's value") { (try? b.device.run(["kv", "get", "shared"]).stdout) == "hello\n" })

        // A switches to ravi: mei's documents are kept aside, the folder and the store start empty
        let aside = home(a).appendingPathComponent("Ubiquity (mei on \(host))")
        try a.login(server.url, user: "ravi", password: "pw-ravi")
        #expect(SyncRig.eventually("mei's documents are kept aside on A") { a.file("notes.txt", in: aside) == "from A" })
        #expect(SyncRig.eventually("A's folder is ravi's, empty") {
            FileManager.default.fileExists(atPath: a.folder.path) && a.file("notes.txt") == nil
        })
        #expect(SyncRig.eventually("A's store is ravi's, empty") { (try? a.device.run(["kv", "get", "shared"]).status) == 1 })
        // ravi's document stays with ravi; mei's stay on the server for B
        try Data("ravi's".utf8).write(to: a.folder.appendingPathComponent("ravi.txt"))
        #expect(try a.device.run(["kv", "set", "shared", "ravi's value"]).status == 0)
        try Data("from B".utf8).write(to: b.folder.appendingPathComponent("later.txt"))
        #expect(SyncRig.eventually("A does not get mei's later note, B keeps mei's") { b.file("notes.txt") == "from A" })
        // a third device of ravi's gets ravi's things only
        let c = SignedInDevice()
        try c.login(server.url, user: "ravi", password: "pw-ravi")
        try c.startDaemon()
        #expect(SyncRig.eventually("C has ravi's document") { c.file("ravi.txt") == "ravi's" })
        #expect(c.file("notes.txt") == nil && c.file("later.txt") == nil)
        #expect(a.file("later.txt") == nil)
        #expect(b.file("ravi.txt") == nil)

        // signing out stops the sync and keeps ravi's documents aside too
        #expect(try a.device.run(["account", "logout"]).status == 0)
        let raviAside = home(a).appendingPathComponent("Ubiquity (ravi on \(host))")
        #expect(SyncRig.eventually("ravi's documents are kept aside on A") { a.file("ravi.txt", in: raviAside) == "ravi's" })
    }

    func home(_ device: SignedInDevice) -> URL { device.home }

    /// Issue 25, accounts that cannot fail silently: when the device's token stops working, the
    /// daemon's passes fail and `ubiq doctor` fails with the server's error; signing in again
    /// (same account, new token) takes effect in the running daemon, and what was written
    /// meanwhile reaches the other device.
    @Test func aNewSignInReachesTheRunningDaemonAndDoctorTellsFailingPasses() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw-mei").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let a = SignedInDevice(), b = SignedInDevice()
        try a.login(server.url, user: "mei", password: "pw-mei")
        try b.login(server.url, user: "mei", password: "pw-mei")
        try a.startDaemon()
        try b.startDaemon()
        try Data("first".utf8).write(to: a.folder.appendingPathComponent("first.txt"))
        #expect(SyncRig.eventually("B has the first note") { b.file("first.txt") == "first" })
        func doctor() -> (status: Int32, sync: String) {
            guard let run = try? a.device.run(["doctor", "--offline", "--folder", a.folder.path, "--json"]) else { return (-1, "") }
            return (run.status, run.stdout.split(separator: "\n").first { $0.contains(#""check":"sync""#) }.map(String.init) ?? "")
        }
        #expect(SyncRig.eventually("doctor says A syncs") { doctor().sync.contains(#""level":"ok""#) })

        // A's token stops working (a token the server never issued, for the same account)
        let accountFile = UbiquityAccountFile(url: a.device.root.appendingPathComponent("config/ubiquity/account.json"))
        var account = try #require(try accountFile.read())
        let good = account.deviceToken
        account.deviceToken = "ubqdev_" + String(repeating: "A", count: 43)
        try accountFile.write(account)
        #expect(SyncRig.eventually("doctor fails A's sync with the server's error", seconds: 60) {
            let (status, sync) = doctor()
            return status == 1 && sync.contains(#""level":"failure""#) && sync.contains("passes") && sync.contains("not valid")
        }, "\(doctor())")
        try Data("meanwhile".utf8).write(to: a.folder.appendingPathComponent("meanwhile.txt"))

        // signing in again: the running daemon takes the new token, and the note goes through
        try a.login(server.url, user: "mei", password: "pw-mei")
        #expect(try accountFile.read()?.deviceToken != good)
        #expect(SyncRig.eventually("B gets what A wrote while its token failed", seconds: 60) { b.file("meanwhile.txt") == "meanwhile" })
        #expect(SyncRig.eventually("doctor says A syncs again") { doctor().sync.contains(#""level":"ok""#) })
    }

    /// A file the server refuses for good (over its asset size limit) is reported once through
    /// the upload-failed hook and not retried at every pass; once it changes to fit, it syncs.
    @Test func anUploadRefusedForGoodIsNotRetriedUntilTheFileChanges() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data], extra: ["--max-asset-size", "1K"])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let a = SignedInDevice(), b = SignedInDevice()
        let failures = a.device.root.appendingPathComponent("failures.log")
        try HookRunnerTests.script(a.device.root.appendingPathComponent("config/ubiquity/hooks/upload-failed"), "echo \"$UBIQUITY_PATH\" >> '\(failures.path)'")
        for device in [a, b] { try device.login(server.url, user: "mei", password: "pw") }
        try a.startDaemon()
        try b.startDaemon()
        // larger than the inline limit (64 KiB), so it travels as an asset, which the server refuses
        try Data(repeating: 7, count: 100 << 10).write(to: a.folder.appendingPathComponent("big.bin"))
        try Data("one".utf8).write(to: a.folder.appendingPathComponent("one.txt"))
        #expect(SyncRig.eventually("B has one.txt") { b.file("one.txt") == "one" })
        // more passes on A
        for name in ["two", "three"] {
            try Data(name.utf8).write(to: a.folder.appendingPathComponent(name + ".txt"))
            #expect(SyncRig.eventually("B has \(name).txt") { b.file(name + ".txt") == name })
        }
        let reported = ((try? String(contentsOf: failures, encoding: .utf8)) ?? "").split(separator: "\n").filter { $0.hasSuffix("/big.bin") }
        #expect(reported.count == 1)
        #expect(b.file("big.bin") == nil)
        // the error is in A's index, where metadata queries find it
        #expect(SyncRig.eventually("A's index has big.bin's upload error") {
            guard let run = try? a.device.run(["query", "NSMetadataUbiquitousItemUploadingErrorKey != nil", "--root", a.folder.path, "--json"]),
                  run.status == 0 else { return false }
            return run.stdout.contains("big.bin") && run.stdout.contains("\"uploadingError\"") && !run.stdout.contains("one.txt")
        })
        // changed to fit: it syncs
        try Data(repeating: 8, count: 512).write(to: a.folder.appendingPathComponent("big.bin"))
        #expect(SyncRig.eventually("B has the smaller big.bin") { b.file("big.bin")?.utf8.count == 512 })
    }
}
