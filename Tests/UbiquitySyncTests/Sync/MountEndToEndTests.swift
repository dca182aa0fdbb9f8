// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
import UbiquityMount
@testable import UbiquitySync

/// `ubiq daemon --mount` end to end, with real FUSE (libfuse3, /dev/fuse): one `ubiq serve`,
/// two devices (A mounted, B a plain folder, or both mounted), every file operation done by
/// real programs (`/bin/sh`, `cat`, `mv`, `truncate`, `setfattr`) through the mount. Every
/// test unmounts, even when it fails (the daemon stopped, then `umount -l` if a mount is
/// left). Every wait is a hang guard, never a timing assertion.
@Suite(.serialized, .enabled(if: FuseSupport.available, "needs /dev/fuse and fusermount3 (Debian: fuse3)"))
struct MountEndToEndTests {
    typealias Cloud = SyncRig.Cloud
    typealias SyncDevice = SyncRig.SyncDevice

    static func eventually(_ what: String, seconds: Double = 120, _ check: () -> Bool) -> Bool {
        SyncRig.eventually(what, seconds: seconds, check)
    }

    static func mounted(_ name: String, _ cloud: Cloud, _ more: [String] = []) -> SyncDevice {
        SyncDevice(name, cloud, extra: ["--mount"] + more)
    }

    /// Stops the devices and makes sure no mount is left (whatever the test did).
    static func cleanUp(_ devices: SyncDevice...) {
        for device in devices {
            device.stop()
            let folder = device.folder.path
            if !eventually("the daemon unmounts \(folder)", seconds: 20, { MountPoint.state(of: folder) == .none }) {
                _ = shell("umount -l \"$0\" || fusermount3 -u -z \"$0\"", folder)
            }
        }
    }

    /// Runs `script` with `/bin/sh -c` (arguments as $0, $1, ...), at most 60 s: its exit
    /// status and what it printed (stdout and stderr).
    @discardableResult
    static func shell(_ script: String, _ arguments: String..., seconds: Int = 60) -> (status: Int32, output: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/timeout")
        process.arguments = ["\(seconds)", "/bin/sh", "-c", script] + arguments
        let pipe = Pipe()
        process.standardOutput = pipe
        process.standardError = pipe
        process.standardInput = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return (-1, "cannot run /bin/sh") }
        let output = pipe.fileHandleForReading.readDataToEndOfFile()
        process.waitUntilExit()
        return (process.terminationStatus, String(decoding: output, as: UTF8.self))
    }

    static func status(_ device: SyncDevice, _ relative: String) -> [String: Any]? {
        SyncRig.status(device, relative)
    }

    static func uploaded(_ device: SyncDevice, _ relative: String) -> Bool { SyncRig.uploaded(device, relative) }

    static func downloading(_ device: SyncDevice, _ relative: String) -> String? {
        status(device, relative)?["downloadingStatus"] as? String
    }

    static func content(_ seed: String, size: Int) -> Data { SyncRig.content(seed, size: size) }

    /// The unresolved conflict versions of `path` on `device`.
    static func conflicts(_ device: SyncDevice, _ path: String) -> Int {
        guard let run = try? device.device.run(["versions", path, "--json"]), run.status == 0,
              let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
              let versions = json["versions"] as? [[String: Any]] else { return -1 }
        return versions.filter { $0["conflict"] as? Bool == true }.count
    }

    /// Evicts `relative` on `device` (uploaded first).
    static func evict(_ device: SyncDevice, _ relative: String) throws {
        #expect(eventually("\(relative) is uploaded") { uploaded(device, relative) })
        let run = try device.device.run(["evict", device.url(relative).path])
        #expect(run.status == 0, "\(run)")
        #expect(downloading(device, relative) == "notDownloaded")
    }

    /// How many inotify watches the daemon serving `folder` holds on the file system `path` is
    /// on (from /proc: the daemon's inotify descriptors' `fdinfo`, whose `sdev` is the kernel's
    /// device number); nil when the daemon is not found.
    static func inotifyWatches(ofDaemonFor folder: String, onDeviceOf path: String) -> Int? {
        var st = stat()
        guard stat(path, &st) == 0 else { return nil }
        let dev = UInt64(st.st_dev)
        let major = ((dev >> 8) & 0xfff) | ((dev >> 32) & ~UInt64(0xfff))
        let minor = (dev & 0xff) | ((dev >> 12) & ~UInt64(0xff))
        let kernelDevice = (major << 20) | minor
        guard let pids = try? FileManager.default.contentsOfDirectory(atPath: "/proc") else { return nil }
        for pid in pids where Int(pid) != nil {
            guard let cmdline = FileManager.default.contents(atPath: "/proc/\(pid)/cmdline") else { continue }
            let arguments = cmdline.split(separator: 0).map { String(decoding: $0, as: UTF8.self) }
            guard arguments.contains("daemon"), let index = arguments.firstIndex(of: "--folder"), index + 1 < arguments.count,
                  arguments[index + 1] == folder else { continue }
            var count = 0
            for fd in (try? FileManager.default.contentsOfDirectory(atPath: "/proc/\(pid)/fdinfo")) ?? [] {
                guard let info = try? String(contentsOfFile: "/proc/\(pid)/fdinfo/\(fd)", encoding: .utf8) else { continue }
                for line in info.split(separator: "\n") where line.hasPrefix("inotify wd:") {
                    guard let field = line.split(separator: " ").first(where: { $0.hasPrefix("sdev:") }),
                          let value = UInt64(field.dropFirst(5), radix: 16) else { continue }
                    if value == kernelDevice { count += 1 }
                }
            }
            return count
        }
        return nil
    }

    // MARK: Evicted files through the mount

    @Test func anEvictedFileKeepsItsNameAndSizeAndOpeningItBringsTheContent() async throws {
        let cloud = try Cloud()
        let a = Self.mounted("alpha", cloud), b = SyncDevice("beta", cloud)
        defer { Self.cleanUp(a, b) }
        try a.start()
        try b.start()
        #expect(MountPoint.state(of: a.folder.path) == .ubiquity(live: true))
        // the mount is the watcher: A's daemon holds no inotify watch on its mount (B's, on a
        // plain folder, does: the count is read right)
        #expect(Self.inotifyWatches(ofDaemonFor: a.folder.path, onDeviceOf: a.folder.path) == 0)
        #expect((Self.inotifyWatches(ofDaemonFor: b.folder.path, onDeviceOf: b.folder.path) ?? 0) > 0)
        let data = Self.content("movie", size: 600_000)
        try FileManager.default.createDirectory(at: a.url("videos"), withIntermediateDirectories: true)
        try data.write(to: a.url("videos/movie.bin"))
        #expect(Self.eventually("B has it") { (try? Data(contentsOf: b.url("videos/movie.bin"))) == data })
        try Self.evict(a, "videos/movie.bin")

        // listed under its own name with its size, taking no space; no stub shown
        let path = a.url("videos/movie.bin").path
        var st = stat()
        #expect(lstat(path, &st) == 0 && st.st_size == 600_000 && st.st_blocks == 0 && (st.st_mode & S_IFMT) == S_IFREG)
        let names = try FileManager.default.contentsOfDirectory(atPath: a.url("videos").path)
        #expect(names == ["movie.bin"], "\(names)")
        let listing = Self.shell("ls -l \"$0\"", a.url("videos").path)
        #expect(listing.status == 0 && listing.output.contains("600000") && !listing.output.contains(".icloud"), "\(listing)")

        // a program reading it gets the content, never zeros (cat through a real shell)
        let copy = a.device.root.appendingPathComponent("copy.bin").path
        let cat = Self.shell("cat \"$0\" > \"$1\"", path, copy)
        #expect(cat.status == 0, "\(cat)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: copy))) == data)
        #expect(Self.eventually("A says downloaded") { Self.downloading(a, "videos/movie.bin") == "current" })
        // mmap works on it (no direct I/O)
        #expect((try? Data(contentsOf: URL(fileURLWithPath: path), options: .alwaysMapped)) == data)
        // nothing was uploaded: the server's item is the same
        #expect(try await cloud.items()["videos/movie.bin"]?.hash == SyncChecksumKindsTests.chunkListHash(data))
        #expect(Self.conflicts(a, path) == 0)
    }

    @Test func readersOfAnEvictedFileGetItsBytesAsTheyArrive() async throws {
        let cloud = try Cloud()
        let a = Self.mounted("alpha", cloud), b = SyncDevice("beta", cloud)
        defer { Self.cleanUp(a, b) }
        try a.start()
        try b.start()
        let data = Self.content("stream", size: 48 << 20)
        try data.write(to: a.url("big.bin"))
        #expect(Self.eventually("B has it") { (try? FileHandle(forReadingFrom: b.url("big.bin")).seekToEnd()) == UInt64(data.count) })
        try Self.evict(a, "big.bin")

        // four programs at once, one download: the first bytes, a range from the middle and
        // the last bytes (an archive's index: far ahead of the download, fetched by range),
        // the whole file; each gets its own bytes
        let path = a.url("big.bin").path
        let root = a.device.root.path
        let readers = Self.shell("""
            head -c 4096 "$0" > "$1/head.bin" & first=$!
            dd if="$0" of="$1/middle.bin" bs=65536 skip=500 count=16 status=none & second=$!
            tail -c 100000 "$0" > "$1/tail.bin" & third=$!
            stat -c %s "$0" > "$1/size.txt"
            cat "$0" > "$1/whole.bin" && wait $first && wait $second && wait $third
            """, path, root, seconds: 120)
        #expect(readers.status == 0, "\(readers)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: root + "/head.bin"))) == data.prefix(4096))
        #expect((try? Data(contentsOf: URL(fileURLWithPath: root + "/middle.bin"))) == data.subdata(in: (500 * 65536)..<(516 * 65536)))
        #expect((try? Data(contentsOf: URL(fileURLWithPath: root + "/tail.bin"))) == data.suffix(100_000))
        #expect((try? String(contentsOfFile: root + "/size.txt", encoding: .utf8))?.trimmingCharacters(in: .whitespacesAndNewlines) == "\(data.count)")
        #expect((try? Data(contentsOf: URL(fileURLWithPath: root + "/whole.bin"))) == data)
        #expect(Self.eventually("A says downloaded") { Self.downloading(a, "big.bin") == "current" })
        // the file is the document under its name now, read again from its own node
        #expect((try? Data(contentsOf: a.url("big.bin"))) == data)
        let names = try FileManager.default.contentsOfDirectory(atPath: a.folder.path).filter { !$0.hasPrefix(".ubiquity") }
        #expect(names == ["big.bin"], "no partial file or stub is left: \(names)")
        #expect(Self.conflicts(a, path) == 0)
    }

    @Test func replacingAppendingAndSavingOverAnEvictedFileAreOrdinaryEdits() async throws {
        let cloud = try Cloud()
        let a = Self.mounted("alpha", cloud), b = SyncDevice("beta", cloud)
        defer { Self.cleanUp(a, b) }
        try a.start()
        try b.start()
        try a.write("doc.txt", "version one\n")
        #expect(Self.eventually("B has it") { b.read("doc.txt") == "version one\n" })
        let id = try await cloud.items()["doc.txt"]?.id
        let path = a.url("doc.txt").path

        // `>` (an O_TRUNC open): no download, the new content is the next version
        try Self.evict(a, "doc.txt")
        #expect(Self.shell("echo replaced > \"$0\"", path).status == 0)
        #expect(a.read("doc.txt") == "replaced\n")
        #expect(Self.eventually("B has the replacement") { b.read("doc.txt") == "replaced\n" })

        // `>>`: the content comes first, then the append
        try Self.evict(a, "doc.txt")
        #expect(Self.shell("echo appended >> \"$0\"", path).status == 0)
        #expect(a.read("doc.txt") == "replaced\nappended\n")
        #expect(Self.eventually("B has the append") { b.read("doc.txt") == "replaced\nappended\n" })

        // an editor's save: a temporary file renamed over it
        try Self.evict(a, "doc.txt")
        #expect(Self.shell("printf 'saved by an editor\\n' > \"$0.tmp\" && mv \"$0.tmp\" \"$0\"", path).status == 0)
        #expect(Self.eventually("B has the save") { b.read("doc.txt") == "saved by an editor\n" })

        // truncated to nothing
        try Self.evict(a, "doc.txt")
        #expect(Self.shell("truncate -s 0 \"$0\"", path).status == 0)
        #expect(Self.eventually("B has it empty") { b.read("doc.txt") == "" })

        // one item all along, never a conflict with itself
        #expect(Self.eventually("A uploaded it") { Self.uploaded(a, "doc.txt") })
        #expect(try await cloud.items()["doc.txt"]?.id == id)
        #expect(Self.conflicts(a, path) == 0 && Self.conflicts(b, b.url("doc.txt").path) == 0)

        // renamed and deleted while evicted: the item is
        try a.write("old-name.txt", "keep me")
        #expect(Self.eventually("B has it") { b.read("old-name.txt") == "keep me" })
        try Self.evict(a, "old-name.txt")
        #expect(Self.shell("mv \"$0\" \"$1\"", a.url("old-name.txt").path, a.url("new-name.txt").path).status == 0)
        #expect(Self.eventually("B has the rename") { b.read("new-name.txt") == "keep me" && !b.exists("old-name.txt") })
        #expect(Self.downloading(a, "new-name.txt") == "notDownloaded", "a rename does not download")
        #expect(Self.shell("rm \"$0\"", a.url("new-name.txt").path).status == 0)
        #expect(Self.eventually("B has the delete") { !b.exists("new-name.txt") })
    }

    // MARK: Ordinary sync through the mount

    @Test func writesRenamesAttributesAndRemoteChangesGoThroughTheMount() async throws {
        let cloud = try Cloud()
        let a = Self.mounted("alpha", cloud), b = Self.mounted("beta", cloud)
        defer { Self.cleanUp(a, b) }
        try a.start()
        try b.start()
        // writes, folders, renames, deletes by programs on A reach B (both mounted)
        #expect(Self.shell("mkdir -p \"$0/notes\" && echo one > \"$0/notes/a.txt\" && echo two > \"$0/b.txt\"", a.folder.path).status == 0)
        #expect(Self.eventually("B has A's files") { b.read("notes/a.txt") == "one\n" && b.read("b.txt") == "two\n" })
        #expect(Self.shell("mv \"$0/notes\" \"$0/journal\" && rm \"$0/b.txt\"", a.folder.path).status == 0)
        #expect(Self.eventually("B has the rename and the delete") { b.read("journal/a.txt") == "one\n" && !b.exists("b.txt") && !b.exists("notes") })

        // user attributes work through the mount; the skip-backup one keeps a file off the server
        let attributes = Self.shell("setfattr -n user.color -v blue \"$0\" && getfattr --only-values -n user.color \"$0\"", a.url("journal/a.txt").path)
        #expect(attributes.status == 0 && attributes.output.contains("blue"), "\(attributes)")
        try a.write("local-only.txt", "not for the server")
        try BackupExclusion.setExcluded(true, a.url("local-only.txt").path)
        #expect(try BackupExclusion.isExcluded(a.url("local-only.txt").path))
        #expect(Self.eventually("A says excluded") { Self.status(a, "local-only.txt")?["sync"] as? String == "excluded" })

        // remote changes from B show through A's mount at once (the kernel's caches follow)
        try b.write("journal/a.txt", "edited on B, longer than before")
        #expect(Self.eventually("A sees B's edit") { a.read("journal/a.txt") == "edited on B, longer than before" })
        var st = stat()
        #expect(stat(a.url("journal/a.txt").path, &st) == 0 && st.st_size == Int("edited on B, longer than before".utf8.count))
        try FileManager.default.moveItem(at: b.url("journal/a.txt"), to: b.url("journal/renamed.txt"))
        #expect(Self.eventually("A sees B's rename") { a.read("journal/renamed.txt") == "edited on B, longer than before" && !a.exists("journal/a.txt") })

        // an evicted file edited remotely: A's mount shows the new size, the read the new content
        try a.write("shared.txt", "short")
        #expect(Self.eventually("B has it") { b.read("shared.txt") == "short" })
        try Self.evict(a, "shared.txt")
        try b.write("shared.txt", "a much longer second version")
        #expect(Self.eventually("A's evicted file has B's size") {
            var st = stat()
            return stat(a.url("shared.txt").path, &st) == 0 && st.st_size == Int("a much longer second version".utf8.count)
        })
        #expect(Self.downloading(a, "shared.txt") == "notDownloaded")
        #expect(a.read("shared.txt") == "a much longer second version")
        #expect(Self.conflicts(a, a.url("shared.txt").path) == 0)
    }

    // MARK: Faults

    @Test func aKilledDaemonLeavesAnErrorNotAHangAndTheNextOneMountsAgain() async throws {
        let cloud = try Cloud()
        let a = Self.mounted("alpha", cloud), b = SyncDevice("beta", cloud)
        defer { Self.cleanUp(a, b) }
        try a.start()
        try b.start()
        let data = Self.content("written before the kill", size: 200_000)
        try data.write(to: a.url("before-kill.bin"))
        a.kill9()
        // every access answers ENOTCONN: a bounded error, never a hang
        let ls = Self.shell("ls \"$0\"", a.folder.path, seconds: 30)
        #expect(ls.status != 0 && ls.status != 124 && ls.output.contains("not connected"), "\(ls)")
        #expect(MountPoint.state(of: a.folder.path) == .ubiquity(live: false))

        // the next daemon clears the stale mount and mounts again; nothing written is lost
        try a.start()
        #expect(MountPoint.state(of: a.folder.path) == .ubiquity(live: true))
        #expect((try? Data(contentsOf: a.url("before-kill.bin"))) == data)
        #expect(Self.eventually("B has what was written before the kill") { (try? Data(contentsOf: b.url("before-kill.bin"))) == data })

        // a second daemon on the folder is refused with a clear message, mounted or not
        let second = SyncDevice("second", cloud)
        for extra in [["--mount"], []] {
            let arguments = ["daemon", "--server", cloud.url, "--api-token=" + cloud.apiToken, "--web-auth-token=" + cloud.webToken,
                             "--folder", a.folder.path] + extra
            let refused = try second.device.run(arguments, timeout: 60)
            #expect(refused.status != 0, "\(refused)")
            #expect(refused.stderr.contains("already mounted by another ubiq daemon") || refused.stderr.contains("another daemon already syncs this folder"), "\(refused)")
        }
        #expect(MountPoint.state(of: a.folder.path) == .ubiquity(live: true), "the refused daemons leave the mount alone")

        // SIGTERM unmounts cleanly
        a.stop()
        #expect(Self.eventually("A unmounts", seconds: 30) { MountPoint.state(of: a.folder.path) == .none })
        #expect((try? Data(contentsOf: a.url("before-kill.bin"))) == data, "the bytes stay in the folder on disk")
    }

    @Test func offlineAnUncachedReadFailsInBoundedTimeAndCachedFilesKeepWorking() async throws {
        let cloud = try Cloud()
        let a = Self.mounted("alpha", cloud, ["--mount-fetch-timeout", "10"]), b = SyncDevice("beta", cloud)
        defer { Self.cleanUp(a, b) }
        try a.start()
        try b.start()
        try a.write("away.txt", "evicted before going offline")
        try a.write("here.txt", "still downloaded")
        #expect(Self.eventually("B has both") { b.read("away.txt") != nil && b.read("here.txt") != nil })
        try Self.evict(a, "away.txt")
        cloud.stop()
        let read = Self.shell("cat \"$0\"", a.url("away.txt").path, seconds: 45)
        #expect(read.status != 0 && read.status != 124, "an error, not a hang: \(read)")
        #expect(read.output.contains("Input/output error") || read.output.contains("No such"), "\(read)")
        #expect(a.read("here.txt") == "still downloaded")
        try cloud.restart()
        #expect(Self.eventually("the read works once the server is back") { a.read("away.txt") == "evicted before going offline" })
    }
}

/// Whether this machine can mount with FUSE (CI, as root, can; the scripts install fuse3).
enum FuseSupport {
    static var available: Bool {
        access("/dev/fuse", R_OK | W_OK) == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/fusermount3")
    }
}
