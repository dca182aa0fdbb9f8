// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// Eviction, on-demand download and status end to end: one `ubiq serve`, two `ubiq daemon`
/// devices (``SyncEndToEndTests``' set-up), the `ubiq evict`, `download` and `status` commands.
/// Every wait is a hang guard, never a timing assertion.
@Suite(.serialized) struct EvictionEndToEndTests {
    typealias Cloud = SyncRig.Cloud
    typealias SyncDevice = SyncRig.SyncDevice

    /// Evicted: nothing at the name (no program can read a placeholder as the document), and
    /// the hidden stub `.NAME.icloud` beside it.
    static func hollow(_ path: String) -> Bool {
        FileStamp.of(path) == nil && stub(path) != nil
    }

    /// The stub standing for `path`.
    static func stub(_ path: String) -> Placeholder? {
        Placeholder.read(stubAt: Placeholder.stubPath(for: path))
    }

    static func setAccessTime(_ path: String, seconds: Int) {
        var times = [timespec(tv_sec: seconds, tv_nsec: 0), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]
        utimensat(AT_FDCWD, path, &times, 0)
    }

    @Test func evictKeepsNameAndSizeAndDownloadBringsTheContentBack() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        let data = SyncRig.content("movie", size: 300_000)
        try FileManager.default.createDirectory(at: a.url("videos"), withIntermediateDirectories: true)
        try data.write(to: a.url("videos/movie.bin"))
        try a.write("videos/notes.txt", "notes")
        #expect(SyncRig.eventually("B has the files") { (try? Data(contentsOf: b.url("videos/movie.bin"))) == data && b.read("videos/notes.txt") == "notes" })
        #expect(SyncRig.eventually("A's files are uploaded") { SyncRig.uploaded(a, "videos/movie.bin") && SyncRig.uploaded(a, "videos/notes.txt") })
        let before = try await cloud.items()

        // evict: the hidden stub `.movie.bin.icloud` with its name and size; nothing at the name
        let evict = try a.device.run(["evict", a.url("videos/movie.bin").path])
        #expect(evict.status == 0, "\(evict)")
        #expect(evict.stdout.contains("evicted \(a.url("videos/movie.bin").path)"), "\(evict)")
        let path = a.url("videos/movie.bin").path
        #expect(Self.stub(path)?.size == 300_000)
        #expect(Self.hollow(path))
        #expect((try? Data(contentsOf: URL(fileURLWithPath: path))) == nil, "reading it is an error, never zeros")
        #expect(Self.stub(path)?.hash == SyncChecksumKindsTests.chunkListHash(data))  // a large file: its chunk-list checksum
        let state = try #require(SyncRig.status(a, "videos/movie.bin"))
        #expect(state["size"] as? Int == 300_000 && state["exists"] as? Bool == true, "\(state)")
        #expect(state["downloadingStatus"] as? String == "notDownloaded", "\(state)")
        #expect(state["sync"] as? String == "uploaded", "\(state)")
        #expect(state["downloadRequested"] as? Bool == false, "\(state)")
        #expect(SyncRig.status(a, "videos/notes.txt")?["downloadingStatus"] as? String == "current")
        // `ubiq ls` lists it under its own name, not its stub's
        let listing = try a.device.run(["ls", "-l", a.url("videos").path])
        #expect(listing.status == 0 && listing.stdout.contains("movie.bin") && !listing.stdout.contains(".icloud"), "\(listing)")

        // nothing was uploaded or deleted: the server and B are unaffected (a few passes later)
        try a.write("videos/later.txt", "a later change")
        #expect(SyncRig.eventually("B has the later change") { b.read("videos/later.txt") == "a later change" })
        let after = try await cloud.items()
        #expect(after["videos/movie.bin"]?.hash == before["videos/movie.bin"]?.hash)
        #expect(after["videos/movie.bin"]?.id == before["videos/movie.bin"]?.id)
        #expect((try? Data(contentsOf: b.url("videos/movie.bin"))) == data)
        #expect(Self.hollow(path), "an evicted file is never downloaded by itself")

        // a metadata query sees it not downloaded
        #expect(SyncRig.eventually("the index says not downloaded") {
            guard let run = try? a.device.run(["query", "kMDItemFSName == 'movie.bin'", "--root", a.folder.path, "--json"]), run.status == 0,
                  let line = run.stdout.split(separator: "\n").first,
                  let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
            return json["downloadingStatus"] as? String == UbiquitousDownloadingStatus.notDownloaded.rawValue
        })

        // evicting the folder evicts what is left; download of the folder brings both back
        let folder = try a.device.run(["evict", a.url("videos").path, "--json"])
        #expect(folder.status == 0, "\(folder)")
        #expect(Self.hollow(a.url("videos/notes.txt").path))
        let download = try a.device.run(["download", a.url("videos").path, "--json"], timeout: 120)
        #expect(download.status == 0, "\(download)")
        #expect((try? Data(contentsOf: a.url("videos/movie.bin"))) == data)
        #expect(a.read("videos/notes.txt") == "notes")
        #expect(!Self.hollow(path) && Self.stub(path) == nil, "the stub is gone")
        #expect(SyncRig.status(a, "videos/movie.bin")?["downloadingStatus"] as? String == "current")
        #expect(try await cloud.items()["videos/movie.bin"]?.hash == SyncChecksumKindsTests.chunkListHash(data))

        // refused: outside the sync folder, excluded from sync
        let outside = a.device.file("outside.txt", "x")
        let refused = try a.device.run(["evict", outside.path])
        #expect(refused.status != 0 && refused.stderr.contains("not in the sync folder"), "\(refused)")
        try a.write("private.txt", "kept here")
        #expect(try a.device.run(["exclude", a.url("private.txt").path]).status == 0)
        #expect(SyncRig.eventually("the exclusion is seen") { SyncRig.status(a, "private.txt")?["sync"] as? String == "excluded" })
        let excluded = try a.device.run(["evict", a.url("private.txt").path])
        #expect(excluded.status != 0 && excluded.stderr.contains("excluded from sync"), "\(excluded)")
        a.stop()
        b.stop()
    }

    @Test func remoteEditUpdatesTheStubAndAppendingToItKeepsTheServersBytes() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("doc.txt", "version one")
        #expect(SyncRig.eventually("B has it") { b.read("doc.txt") == "version one" })
        #expect(SyncRig.eventually("A uploaded it") { SyncRig.uploaded(a, "doc.txt") })
        let id = try await cloud.items()["doc.txt"]?.id
        // through the library (the control socket of A's daemon)
        let control = a.device.root.appendingPathComponent("run/ubiquity/control.sock").path
        #expect(try UbiquitousItemControl.evict(at: a.url("doc.txt"), socketPath: control) == [a.url("doc.txt").path])
        let values = UbiquitousItemResourceValues(try UbiquitousItemControl.state(at: a.url("doc.txt"), socketPath: control))
        #expect(values.ubiquitousItemDownloadingStatus == .notDownloaded)
        #expect(!values.ubiquitousItemIsDownloading && !values.ubiquitousItemDownloadRequested && values.ubiquitousItemIsUploaded)
        let path = a.url("doc.txt").path
        let firstTag = Self.stub(path)?.changeTag

        // B edits it: A's stub follows (size, marker), nothing is downloaded
        try b.write("doc.txt", "version two, which is longer")
        #expect(SyncRig.eventually("A's stub has the new size") {
            Self.stub(path)?.size == Int64("version two, which is longer".utf8.count) && Self.stub(path)?.changeTag != firstTag
        })
        #expect(Self.hollow(path))
        #expect(Self.stub(path)?.hash == SyncRig.sha("version two, which is longer"))
        #expect(SyncRig.status(a, "doc.txt")?["downloadingStatus"] as? String == "notDownloaded")

        // `echo x >> doc.txt` on A, through a real shell: the server's bytes are never replaced;
        // they come back under the name and what was written is kept as a conflict version
        let append = Process()
        append.executableURL = URL(fileURLWithPath: "/bin/sh")
        append.arguments = ["-c", "echo x >> \"$0\"", path]
        try append.run()
        append.waitUntilExit()
        #expect(append.terminationStatus == 0)
        #expect(SyncRig.eventually("A has the server's version back") { a.read("doc.txt") == "version two, which is longer" })
        #expect(SyncRig.eventually("A keeps what was written as a conflict version") {
            guard let run = try? a.device.run(["versions", path, "--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                  let versions = json["versions"] as? [[String: Any]] else { return false }
            return versions.contains { $0["conflict"] as? Bool == true && ($0["url"] as? String).flatMap { try? String(contentsOfFile: $0, encoding: .utf8) } == "x\n" }
        })
        #expect(Self.stub(path) == nil)
        let items = try await cloud.items()
        #expect(items["doc.txt"]?.id == id)
        #expect(items["doc.txt"]?.hash == SyncRig.sha("version two, which is longer"), "the server's content survives")
        #expect(b.read("doc.txt") == "version two, which is longer", "and every other device's")
        a.stop()
        b.stop()
    }

    @Test func aTouchedStubIsNotAnEditWhenTheServerChanged() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("touched.txt", "first")
        #expect(SyncRig.eventually("B has it") { b.read("touched.txt") == "first" })
        #expect(SyncRig.eventually("A uploaded it") { SyncRig.uploaded(a, "touched.txt") })
        #expect(try a.device.run(["evict", a.url("touched.txt").path]).status == 0)
        a.stop()
        // while A's daemon is stopped: the stub is touched there, and the file edited on B
        let path = a.url("touched.txt").path
        var times = [timespec(tv_sec: 1_500_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, Placeholder.stubPath(for: path), &times, 0) == 0)
        try b.write("touched.txt", "second, from B")
        #expect(await SyncRig.eventuallyAsync("the server has B's edit") {
            try await cloud.items()["touched.txt"]?.hash == SyncRig.sha("second, from B")
        })
        try a.start()
        #expect(SyncRig.eventually("A's stub follows B's version") {
            Self.stub(path)?.hash == SyncRig.sha("second, from B") && Self.stub(path)?.size == 14
        })
        #expect(Self.hollow(path))
        #expect(FileVersion.unresolvedConflictVersionsOfItem(at: a.url("touched.txt"))?.isEmpty ?? true, "a touch is not an edit")
        #expect(b.read("touched.txt") == "second, from B")
        #expect(try await cloud.items()["touched.txt"]?.hash == SyncRig.sha("second, from B"))
        // the library's startDownloadingUbiquitousItem (the control socket) brings it back
        let control = a.device.root.appendingPathComponent("run/ubiquity/control.sock").path
        #expect(try UbiquitousItemControl.download(at: a.url("touched.txt"), wait: false, socketPath: control) == [path])
        #expect(SyncRig.eventually("A downloaded it") { a.read("touched.txt") == "second, from B" && Self.stub(path) == nil })
        a.stop()
        b.stop()
    }

    @Test func budgetEvictsTheLeastRecentlyUsed() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud)
        let daemon = try a.device.start(Binaries.ubiq, a.arguments + ["--evict-budget", "2500"])
        defer { daemon.kill(SIGTERM) }
        #expect(daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil)
        try SyncRig.content("old", size: 1000).write(to: a.url("old.bin"))
        try SyncRig.content("mid", size: 1000).write(to: a.url("mid.bin"))
        #expect(SyncRig.eventually("both are uploaded") { SyncRig.uploaded(a, "old.bin") && SyncRig.uploaded(a, "mid.bin") })
        try SyncRig.content("pinned", size: 1000).write(to: a.url("pinned.bin"))
        #expect(SyncRig.eventually("pinned.bin is uploaded") { SyncRig.uploaded(a, "pinned.bin") })
        // pinned.bin is the least recently used, but pinned: never evicted
        let pin = try a.device.run(["pin", a.url("pinned.bin").path])
        #expect(pin.status == 0 && pin.stdout.contains("pinned \(a.url("pinned.bin").path)"), "\(pin)")
        #expect(SyncRig.status(a, "pinned.bin")?["pinned"] as? Bool == true)
        #expect(SyncRig.status(a, "old.bin")?["pinned"] as? Bool == false)
        Self.setAccessTime(a.url("pinned.bin").path, seconds: 900_000_000)
        Self.setAccessTime(a.url("old.bin").path, seconds: 1_000_000_000)
        Self.setAccessTime(a.url("mid.bin").path, seconds: 1_100_000_000)
        try SyncRig.content("new", size: 1000).write(to: a.url("new.bin"))
        #expect(SyncRig.eventually("the least recently used is evicted") { Self.hollow(a.url("old.bin").path) && Self.hollow(a.url("mid.bin").path) })
        #expect(SyncRig.eventually("new.bin is uploaded") { SyncRig.uploaded(a, "new.bin") })
        #expect(Self.stub(a.url("pinned.bin").path) == nil, "the pinned file stays")
        #expect(Self.stub(a.url("new.bin").path) == nil)
        #expect(try await cloud.items()["old.bin"]?.hash == SyncFiles.hash(SyncRig.content("old", size: 1000)))
        let refused = try a.device.run(["evict", a.url("pinned.bin").path])
        #expect(refused.status != 0 && refused.stderr.contains("pinned"), "\(refused)")
        #expect(try a.device.run(["unpin", a.url("pinned.bin").path]).status == 0)
        #expect(SyncRig.status(a, "pinned.bin")?["pinned"] as? Bool == false)

        // a bad budget is named
        let bad = try a.device.run(["daemon", "--evict-budget", "lots", "--folder", a.device.root.appendingPathComponent("other").path])
        #expect(bad.status != 0 && bad.stderr.contains("--evict-budget"), "\(bad)")
    }

    @Test func statusShowsErrorsAndWatchStreamsChanges() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud)
        try a.start()
        try a.write("watched.txt", "watch me")
        #expect(SyncRig.eventually("uploaded") { SyncRig.uploaded(a, "watched.txt") })

        // --watch prints JSON lines (not a terminal) when the state changes
        let watch = try a.device.start(Binaries.ubiq, ["status", a.url("watched.txt").path, "--watch"])
        defer { watch.kill() }
        let first = watch.waitForLine(containing: "\"downloadingStatus\":\"current\"", seconds: 60)
        #expect(first != nil, "\(watch.output)")
        #expect(try a.device.run(["evict", a.url("watched.txt").path]).status == 0)
        #expect(watch.waitForLine(containing: "\"downloadingStatus\":\"notDownloaded\"", seconds: 60) != nil, "\(watch.output)")

        // with the server down: evicting a file not uploaded is refused; a download fails and says why
        cloud.stop()
        try a.write("unsent.txt", "not uploaded")
        let refused = try a.device.run(["evict", a.url("unsent.txt").path], timeout: 180)
        #expect(refused.status != 0 && refused.stderr.contains("not uploaded yet"), "\(refused)")
        let download = try a.device.run(["download", a.url("watched.txt").path], timeout: 180)
        #expect(download.status != 0, "\(download)")
        let state = try #require(SyncRig.status(a, "watched.txt"))
        #expect(state["downloadError"] is String, "\(state)")
        #expect(state["downloadingStatus"] as? String == "notDownloaded", "\(state)")
        #expect(watch.waitForLine(containing: "\"downloadError\":\"", seconds: 60) != nil, "\(watch.output)")
        a.stop()
    }
}
