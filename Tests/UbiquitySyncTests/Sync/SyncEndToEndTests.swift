// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync
import UbiquityCloudKit

/// Sync end to end with real processes: one `ubiq serve` (SQLite, port 0) and two `ubiq daemon`
/// devices, each with its own folder, state, runtime folder and sockets. Every wait is a
/// generous hang guard (120 s), never a timing assertion.
@Suite(.serialized) struct SyncEndToEndTests {
    typealias Cloud = SyncRig.Cloud
    typealias SyncDevice = SyncRig.SyncDevice

    @Test func createModifyRenameDeleteReachTheOtherDevice() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()

        try a.write("hello.txt", "hello")
        try a.write("docs/sub/notes.md", "# notes")
        try a.write("empty", "")
        try a.write("with space & ünïcode.txt", "names")
        try FileManager.default.createSymbolicLink(atPath: a.url("link").path, withDestinationPath: "hello.txt")
        try a.write(".notes.md.swp", "editor junk")
        try a.write("backup~", "editor junk")
        #expect(SyncRig.eventually("B has A's new items") {
            b.read("hello.txt") == "hello" && b.read("docs/sub/notes.md") == "# notes" && b.read("empty") == ""
                && b.read("with space & ünïcode.txt") == "names"
                && (try? FileManager.default.destinationOfSymbolicLink(atPath: b.url("link").path)) == "hello.txt"
        })

        // a presenter of the file on B (through B's daemon) hears of the download
        let presenter = try b.device.present(b.url("hello.txt"))
        defer { presenter.kill() }
        try a.write("hello.txt", "hello, again")
        #expect(SyncRig.eventually("B has the edit") { b.read("hello.txt") == "hello, again" })
        #expect(presenter.waitForLine(containing: "\"didChange\"", seconds: 120) != nil, "\(presenter.output)")

        // permissions travel
        #expect(chmod(a.url("hello.txt").path, 0o600) == 0)
        #expect(SyncRig.eventually("B has the permissions") { FileStamp.of(b.url("hello.txt").path)?.mode == 0o600 })

        let before = try await cloud.items()
        try FileManager.default.moveItem(at: a.url("hello.txt"), to: a.url("greeting.txt"))
        try FileManager.default.moveItem(at: a.url("docs"), to: a.url("papers"))
        #expect(SyncRig.eventually("B has the renames") {
            b.read("greeting.txt") == "hello, again" && !b.exists("hello.txt") && b.read("papers/sub/notes.md") == "# notes" && !b.exists("docs")
        })
        let after = try await cloud.items()
        // a rename is a path update of the same record
        #expect(after["greeting.txt"]?.id == before["hello.txt"]?.id)
        #expect(after["papers/sub/notes.md"]?.id == before["docs/sub/notes.md"]?.id)
        #expect(after[".notes.md.swp"] == nil && after["backup~"] == nil, "editor files are never uploaded")

        try b.write("from-b.txt", "B wrote this")
        #expect(SyncRig.eventually("A has B's file") { a.read("from-b.txt") == "B wrote this" })
        #expect(SyncRig.eventually("ubiq status says it is uploaded") { b.syncStatus("from-b.txt") == "uploaded" && a.syncStatus("from-b.txt") == "uploaded" })
        // the daemon's index has the ubiquitous attributes (metadata queries see them)
        #expect(SyncRig.eventually("a metadata query sees it uploaded") {
            guard let run = try? a.device.run(["query", "kMDItemFSName == 'from-b.txt'", "--root", a.folder.path, "--json"]), run.status == 0,
                  let line = run.stdout.split(separator: "\n").first,
                  let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
            return json["isUploaded"] as? Bool == true && json["isUploading"] as? Bool == false
        })

        try FileManager.default.removeItem(at: a.url("papers"))
        try FileManager.default.removeItem(at: a.url("greeting.txt"))
        #expect(SyncRig.eventually("B has the deletes") { !b.exists("papers") && !b.exists("greeting.txt") && b.exists("from-b.txt") })
        #expect(await SyncRig.eventuallyAsync("the server has the deletes") { try await cloud.items()["greeting.txt"] == nil })
        a.stop()
        b.stop()
    }

    @Test func bothEditedKeepsTheServersVersionAndAConflictVersion() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("doc.txt", "base")
        #expect(SyncRig.eventually("B has the document") { b.read("doc.txt") == "base" })
        b.stop()

        try a.write("doc.txt", "from A")
        #expect(await SyncRig.eventuallyAsync("A uploaded its edit") { try await cloud.items()["doc.txt"]?.hash == SyncRig.sha("from A") })
        try b.write("doc.txt", "from B, offline")
        try b.start()
        #expect(SyncRig.eventually("B has the server's version") { b.read("doc.txt") == "from A" })
        var conflictURL: String?
        #expect(SyncRig.eventually("B keeps its own as a conflict version") {
            guard let run = try? b.device.run(["versions", b.url("doc.txt").path, "--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                  (json["conflicts"] as? Int) == 1,
                  let version = (json["versions"] as? [[String: Any]])?.first(where: { $0["conflict"] as? Bool == true }) else { return false }
            conflictURL = version["url"] as? String
            return version["device"] as? String == "beta"
        })
        #expect(conflictURL.flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } == "from B, offline")
        #expect(b.syncStatus("doc.txt") == "in conflict")
        func conflictsInIndex() -> Bool? {
            guard let run = try? b.device.run(["query", "NSMetadataUbiquitousItemHasUnresolvedConflictsKey == YES", "--root", b.folder.path]),
                  run.status == 0 else { return nil }
            return run.stdout.contains("doc.txt")
        }
        #expect(SyncRig.eventually("a metadata query sees the conflict") { conflictsInIndex() == true })
        // resolved (keeping the server's version): the index hears of it at the next pass
        let resolve = try b.device.run(["resolve", b.url("doc.txt").path, "--keep", "current"])
        #expect(resolve.status == 0, "\(resolve)")
        try b.write("nudge.txt", "a change makes a pass")
        #expect(SyncRig.eventually("the index no longer lists the conflict") { conflictsInIndex() == false })
        #expect(b.syncStatus("doc.txt") == "uploaded")
        #expect(try await cloud.items()["doc.txt"]?.hash == SyncRig.sha("from A"))
        #expect(a.read("doc.txt") == "from A")

        // delete versus edit keeps the edit: A deletes, B (stopped) edits; the edit comes back to A
        b.stop()
        try FileManager.default.removeItem(at: a.url("doc.txt"))
        #expect(await SyncRig.eventuallyAsync("A's delete reached the server") { try await cloud.items()["doc.txt"] == nil })
        try b.write("doc.txt", "B's edit survives the delete")
        try b.start()
        #expect(SyncRig.eventually("A has B's edit back") { a.read("doc.txt") == "B's edit survives the delete" })
        #expect(b.read("doc.txt") == "B's edit survives the delete")

        // deleted and created again under the same name while B is away: B gets the new file
        // (the new record is not taken for a duplicate of the deleted one)
        try a.write("again.txt", "first")
        #expect(SyncRig.eventually("B has again.txt") { b.read("again.txt") == "first" })
        b.stop()
        try FileManager.default.removeItem(at: a.url("again.txt"))
        #expect(await SyncRig.eventuallyAsync("A's delete reached the server") { try await cloud.items()["again.txt"] == nil })
        try a.write("again.txt", "second")
        #expect(await SyncRig.eventuallyAsync("A uploaded the new again.txt") { try await cloud.items()["again.txt"]?.hash == SyncRig.sha("second") })
        try b.start()
        #expect(SyncRig.eventually("B has the new file") { b.read("again.txt") == "second" })
        #expect(try await cloud.items()["again.txt"]?.hash == SyncRig.sha("second"))
        #expect(a.read("again.txt") == "second")

        // identical content on both sides is not a conflict
        b.stop()
        try a.write("same.txt", "same words")
        #expect(await SyncRig.eventuallyAsync("A uploaded same.txt") { try await cloud.items()["same.txt"] != nil })
        try b.write("same.txt", "same words")
        try b.start()
        try a.write("marker.txt", "after")
        #expect(SyncRig.eventually("B caught up") { b.read("marker.txt") == "after" })
        let versions = try b.device.run(["versions", b.url("same.txt").path, "--json"])
        #expect(!versions.stdout.contains("\"conflict\" : true") && !versions.stdout.contains("\"conflict\":true"), "\(versions.stdout)")
        #expect(try await cloud.items().keys.filter { $0 == "same.txt" }.count == 1)
        a.stop()
        b.stop()
    }

    @Test func excludedItemsAreNeverUploaded() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        // excluded before it enters the folder (the attribute moves with it)
        let outside = a.device.root.appendingPathComponent("secret.txt")
        try Data("secret".utf8).write(to: outside)
        try BackupExclusion.setExcluded(true, outside.path)
        try FileManager.default.moveItem(at: outside, to: a.url("secret.txt"))
        try a.write("shared.txt", "shared")
        #expect(SyncRig.eventually("B has shared.txt") { b.read("shared.txt") == "shared" })
        // excluded after it was uploaded: the record goes, both local files... A's stays
        #expect(try a.device.run(["exclude", a.url("shared.txt").path]).status == 0)
        #expect(SyncRig.eventually("B no longer has shared.txt") { !b.exists("shared.txt") })
        try a.write("marker.txt", "m")
        #expect(SyncRig.eventually("B has the marker") { b.read("marker.txt") == "m" })
        let items = try await cloud.items()
        #expect(items["secret.txt"] == nil && items["shared.txt"] == nil)
        #expect(!b.exists("secret.txt"))
        #expect(a.read("shared.txt") == "shared" && a.read("secret.txt") == "secret")
        #expect(a.syncStatus("secret.txt") == "excluded" && a.syncStatus("shared.txt") == "excluded")
        a.stop()
        b.stop()
    }

    @Test func theServerDownThenBackLosesNothing() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("before.txt", "before")
        #expect(SyncRig.eventually("B has before.txt") { b.read("before.txt") == "before" })
        cloud.stop()
        try a.write("during.txt", "written while the server was down")
        try b.write("from-b.txt", "B too")
        try a.write("before.txt", "edited while the server was down")
        try await Task.sleep(for: .milliseconds(500))  // let both daemons try and fail (not a timing assertion)
        try cloud.restart()
        #expect(SyncRig.eventually("B has A's changes") {
            b.read("during.txt") == "written while the server was down" && b.read("before.txt") == "edited while the server was down"
        })
        #expect(SyncRig.eventually("A has B's file") { a.read("from-b.txt") == "B too" })
        a.stop()
        b.stop()
    }

    @Test func syncFlagsAreChecked() throws {
        let device = Device()
        let cases: [([String], String)] = [
            (["--server", "ftp://example.org", "--api-token=t"], "--server"),
            (["--server", "http://127.0.0.1:1"], "--api-token"),
            (["--server", "http://127.0.0.1:1", "--api-token=t", "--sync-poll-interval", "0"], "--sync-poll-interval"),
            (["--server", "http://127.0.0.1:1", "--api-token=t", "--container", "not a container"], "--container"),
        ]
        for (arguments, flag) in cases {
            let run = try device.run(["daemon"] + arguments, extraEnvironment: ["UBIQUITY_API_TOKEN": ""], timeout: 60)
            #expect(run.status != 0, "\(run)")
            #expect(run.stderr.contains(flag), "\(run)")
        }
    }

    @Test func killedDaemonsConvergeAndASecondDaemonIsRefused() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()

        // a second daemon on A's folder (its own sockets and state) is refused
        let intruder = Device()
        let second = try intruder.run(a.arguments, timeout: 60)
        #expect(second.status != 0)
        #expect(second.stderr.contains("another daemon"), "\(second.stderr)")

        // files large enough that transfers are in flight when the daemons are killed
        let count = 40
        func content(_ index: Int) -> String { String(repeating: "content \(index) ", count: 20_000) }
        for index in 0..<count / 2 { try a.write("bulk/file-\(index).txt", content(index)) }
        _ = SyncRig.eventually("B has some of the files") { (0..<count / 2).contains { b.exists("bulk/file-\($0).txt") } }
        b.kill9()
        a.kill9()
        for index in count / 2..<count { try a.write("bulk/file-\(index).txt", content(index)) }
        try a.start()
        try b.start()
        _ = SyncRig.eventually("B has more of the files") { (count / 2..<count).contains { b.exists("bulk/file-\($0).txt") } }
        b.kill9()
        try b.start()
        #expect(SyncRig.eventually("B has every file") {
            (0..<count).allSatisfy { b.read("bulk/file-\($0).txt") == content($0) }
        })
        // each file is one record: nothing was uploaded twice as a second item
        #expect(await SyncRig.eventuallyAsync("the server has one record per file") {
            try await cloud.items().keys.filter { $0.hasPrefix("bulk/") }.count == count
        })
        #expect(try await cloud.items().keys.allSatisfy { !$0.contains(SafeSave.temporaryPrefix) }, "a temporary file was uploaded")
        // and after a restart in the middle of nothing, nothing changes
        b.kill9()
        try b.start()
        try a.write("last.txt", "last")
        #expect(SyncRig.eventually("B has last.txt") { b.read("last.txt") == "last" })
        #expect(SyncRig.eventually("no temporary file is left behind") {
            ((try? FileManager.default.contentsOfDirectory(atPath: b.url("bulk").path)) ?? []).allSatisfy { !$0.contains(SafeSave.temporaryPrefix) }
        })
        a.stop()
        b.stop()
    }
}
