// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// Eviction, on-demand download and status end to end: one `ubiq serve`, two `ubiq daemon`
/// devices (``SyncEndToEndTests``' set-up), the `ubiq evict`, `download` and `status` commands.
/// Every wait is a hang guard, never a timing assertion.
@Suite(.serialized) struct EvictionEndToEndTests {
    typealias Cloud = SyncEndToEndTests.Cloud
    typealias SyncDevice = SyncEndToEndTests.SyncDevice

    static func eventually(_ what: String, seconds: Double = 120, _ check: () -> Bool) -> Bool {
        SyncEndToEndTests.eventually(what, seconds: seconds, check)
    }

    /// Bytes that differ from file to file (no run of zeros a placeholder could be taken for).
    static func content(_ seed: String, size: Int) -> Data {
        var data = Data(capacity: size)
        var counter = 0
        while data.count < size {
            data.append(contentsOf: SyncFiles.hash(Data("\(seed)-\(counter)".utf8)).utf8)
            counter += 1
        }
        return data.prefix(size)
    }

    /// No data of its own: no data extent, and at most one block (ext4 may keep the marker
    /// attribute in a block of its own).
    static func hollow(_ path: String) -> Bool {
        Placeholder.isHollow(path) && blocks(path) <= 8
    }

    static func blocks(_ path: String) -> Int {
        var st = stat()
        guard lstat(path, &st) == 0 else { return -1 }
        return Int(st.st_blocks)
    }

    static func status(_ device: SyncDevice, _ relative: String) -> [String: Any]? {
        guard let run = try? device.device.run(["status", device.url(relative).path, "--json"]), run.status == 0 else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
    }

    static func uploaded(_ device: SyncDevice, _ relative: String) -> Bool {
        status(device, relative)?["sync"] as? String == "uploaded"
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
        let data = Self.content("movie", size: 300_000)
        try FileManager.default.createDirectory(at: a.url("videos"), withIntermediateDirectories: true)
        try data.write(to: a.url("videos/movie.bin"))
        try a.write("videos/notes.txt", "notes")
        #expect(Self.eventually("B has the files") { (try? Data(contentsOf: b.url("videos/movie.bin"))) == data && b.read("videos/notes.txt") == "notes" })
        #expect(Self.eventually("A's files are uploaded") { Self.uploaded(a, "videos/movie.bin") && Self.uploaded(a, "videos/notes.txt") })
        let before = try await cloud.items()

        // evict: a placeholder of the same name and size, no blocks, marked
        let evict = try a.device.run(["evict", a.url("videos/movie.bin").path])
        #expect(evict.status == 0, "\(evict)")
        #expect(evict.stdout.contains("evicted \(a.url("videos/movie.bin").path)"), "\(evict)")
        let path = a.url("videos/movie.bin").path
        #expect(FileStamp.of(path)?.size == 300_000)
        #expect(Self.hollow(path))
        #expect(Placeholder.read(path)?.hash == SyncChecksumKindsTests.chunkListHash(data))  // a large file: its chunk-list checksum
        let state = try #require(Self.status(a, "videos/movie.bin"))
        #expect(state["downloadingStatus"] as? String == "notDownloaded", "\(state)")
        #expect(state["sync"] as? String == "uploaded", "\(state)")
        #expect(state["downloadRequested"] as? Bool == false, "\(state)")
        #expect(Self.status(a, "videos/notes.txt")?["downloadingStatus"] as? String == "current")

        // nothing was uploaded or deleted: the server and B are unaffected (a few passes later)
        try a.write("videos/later.txt", "a later change")
        #expect(Self.eventually("B has the later change") { b.read("videos/later.txt") == "a later change" })
        let after = try await cloud.items()
        #expect(after["videos/movie.bin"]?.hash == before["videos/movie.bin"]?.hash)
        #expect(after["videos/movie.bin"]?.id == before["videos/movie.bin"]?.id)
        #expect((try? Data(contentsOf: b.url("videos/movie.bin"))) == data)
        #expect(Self.hollow(path), "the placeholder is never downloaded by itself")

        // a metadata query sees it not downloaded
        #expect(Self.eventually("the index says not downloaded") {
            guard let run = try? a.device.run(["query", "kMDItemFSName == 'movie.bin'", "--root", a.folder.path, "--json"]), run.status == 0,
                  let line = run.stdout.split(separator: "\n").first,
                  let json = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return false }
            return json["downloadingStatus"] as? String == UbiquitousDownloadingStatus.notDownloaded.rawValue
        })

        // evicting the folder evicts what is left; download of the folder brings both back
        let folder = try a.device.run(["evict", a.url("videos").path, "--json"])
        #expect(folder.status == 0, "\(folder)")
        #expect(Placeholder.read(a.url("videos/notes.txt").path) != nil)
        let download = try a.device.run(["download", a.url("videos").path, "--json"], timeout: 120)
        #expect(download.status == 0, "\(download)")
        #expect((try? Data(contentsOf: a.url("videos/movie.bin"))) == data)
        #expect(a.read("videos/notes.txt") == "notes")
        #expect(Self.blocks(path) > 8 && !Placeholder.isHollow(path))
        #expect(Placeholder.read(path) == nil)
        #expect(Self.status(a, "videos/movie.bin")?["downloadingStatus"] as? String == "current")
        #expect(try await cloud.items()["videos/movie.bin"]?.hash == SyncChecksumKindsTests.chunkListHash(data))

        // refused: outside the sync folder, excluded from sync
        let outside = a.device.file("outside.txt", "x")
        let refused = try a.device.run(["evict", outside.path])
        #expect(refused.status != 0 && refused.stderr.contains("not in the sync folder"), "\(refused)")
        try a.write("private.txt", "kept here")
        #expect(try a.device.run(["exclude", a.url("private.txt").path]).status == 0)
        #expect(Self.eventually("the exclusion is seen") { Self.status(a, "private.txt")?["sync"] as? String == "excluded" })
        let excluded = try a.device.run(["evict", a.url("private.txt").path])
        #expect(excluded.status != 0 && excluded.stderr.contains("excluded from sync"), "\(excluded)")
        a.stop()
        b.stop()
    }

    @Test func remoteEditUpdatesThePlaceholderAndAWriteIntoItIsAnEdit() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("doc.txt", "version one")
        #expect(Self.eventually("B has it") { b.read("doc.txt") == "version one" })
        #expect(Self.eventually("A uploaded it") { Self.uploaded(a, "doc.txt") })
        let id = try await cloud.items()["doc.txt"]?.id
        // through the library (the control socket of A's daemon)
        let control = a.device.root.appendingPathComponent("run/ubiquity/control.sock").path
        #expect(try UbiquitousItemControl.evict(at: a.url("doc.txt"), socketPath: control) == [a.url("doc.txt").path])
        let values = UbiquitousItemResourceValues(try UbiquitousItemControl.state(at: a.url("doc.txt"), socketPath: control))
        #expect(values.ubiquitousItemDownloadingStatus == .notDownloaded)
        #expect(!values.ubiquitousItemIsDownloading && !values.ubiquitousItemDownloadRequested && values.ubiquitousItemIsUploaded)
        let path = a.url("doc.txt").path
        let firstTag = Placeholder.read(path)?.changeTag

        // B edits it: A's placeholder follows (size, marker), nothing is downloaded
        try b.write("doc.txt", "version two, which is longer")
        #expect(Self.eventually("A's placeholder has the new size") {
            FileStamp.of(path)?.size == Int64("version two, which is longer".utf8.count) && Placeholder.read(path)?.changeTag != firstTag
        })
        #expect(Self.hollow(path))
        #expect(Placeholder.read(path)?.hash == SyncEndToEndTests.sha("version two, which is longer"))
        #expect(Self.status(a, "doc.txt")?["downloadingStatus"] as? String == "notDownloaded")

        // A writes into the placeholder: a new version based on B's, uploaded as an edit
        let handle = try #require(FileHandle(forWritingAtPath: path))
        try handle.truncate(atOffset: 0)
        try handle.write(contentsOf: Data("version three, written into the placeholder".utf8))
        try handle.close()
        #expect(Self.eventually("B has A's edit") { b.read("doc.txt") == "version three, written into the placeholder" })
        let items = try await cloud.items()
        #expect(items["doc.txt"]?.id == id, "an edit of the same record")
        #expect(items["doc.txt"]?.hash == SyncEndToEndTests.sha("version three, written into the placeholder"))
        #expect(Self.eventually("A says current") { Self.status(a, "doc.txt")?["downloadingStatus"] as? String == "current" })
        #expect(Placeholder.read(path) == nil)
        #expect(FileVersion.unresolvedConflictVersionsOfItem(at: a.url("doc.txt"))?.isEmpty ?? true, "not a conflict")
        a.stop()
        b.stop()
    }

    @Test func aTouchedPlaceholderIsNotAnEditWhenTheServerChanged() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud), b = SyncDevice("beta", cloud)
        try a.start()
        try b.start()
        try a.write("touched.txt", "first")
        #expect(Self.eventually("B has it") { b.read("touched.txt") == "first" })
        #expect(Self.eventually("A uploaded it") { Self.uploaded(a, "touched.txt") })
        #expect(try a.device.run(["evict", a.url("touched.txt").path]).status == 0)
        a.stop()
        // while A's daemon is stopped: the placeholder is touched there, and edited on B
        let path = a.url("touched.txt").path
        var times = [timespec(tv_sec: 1_500_000_000, tv_nsec: 0), timespec(tv_sec: 1_500_000_000, tv_nsec: 0)]
        #expect(utimensat(AT_FDCWD, path, &times, 0) == 0)
        try b.write("touched.txt", "second, from B")
        #expect(await SyncEndToEndTests.eventuallyAsync("the server has B's edit") {
            try await cloud.items()["touched.txt"]?.hash == SyncEndToEndTests.sha("second, from B")
        })
        try a.start()
        #expect(Self.eventually("A's placeholder follows B's version") {
            Placeholder.read(path)?.hash == SyncEndToEndTests.sha("second, from B") && FileStamp.of(path)?.size == 14
        })
        #expect(Self.hollow(path))
        #expect(FileVersion.unresolvedConflictVersionsOfItem(at: a.url("touched.txt"))?.isEmpty ?? true, "a touch is not an edit")
        #expect(b.read("touched.txt") == "second, from B")
        #expect(try await cloud.items()["touched.txt"]?.hash == SyncEndToEndTests.sha("second, from B"))
        a.stop()
        b.stop()
    }

    @Test func budgetEvictsTheLeastRecentlyUsed() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud)
        let daemon = try a.device.start(Binaries.ubiq, a.arguments + ["--evict-budget", "2500"])
        defer { daemon.kill(SIGTERM) }
        #expect(daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil)
        try Self.content("old", size: 1000).write(to: a.url("old.bin"))
        try Self.content("mid", size: 1000).write(to: a.url("mid.bin"))
        #expect(Self.eventually("both are uploaded") { Self.uploaded(a, "old.bin") && Self.uploaded(a, "mid.bin") })
        Self.setAccessTime(a.url("old.bin").path, seconds: 1_000_000_000)
        Self.setAccessTime(a.url("mid.bin").path, seconds: 1_100_000_000)
        try Self.content("new", size: 1000).write(to: a.url("new.bin"))
        #expect(Self.eventually("the least recently used is evicted") { Placeholder.read(a.url("old.bin").path) != nil })
        #expect(Self.eventually("new.bin is uploaded") { Self.uploaded(a, "new.bin") })
        #expect(Placeholder.read(a.url("mid.bin").path) == nil)
        #expect(Placeholder.read(a.url("new.bin").path) == nil)
        #expect(Self.hollow(a.url("old.bin").path))
        #expect(try await cloud.items()["old.bin"]?.hash == SyncFiles.hash(Self.content("old", size: 1000)))

        // a bad budget is named
        let bad = try a.device.run(["daemon", "--evict-budget", "lots", "--folder", a.device.root.appendingPathComponent("other").path])
        #expect(bad.status != 0 && bad.stderr.contains("--evict-budget"), "\(bad)")
    }

    @Test func statusShowsErrorsAndWatchStreamsChanges() async throws {
        let cloud = try Cloud()
        let a = SyncDevice("alpha", cloud)
        try a.start()
        try a.write("watched.txt", "watch me")
        #expect(Self.eventually("uploaded") { Self.uploaded(a, "watched.txt") })

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
        let state = try #require(Self.status(a, "watched.txt"))
        #expect(state["downloadError"] is String, "\(state)")
        #expect(state["downloadingStatus"] as? String == "notDownloaded", "\(state)")
        #expect(watch.waitForLine(containing: "\"downloadError\":\"", seconds: 60) != nil, "\(watch.output)")
        a.stop()
    }
}
