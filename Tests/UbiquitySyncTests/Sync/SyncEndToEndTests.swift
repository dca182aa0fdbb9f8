// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import Ubiquity
import UbiquityCore
@testable import UbiquitySync
import UbiquityCloudKit

/// Sync end to end with real processes: one `ubiq serve` (SQLite, port 0) and two `ubiq daemon`
/// devices, each with its own folder, state, runtime folder and sockets. Every wait is a
/// generous hang guard (120 s), never a timing assertion.
@Suite(.serialized) struct SyncEndToEndTests {
    /// The server and the credentials of its one user.
    final class Cloud: Sendable {
        let device = Device()
        let apiToken: String
        let webToken: String
        let url: String
        private let data: String
        private let process: Mutex<Subprocess?>

        init() throws {
            data = device.root.appendingPathComponent("server").path
            apiToken = try device.run(["admin", "--data", data, "container", "add", SyncRecord.defaultContainer]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            webToken = try device.run(["admin", "--data", data, "user", "add", "mei"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            let server = try ServeCLITests.startServer(device, ["--data", data])
            url = server.url
            process = Mutex(server.process)
        }

        /// Stops the server (SIGTERM).
        func stop() {
            guard let server = process.withLock({ value in defer { value = nil }; return value }) else { return }
            server.kill(SIGTERM)
        }

        /// Starts it again on the same port and data.
        func restart() throws {
            let port = String(URL(string: url)!.port!)
            let server = try device.start(Binaries.ubiq, ["serve", "--port", port, "--log-level", "warning", "--data", data])
            guard server.waitForLine(containing: "listening on ") != nil else {
                server.kill()
                throw DeviceError.didNotStart("ubiq serve (again)")
            }
            process.withLock { $0 = server }
        }

        /// Every item the server has: path → (record name, content hash). Throws when two
        /// records name one path (a duplicate).
        func items() async throws -> [String: (id: String, hash: String)] {
            let container = CloudContainer(identifier: SyncRecord.defaultContainer, serverURL: URL(string: url)!,
                                           credentials: .apiToken(apiToken, webAuthToken: webToken))
            var items: [String: (id: String, hash: String)] = [:]
            for record in try await SyncEndToEndTests.liveRecords(container.privateCloudDatabase) {
                guard let item = SyncRecord.item(from: record) else { continue }
                if let other = items[item.path] { throw DuplicateItem(path: item.path, ids: [other.id, item.id]) }
                items[item.path] = (item.id, item.contentHash)
            }
            return items
        }

        deinit { stop() }
    }

    struct DuplicateItem: Error { let path: String; let ids: [String] }

    /// The documents zone's live records, listed from the start of its changes.
    static func liveRecords(_ database: CloudDatabase) async throws -> [Record] {
        var token: ServerChangeToken?
        var records: [String: Record] = [:]
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: SyncRecord.zoneID, since: token)
            for (id, result) in page.modificationResultsByID { records[id.recordName] = try? result.get().record }
            for deletion in page.deletions { records[deletion.recordID.recordName] = nil }
            token = page.changeToken
            if !page.moreComing { break }
        }
        return Array(records.values)
    }

    /// One device: a folder and a daemon that syncs it.
    final class SyncDevice: Sendable {
        let device = Device()
        let name: String
        let cloud: Cloud
        private let daemon = LockedProcess()
        /// More arguments of its daemon (`--mount`, say).
        let extra: [String]
        var folder: URL { device.root.appendingPathComponent("home/Ubiquity") }

        init(_ name: String, _ cloud: Cloud, extra: [String] = []) {
            self.name = name
            self.cloud = cloud
            self.extra = extra
        }

        var arguments: [String] {
            ["daemon", "--log-level", ProcessInfo.processInfo.environment["UBIQUITY_TEST_SYNC_LOG"] ?? "warning", "--server", cloud.url,
             // tokens are base64url and may start with '-': always pass them attached
             "--api-token=" + cloud.apiToken, "--web-auth-token=" + cloud.webToken,
             "--folder", folder.path, "--device-name", name] + extra
        }

        func start() throws {
            let process = try device.start(Binaries.ubiq, arguments)
            guard process.waitForLine(containing: "coordination service listening on", seconds: 60) != nil else {
                process.kill()
                throw DeviceError.didNotStart("ubiq daemon (\(name))")
            }
            daemon.set(process)
        }

        func stop() {
            guard let process = daemon.take() else { return }
            process.kill(SIGTERM)
        }

        func kill9() { daemon.take()?.kill(SIGKILL) }

        func url(_ relative: String) -> URL { folder.appendingPathComponent(relative) }

        func write(_ relative: String, _ text: String) throws {
            let url = url(relative)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }

        func read(_ relative: String) -> String? {
            (try? Data(contentsOf: url(relative))).map { String(decoding: $0, as: UTF8.self) }
        }

        func exists(_ relative: String) -> Bool { FileStamp.of(url(relative).path) != nil }

        /// `ubiq status PATH --json`'s sync state.
        func syncStatus(_ relative: String) -> String? {
            guard let run = try? device.run(["status", url(relative).path, "--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else { return nil }
            return json["sync"] as? String
        }

        deinit { stop() }
    }

    /// A daemon process that can be replaced.
    final class LockedProcess: Sendable {
        private let process = Mutex<Subprocess?>(nil)
        func set(_ new: Subprocess) { process.withLock { $0 = new } }
        func take() -> Subprocess? { process.withLock { value in defer { value = nil }; return value } }
    }

    /// Polls `check` until it holds (a hang guard, not a timing assertion).
    static func eventually(_ what: String, seconds: Double = 120, _ check: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if check() { return true }
            usleep(20_000)
        }
        Issue.record("timed out waiting until \(what)")
        return false
    }

    static func eventuallyAsync(_ what: String, seconds: Double = 120, _ check: () async throws -> Bool) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if (try? await check()) == true { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out waiting until \(what)")
        return false
    }

    static func sha(_ text: String) -> String { SyncFiles.hash(Data(text.utf8)) }

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
        #expect(Self.eventually("B has A's new items") {
            b.read("hello.txt") == "hello" && b.read("docs/sub/notes.md") == "# notes" && b.read("empty") == ""
                && b.read("with space & ünïcode.txt") == "names"
                && (try? FileManager.default.destinationOfSymbolicLink(atPath: b.url("link").path)) == "hello.txt"
        })

        // a presenter of the file on B (through B's daemon) hears of the download
        let presenter = try b.device.present(b.url("hello.txt"))
        defer { presenter.kill() }
        try a.write("hello.txt", "hello, again")
        #expect(Self.eventually("B has the edit") { b.read("hello.txt") == "hello, again" })
        #expect(presenter.waitForLine(containing: "\"didChange\"", seconds: 120) != nil, "\(presenter.output)")

        // permissions travel
        #expect(chmod(a.url("hello.txt").path, 0o600) == 0)
        #expect(Self.eventually("B has the permissions") { FileStamp.of(b.url("hello.txt").path)?.mode == 0o600 })

        let before = try await cloud.items()
        try FileManager.default.moveItem(at: a.url("hello.txt"), to: a.url("greeting.txt"))
        try FileManager.default.moveItem(at: a.url("docs"), to: a.url("papers"))
        #expect(Self.eventually("B has the renames") {
            b.read("greeting.txt") == "hello, again" && !b.exists("hello.txt") && b.read("papers/sub/notes.md") == "# notes" && !b.exists("docs")
        })
        let after = try await cloud.items()
        // a rename is a path update of the same record
        #expect(after["greeting.txt"]?.id == before["hello.txt"]?.id)
        #expect(after["papers/sub/notes.md"]?.id == before["docs/sub/notes.md"]?.id)
        #expect(after[".notes.md.swp"] == nil && after["backup~"] == nil, "editor files are never uploaded")

        try b.write("from-b.txt", "B wrote this")
        #expect(Self.eventually("A has B's file") { a.read("from-b.txt") == "B wrote this" })
        #expect(Self.eventually("ubiq status says it is uploaded") { b.syncStatus("from-b.txt") == "uploaded" && a.syncStatus("from-b.txt") == "uploaded" })
        // the daemon's index has the ubiquitous attributes (metadata queries see them)
        #expect(Self.eventually("a metadata query sees it uploaded") {
            guard let run = try? a.device.run(["query", "kMDItemFSName == 'from-b.txt'", "--root", a.folder.path, "--json"]), run.status == 0,
                  let line = run.stdout.split(separator: "\n").first,
                  let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
            return json["isUploaded"] as? Bool == true && json["isUploading"] as? Bool == false
        })

        try FileManager.default.removeItem(at: a.url("papers"))
        try FileManager.default.removeItem(at: a.url("greeting.txt"))
        #expect(Self.eventually("B has the deletes") { !b.exists("papers") && !b.exists("greeting.txt") && b.exists("from-b.txt") })
        #expect(await Self.eventuallyAsync("the server has the deletes") { try await cloud.items()["greeting.txt"] == nil })
        a.stop()
        b.stop()
    }

    @Test func bothEditedKeepsTheServersVersionAndAConflictVersion() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("doc.txt", "base")
        #expect(Self.eventually("B has the document") { b.read("doc.txt") == "base" })
        b.stop()

        try a.write("doc.txt", "from A")
        #expect(await Self.eventuallyAsync("A uploaded its edit") { try await cloud.items()["doc.txt"]?.hash == Self.sha("from A") })
        try b.write("doc.txt", "from B, offline")
        try b.start()
        #expect(Self.eventually("B has the server's version") { b.read("doc.txt") == "from A" })
        var conflictURL: String?
        #expect(Self.eventually("B keeps its own as a conflict version") {
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
        #expect(Self.eventually("a metadata query sees the conflict") { conflictsInIndex() == true })
        // resolved (keeping the server's version): the index hears of it at the next pass
        let resolve = try b.device.run(["resolve", b.url("doc.txt").path, "--keep", "current"])
        #expect(resolve.status == 0, "\(resolve)")
        try b.write("nudge.txt", "a change makes a pass")
        #expect(Self.eventually("the index no longer lists the conflict") { conflictsInIndex() == false })
        #expect(b.syncStatus("doc.txt") == "uploaded")
        #expect(try await cloud.items()["doc.txt"]?.hash == Self.sha("from A"))
        #expect(a.read("doc.txt") == "from A")

        // delete versus edit keeps the edit: A deletes, B (stopped) edits; the edit comes back to A
        b.stop()
        try FileManager.default.removeItem(at: a.url("doc.txt"))
        #expect(await Self.eventuallyAsync("A's delete reached the server") { try await cloud.items()["doc.txt"] == nil })
        try b.write("doc.txt", "B's edit survives the delete")
        try b.start()
        #expect(Self.eventually("A has B's edit back") { a.read("doc.txt") == "B's edit survives the delete" })
        #expect(b.read("doc.txt") == "B's edit survives the delete")

        // deleted and created again under the same name while B is away: B gets the new file
        // (the new record is not taken for a duplicate of the deleted one)
        try a.write("again.txt", "first")
        #expect(Self.eventually("B has again.txt") { b.read("again.txt") == "first" })
        b.stop()
        try FileManager.default.removeItem(at: a.url("again.txt"))
        #expect(await Self.eventuallyAsync("A's delete reached the server") { try await cloud.items()["again.txt"] == nil })
        try a.write("again.txt", "second")
        #expect(await Self.eventuallyAsync("A uploaded the new again.txt") { try await cloud.items()["again.txt"]?.hash == Self.sha("second") })
        try b.start()
        #expect(Self.eventually("B has the new file") { b.read("again.txt") == "second" })
        #expect(try await cloud.items()["again.txt"]?.hash == Self.sha("second"))
        #expect(a.read("again.txt") == "second")

        // identical content on both sides is not a conflict
        b.stop()
        try a.write("same.txt", "same words")
        #expect(await Self.eventuallyAsync("A uploaded same.txt") { try await cloud.items()["same.txt"] != nil })
        try b.write("same.txt", "same words")
        try b.start()
        try a.write("marker.txt", "after")
        #expect(Self.eventually("B caught up") { b.read("marker.txt") == "after" })
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
        #expect(Self.eventually("B has shared.txt") { b.read("shared.txt") == "shared" })
        // excluded after it was uploaded: the record goes, both local files... A's stays
        #expect(try a.device.run(["exclude", a.url("shared.txt").path]).status == 0)
        #expect(Self.eventually("B no longer has shared.txt") { !b.exists("shared.txt") })
        try a.write("marker.txt", "m")
        #expect(Self.eventually("B has the marker") { b.read("marker.txt") == "m" })
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
        #expect(Self.eventually("B has before.txt") { b.read("before.txt") == "before" })
        cloud.stop()
        try a.write("during.txt", "written while the server was down")
        try b.write("from-b.txt", "B too")
        try a.write("before.txt", "edited while the server was down")
        try await Task.sleep(for: .milliseconds(500))  // let both daemons try and fail (not a timing assertion)
        try cloud.restart()
        #expect(Self.eventually("B has A's changes") {
            b.read("during.txt") == "written while the server was down" && b.read("before.txt") == "edited while the server was down"
        })
        #expect(Self.eventually("A has B's file") { a.read("from-b.txt") == "B too" })
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
        _ = Self.eventually("B has some of the files") { (0..<count / 2).contains { b.exists("bulk/file-\($0).txt") } }
        b.kill9()
        a.kill9()
        for index in count / 2..<count { try a.write("bulk/file-\(index).txt", content(index)) }
        try a.start()
        try b.start()
        _ = Self.eventually("B has more of the files") { (count / 2..<count).contains { b.exists("bulk/file-\($0).txt") } }
        b.kill9()
        try b.start()
        #expect(Self.eventually("B has every file") {
            (0..<count).allSatisfy { b.read("bulk/file-\($0).txt") == content($0) }
        })
        // each file is one record: nothing was uploaded twice as a second item
        #expect(await Self.eventuallyAsync("the server has one record per file") {
            try await cloud.items().keys.filter { $0.hasPrefix("bulk/") }.count == count
        })
        #expect(try await cloud.items().keys.allSatisfy { !$0.contains(SafeSave.temporaryPrefix) }, "a temporary file was uploaded")
        // and after a restart in the middle of nothing, nothing changes
        b.kill9()
        try b.start()
        try a.write("last.txt", "last")
        #expect(Self.eventually("B has last.txt") { b.read("last.txt") == "last" })
        #expect(Self.eventually("no temporary file is left behind") {
            ((try? FileManager.default.contentsOfDirectory(atPath: b.url("bulk").path)) ?? []).allSatisfy { !$0.contains(SafeSave.temporaryPrefix) }
        })
        a.stop()
        b.stop()
    }
}
