// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import Testing
import UbiquityCore
import UbiquityTestSupport
import UbiquityWire

/// Chaos on real processes (issue 27, item 5): two devices and one server, all real processes,
/// and SIGKILLs that land while the tree is still being written and transferred.
///
/// - **Kills during a sync.** While A's folder gets a tree of files (and then edits and deletes
///   of some; in a second case B writes a tree of its own at the same time), a killer SIGKILLs
///   A's daemon, B's daemon and the server, in a seeded random order at seeded random moments,
///   each restarted after a short random pause. The first kill comes while A is still writing,
///   so kills land early, mid-upload and mid-write (a few files are large, so B's writes take a
///   while). Afterwards both folders equal what was written, byte for byte; the server has one
///   record per file with the content's hash; no temporary file is left on either device.
/// - **A full receiver.** B's folder is a tmpfs smaller than the tree (root only; the test
///   unmounts it even when it fails): B's daemon stays up, uploads nothing it could not write,
///   A's files and the server's copies stay whole, and once space is freed B catches up.
///
/// Bounded by default (600 files, 9 kills); `UBIQUITY_RUN_SLOW_TESTS=1` runs 10,000 files and 30
/// kills. Every run prints its seed; `UBIQUITY_CHAOS_SEED=N` replays its kill schedule (the
/// processes' own timing is not replayable).
@Suite("Chaos on real processes", .serialized)
struct ChaosTests {
    static let environment = ProcessInfo.processInfo.environment
    static let slow = environment["UBIQUITY_RUN_SLOW_TESTS"] != nil

    /// Which process a kill lands on.
    enum Target: String, CaseIterable {
        case sender, receiver, server
    }

    /// The content of file `index` in `round` (0: created, 1: edited): sizes from 1 KiB to
    /// 64 KiB, every 100th file 1 MiB (B's writes of those take a while).
    static func content(_ index: Int, round: Int, writer: String) -> Data {
        let size = index % 100 == 7 ? 1 << 20 : 1024 * (1 + (index * 37 + round * 11) % 64)
        return SyncRig.content("chaos-\(writer)-\(index)-\(round)", size: size)
    }

    static func path(_ index: Int, writer: String) -> String { "\(writer)\(index % 20)/file-\(index).bin" }

    static func sha(_ data: Data) -> String { Hex.encode(SHA256.hash(data: data)) }

    /// The daemon's own file in its folder (not synced).
    static let lockName = ".ubiquity-sync.lock"

    /// Files under `folder` (relative path → size), temporary files included: a cheap first check.
    static func sizes(_ folder: URL) -> [String: Int] {
        var found: [String: Int] = [:]
        guard let walker = FileManager.default.enumerator(at: folder, includingPropertiesForKeys: [.isRegularFileKey, .fileSizeKey]) else { return [:] }
        let prefix = folder.standardizedFileURL.path + "/"
        for case let url as URL in walker {
            guard let values = try? url.resourceValues(forKeys: [.isRegularFileKey, .fileSizeKey]), values.isRegularFile == true else { continue }
            let path = String(url.standardizedFileURL.path.dropFirst(prefix.count))
            if path != lockName { found[path] = values.fileSize ?? -1 }
        }
        return found
    }

    /// Files under `folder` (relative path → content hash), temporary files included.
    static func tree(_ folder: URL) -> [String: String] {
        var found: [String: String] = [:]
        for path in sizes(folder).keys {
            found[path] = (try? Data(contentsOf: folder.appendingPathComponent(path))).map(sha) ?? "unreadable"
        }
        return found
    }

    /// Whether `folder` holds exactly `files` (path → (size, hash)): sizes first, contents only then.
    static func holds(_ folder: URL, _ files: [String: (size: Int, hash: String)]) -> Bool {
        sizes(folder) == files.mapValues(\.size) && tree(folder) == files.mapValues(\.hash)
    }

    /// - Parameter writers: 1: A writes; 2: B writes its own tree too, at the same time.
    @Test(arguments: [1, 2]) func killsDuringASyncLoseNothing(writers: Int) async throws {
        let seed = Self.environment["UBIQUITY_CHAOS_SEED"].flatMap { UInt64($0) } ?? UInt64.random(in: 1...1_000_000)
        let files = Self.slow ? 10_000 : 600, kills = Self.slow ? 30 : 9
        print("chaos: seed \(seed) (replay: UBIQUITY_CHAOS_SEED=\(seed)), \(files) files, \(kills) kills")
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try a.start()
        try b.start()

        // The kill schedule, drawn before anything runs: each process at least once, then at
        // random; each kill waits a random moment and, after the first, until B has gained its
        // share of the files, so the kills spread over the whole transfer.
        var random = SeededRandom(seed: seed)
        let targets = (Target.allCases + (Target.allCases.count..<kills).map { _ in Target.allCases.randomElement(using: &random)! }).shuffled(using: &random)
        let schedule: [(target: Target, wait: Double, pause: Double)] = targets.map {
            ($0, Double.random(in: 0.05...0.6, using: &random), Double.random(in: 0...0.3, using: &random))
        }
        let landed = Mutex<[String]>([])
        let failure = Mutex<String?>(nil)
        let done = DispatchSemaphore(value: 0)
        // the killer runs on a thread of its own: kills and restarts block while processes exit and start
        Thread.detachNewThread {
            defer { done.signal() }
            for (index, kill) in schedule.enumerated() {
                usleep(UInt32(kill.wait * 1_000_000))
                let share = files * index / (kills + 1)
                let deadline = Date(timeIntervalSinceNow: 60)
                while index > 0, Self.sizes(b.folder).count < share, Date() < deadline { usleep(50_000) }
                let onB = Self.sizes(b.folder).count
                switch kill.target {
                case .sender: a.kill9()
                case .receiver: b.kill9()
                case .server: cloud.kill9()
                }
                landed.withLock { $0.append("\(kill.target.rawValue) (\(onB) files on B)") }
                usleep(UInt32(kill.pause * 1_000_000))
                do {
                    switch kill.target {
                    case .sender: try a.start()
                    case .receiver: try b.start()
                    case .server: try cloud.restart()
                    }
                } catch {
                    failure.withLock { $0 = "seed \(seed): restarting the \(kill.target.rawValue) failed: \(error)" }
                    return
                }
            }
        }

        // A (and B) write their trees while the kills land, then edit a fifth and delete a tenth
        var expected: [String: (size: Int, hash: String)] = [:]
        let devices = [("d", a), ("b", b)].prefix(writers)
        func put(_ index: Int, round: Int) throws {
            for (writer, device) in devices {
                let data = Self.content(index, round: round, writer: writer)
                let url = device.url(Self.path(index, writer: writer))
                try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
                try data.write(to: url)
                expected[Self.path(index, writer: writer)] = (data.count, Self.sha(data))
            }
        }
        for index in 0..<files { try put(index, round: 0) }
        for index in stride(from: 0, to: files, by: 5) { try put(index, round: 1) }
        for index in stride(from: 3, to: files, by: 10) {
            for (writer, device) in devices {
                try FileManager.default.removeItem(at: device.url(Self.path(index, writer: writer)))
                expected[Self.path(index, writer: writer)] = nil
            }
        }
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            Thread.detachNewThread {
                done.wait()
                continuation.resume()
            }
        }
        print("chaos: seed \(seed): kills landed on " + landed.withLock { $0 }.joined(separator: ", "))
        if let failure = failure.withLock({ $0 }) { Issue.record(Comment(rawValue: failure)) }

        let want = expected
        let hashes = want.mapValues(\.hash)
        let converged = SyncRig.eventually("B's folder equals what was written (seed \(seed))", seconds: Self.slow ? 900 : 300) { Self.holds(b.folder, want) }
        if !converged { Issue.record("seed \(seed): B differs in \(Self.differences(Self.tree(b.folder), hashes))") }
        let aConverged = SyncRig.eventually("A's folder equals what was written (seed \(seed))", seconds: 120) { Self.holds(a.folder, want) }
        if !aConverged { Issue.record("seed \(seed): A differs in \(Self.differences(Self.tree(a.folder), hashes))") }
        // the server: one record per file (items() throws on two for one path), each with its content's hash
        #expect(await SyncRig.eventuallyAsync("the server holds exactly the files written (seed \(seed))") {
            let files = try await cloud.items().filter { !$0.value.hash.isEmpty }
            return files.count == hashes.count && hashes.allSatisfy { Self.sameContent(files[$0.key]?.hash, $0.value) }
        })
        a.stop()
        b.stop()
    }

    /// Whether a record's content hash is that of the content whose SHA-256 is `sha`: equal, or
    /// a chunk-list hash (large files), whose bytes B's copy checks instead.
    static func sameContent(_ recordHash: String?, _ sha: String) -> Bool {
        guard let recordHash else { return false }
        return recordHash == sha || AssetChecksum.kind(ofHex: recordHash) == .chunkList
    }

    /// What differs between two trees, briefly (for a failure's message).
    static func differences(_ found: [String: String], _ wanted: [String: String]) -> String {
        let missing = wanted.keys.filter { found[$0] == nil }.sorted()
        let extra = found.keys.filter { wanted[$0] == nil }.sorted()
        let changed = wanted.keys.filter { found[$0] != nil && found[$0] != wanted[$0] }.sorted()
        return "\(missing.count) missing \(missing.prefix(3)), \(extra.count) extra \(extra.prefix(3)), \(changed.count) different \(changed.prefix(3))"
    }

    @Test(.enabled(if: getuid() == 0, "mounting a tmpfs needs root"))
    func aFullReceiverLosesNothingAndCatchesUp() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try FileManager.default.createDirectory(at: b.folder, withIntermediateDirectories: true)
        try Self.mount(b.folder, megabytes: 3)
        defer {
            b.stop()
            Self.unmount(b.folder)
        }
        try a.start()
        try b.start()
        // 24 files of 256 KiB: 6 MiB, twice what B's folder can hold
        var expected: [String: String] = [:]
        for index in 0..<24 {
            let data = SyncRig.content("full-\(index)", size: 256 << 10)
            try a.write("full/file-\(index).bin", String(decoding: data, as: UTF8.self))
            expected["full/file-\(index).bin"] = Self.sha(data)
        }
        let want = expected
        // the server gets everything whole; B fills up and neither crashes nor sends back what it could not write
        #expect(await SyncRig.eventuallyAsync("the server has every file") {
            let items = try await cloud.items()
            return want.allSatisfy { Self.sameContent(items[$0.key]?.hash, $0.value) }
        })
        #expect(SyncRig.eventually("B's folder is full") { Self.tree(b.folder).count >= 8 })
        try await Task.sleep(for: .seconds(2))  // let B try and fail for a while (not a timing assertion)
        #expect(b.isRunning, "B's daemon exited on a full disk")
        let items = try await cloud.items()
        #expect(want.allSatisfy { Self.sameContent(items[$0.key]?.hash, $0.value) }, "a full receiver changed the server's copies")
        let aIntact = Self.tree(a.folder) == want
        if !aIntact { Issue.record("A's folder changed: \(Self.differences(Self.tree(a.folder), want))") }
        for (path, hash) in Self.tree(b.folder) where !path.contains(SafeSave.temporaryPrefix) {
            #expect(want[path] == hash, "B shows a partial file \(path)")
        }
        // space comes back: B catches up
        try Self.remount(b.folder, megabytes: 64)
        if !SyncRig.eventually("B catches up once space is freed", { Self.tree(b.folder) == want }) {
            Issue.record("B differs in \(Self.differences(Self.tree(b.folder), want))")
        }
        a.stop()
    }

    static func mount(_ folder: URL, megabytes: Int) throws {
        let run = try Self.command("/bin/mount", ["-t", "tmpfs", "-o", "size=\(megabytes)m", "tmpfs", folder.path])
        guard run == 0 else { throw DeviceError.didNotStart("mount -t tmpfs (status \(run))") }
    }

    static func remount(_ folder: URL, megabytes: Int) throws {
        let run = try Self.command("/bin/mount", ["-o", "remount,size=\(megabytes)m", folder.path])
        guard run == 0 else { throw DeviceError.didNotStart("mount -o remount (status \(run))") }
    }

    static func unmount(_ folder: URL) {
        _ = try? Self.command("/bin/umount", ["-l", folder.path])
    }

    static func command(_ executable: String, _ arguments: [String]) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        try process.run()
        process.waitUntilExit()
        return process.terminationStatus
    }
}
