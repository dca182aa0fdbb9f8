// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// The app containers' documents as subfolders of the sync folder, with real processes: two
/// devices of one account, a `ubiq serve`, documents written through an app's container on one
/// device and through the folder's link on the other. Every wait is a hang guard.
@Suite(.serialized) struct AccountSyncAppsTests {
    /// An app container's `Documents/` on `device`.
    static func documents(_ device: SignedInDevice, _ identifier: String) -> URL {
        device.device.root.appendingPathComponent("data/ubiquity/containers")
            .appendingPathComponent(identifier.replacingOccurrences(of: ".", with: "~")).appendingPathComponent("Documents")
    }

    static func write(_ text: String, to url: URL) throws {
        try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
        try Data(text.utf8).write(to: url)
    }

    static func read(_ url: URL) -> String? { (try? Data(contentsOf: url)).map { String(decoding: $0, as: UTF8.self) } }

    static func link(_ url: URL) -> String? { try? FileManager.default.destinationOfSymbolicLink(atPath: url.path) }

    /// Starts the daemon of `device` with its standard error in `log` (to read what it reports).
    static func startDaemon(_ device: SignedInDevice, log: URL, pollInterval: Int = 2) throws {
        let command = "exec '\(Binaries.ubiq.path)' daemon --log-level warning --sync-poll-interval \(pollInterval) 2>>'\(log.path)'"
        let daemon = try device.device.start(URL(fileURLWithPath: "/bin/sh"), ["-c", command])
        guard daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil else {
            daemon.kill()
            throw DeviceError.didNotStart("ubiq daemon")
        }
        device.process.set(daemon)
    }

    /// The kernel tells (issue 25): with the polls an hour apart, a container an app makes on
    /// this disk gets its link in the sync folder, heard of through the index's watcher.
    @Test func aNewContainerIsSeenWithoutPolling() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw-mei").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let a = SignedInDevice()
        try a.login(server.url, user: "mei", password: "pw-mei")
        try Self.startDaemon(a, log: a.device.root.appendingPathComponent("daemon.log"), pollInterval: 3600)
        try Self.write("first", to: a.folder.appendingPathComponent("top.txt"))
        #expect(SyncRig.eventually("A syncs") { (try? a.device.run(["status", a.folder.appendingPathComponent("top.txt").path]).stdout)?.contains("uploaded") == true })
        let fresh = "iCloud.com.example.Fresh"
        try Self.write("fresh", to: Self.documents(a, fresh).appendingPathComponent("fresh.txt"))
        #expect(SyncRig.eventually("the new container's link is in A's folder", seconds: 60) {
            Self.link(a.folder.appendingPathComponent("Fresh")) == Self.documents(a, fresh).path
        })
    }

    @Test func appContainersAreSubfoldersOfTheSyncFolderOnEveryDevice() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw-mei").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let host = URL(string: server.url)!.host!
        let sketch = "iCloud.com.example.Sketch", notes = "iCloud.com.example.Notes", later = "iCloud.com.example.Later"

        let a = SignedInDevice(), b = SignedInDevice()
        // on A, apps wrote before the daemon ran; the user has a folder of an app's name; a
        // container is broken (its Documents is a file)
        try Self.write("from A", to: Self.documents(a, sketch).appendingPathComponent("drawing.txt"))
        try Self.write("app notes", to: Self.documents(a, notes).appendingPathComponent("list.txt"))
        try Self.write("user's notes", to: a.folder.appendingPathComponent("Notes/mine.txt"))
        try Self.write("not a folder", to: Self.documents(a, "iCloud.com.example.Broken"))
        for device in [a, b] { try device.login(server.url, user: "mei", password: "pw-mei") }
        // a bad setting is named
        let bad = try a.device.run(["daemon"], extraEnvironment: ["UBIQUITY_APP_FOLDERS": "maybe"])
        #expect(bad.status != 0 && bad.stderr.contains("UBIQUITY_APP_FOLDERS='maybe'"), "\(bad.stderr)")
        let log = a.device.root.appendingPathComponent("daemon.log")
        try Self.startDaemon(a, log: log)
        try b.startDaemon()

        // B: the app's documents in its container and under the link, without the app running there
        #expect(SyncRig.eventually("B has A's drawing under Sketch/") { b.file("Sketch/drawing.txt") == "from A" })
        #expect(Self.read(Self.documents(b, sketch).appendingPathComponent("drawing.txt")) == "from A")
        #expect(Self.link(b.folder.appendingPathComponent("Sketch")) == Self.documents(b, sketch).path)
        // the name clash: the user's folder keeps the name on both devices, the app's is qualified
        #expect(Self.link(a.folder.appendingPathComponent("Notes (com.example.Notes)")) == Self.documents(a, notes).path)
        #expect(Self.link(a.folder.appendingPathComponent("Notes")) == nil)
        #expect(SyncRig.eventually("B has the user's Notes folder and the app's notes beside it") {
            b.file("Notes/mine.txt") == "user's notes" && b.file("Notes (com.example.Notes)/list.txt") == "app notes"
        })
        #expect(Self.link(b.folder.appendingPathComponent("Notes")) == nil)
        #expect(Self.link(b.folder.appendingPathComponent("Notes (com.example.Notes)")) == Self.documents(b, notes).path)

        // an edit through B's link goes back to A's container
        try Self.write("from B", to: b.folder.appendingPathComponent("Sketch/drawing.txt"))
        #expect(SyncRig.eventually("A's container has B's edit") {
            Self.read(Self.documents(a, sketch).appendingPathComponent("drawing.txt")) == "from B"
        })
        #expect(a.file("Sketch/drawing.txt") == "from B")
        // a container an app makes while the daemons run
        try Self.write("later", to: Self.documents(a, later).appendingPathComponent("later.txt"))
        #expect(SyncRig.eventually("B has the new app's document") { b.file("Later/later.txt") == "later" })
        // the drive's own files are unaffected, and ubiq status works through the link
        try Self.write("drive", to: a.folder.appendingPathComponent("top.txt"))
        #expect(SyncRig.eventually("B has the drive's file") { b.file("top.txt") == "drive" })
        #expect(SyncRig.eventually("B's status through the link says uploaded") {
            (try? b.device.run(["status", b.folder.appendingPathComponent("Sketch/drawing.txt").path]).stdout)?.contains("uploaded") == true
        })
        // the folder commands take paths through the link (`ubiq ls FOLDER/Sketch` itself shows the link)
        let listing = try b.device.run(["ls", "-l", b.folder.appendingPathComponent("Sketch/drawing.txt").path])
        #expect(listing.status == 0 && listing.stdout.contains("drawing.txt"), "\(listing.stdout) \(listing.stderr)")
        #expect(try b.device.run(["cat", "Sketch/drawing.txt", "--folder", b.folder.path]).stdout == "from B")
        // B's daemon started again takes its links back as links (never uploads them)
        let stopped = b.process.take()
        stopped?.kill(SIGTERM)
        _ = stopped?.wait(seconds: 30)
        try b.startDaemon()
        try Self.write("after B's restart", to: Self.documents(a, sketch).appendingPathComponent("restart.txt"))
        #expect(SyncRig.eventually("B has the app's new document after its restart") { b.file("Sketch/restart.txt") == "after B's restart" })
        try Self.write("drive again", to: b.folder.appendingPathComponent("top2.txt"))
        #expect(SyncRig.eventually("A has B's drive file") { a.file("top2.txt") == "drive again" })
        // the links were never sent as drive records: each device has its own, and nothing was
        // moved aside for a downloaded item of a link's name
        for device in [a, b] {
            let names = Set((try? FileManager.default.contentsOfDirectory(atPath: device.folder.path)) ?? [])
            #expect(names.isSuperset(of: ["Sketch", "Later", "Notes", "Notes (com.example.Notes)", "top.txt", "top2.txt"]))
            #expect(!names.contains { $0.hasPrefix("Sketch (") || $0.hasPrefix("Later (") || $0.contains("conflicted") })
            #expect(Self.link(device.folder.appendingPathComponent("Sketch")) == Self.documents(device, sketch).path)
        }
        // the broken container was reported, and did not stop the others
        #expect(SyncRig.eventually("A reported the broken container") {
            (Self.read(log) ?? "").contains("an app container cannot be synced") && (Self.read(log) ?? "").contains("Broken")
        })

        // signing out keeps A's app documents aside with the drive's, as folders of their names
        #expect(try a.device.run(["account", "logout"]).status == 0)
        let aside = a.home.appendingPathComponent("Ubiquity (mei on \(host))")
        #expect(SyncRig.eventually("A's app documents are kept aside") {
            Self.read(aside.appendingPathComponent("Sketch/drawing.txt")) == "from B"
                && Self.read(aside.appendingPathComponent("Notes (com.example.Notes)/list.txt")) == "app notes"
        })
        #expect(Self.read(aside.appendingPathComponent("Notes/mine.txt")) == "user's notes")
        #expect(Self.read(aside.appendingPathComponent("Later/later.txt")) == "later")
        #expect(Self.link(aside.appendingPathComponent("Sketch")) == nil)
        #expect(SyncRig.eventually("A's app container is empty for the next account") {
            ((try? FileManager.default.contentsOfDirectory(atPath: Self.documents(a, sketch).path)) ?? ["?"]).filter { !$0.hasPrefix(".ubiquity-") }.isEmpty
        })
        #expect(Self.link(a.folder.appendingPathComponent("Sketch")) == nil)
        // nothing was deleted on the server: a new device of the account gets everything
        let c = SignedInDevice()
        try c.login(server.url, user: "mei", password: "pw-mei")
        try c.startDaemon()
        #expect(SyncRig.eventually("C has the apps' documents") {
            c.file("Sketch/drawing.txt") == "from B" && c.file("Later/later.txt") == "later" && c.file("Notes (com.example.Notes)/list.txt") == "app notes"
        })
        #expect(b.file("Sketch/drawing.txt") == "from B")
    }

    @Test func aDeclaredDisplayNameNamesTheAppsFolderOnEveryDevice() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "ren", "--password-stdin"], input: "pw-ren").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }
        let sketch = "iCloud.com.example.Sketch"
        let a = SignedInDevice(), b = SignedInDevice()
        try Self.write("drawn", to: Self.documents(a, sketch).appendingPathComponent("drawing.txt"))
        // the app declares its name (Apple's NSUbiquitousContainerName) through the CLI
        let set = try a.device.run(["container", "name", sketch, "--set", "My Sketches", "--container", sketch])
        #expect(set.status == 0, "\(set.stderr)")
        let bad = try a.device.run(["container", "name", sketch, "--set", "a/b", "--container", sketch])
        #expect(bad.status != 0 && bad.stderr.contains("--set") && bad.stderr.contains("'/'"), "\(bad.stderr)")
        #expect(try a.device.run(["container", "name", sketch, "--container", sketch]).stdout == "My Sketches\n")
        for device in [a, b] { try device.login(server.url, user: "ren", password: "pw-ren") }
        try a.startDaemon()
        try b.startDaemon()
        #expect(SyncRig.eventually("A shows the app's folder by its name") {
            Self.link(a.folder.appendingPathComponent("My Sketches")) == Self.documents(a, sketch).path
        })
        #expect(SyncRig.eventually("B shows the app's folder by the name A's app declared") {
            b.file("My Sketches/drawing.txt") == "drawn"
        })
        #expect(Self.link(b.folder.appendingPathComponent("Sketch")) == nil)
        // a new name while the daemons run: both folders follow; the documents stay
        #expect(try a.device.run(["container", "name", sketch, "--set", "Drawings", "--container", sketch]).status == 0)
        #expect(SyncRig.eventually("B's folder follows the new name") {
            b.file("Drawings/drawing.txt") == "drawn" && Self.link(b.folder.appendingPathComponent("My Sketches")) == nil
        })
        #expect(SyncRig.eventually("A's folder follows the new name") {
            a.file("Drawings/drawing.txt") == "drawn" && Self.link(a.folder.appendingPathComponent("My Sketches")) == nil
        })
        // nothing named after a link was uploaded as a drive item
        for device in [a, b] {
            let names = Set((try? FileManager.default.contentsOfDirectory(atPath: device.folder.path)) ?? [])
            #expect(!names.contains { $0.hasPrefix("My Sketches") || $0.hasPrefix("Sketch") }, "\(names)")
        }
    }
}
