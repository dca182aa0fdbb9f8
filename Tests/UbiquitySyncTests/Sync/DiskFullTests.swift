// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// The receiving device's disk is full: the download fails without a partial file, the other
/// changes still arrive, and once there is room the file comes. Needs root to mount a small tmpfs
/// (skipped otherwise).
@Suite(.serialized) struct DiskFullTests {
    static func mount(_ arguments: [String]) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/mount")
        process.arguments = arguments
        process.standardOutput = FileHandle.nullDevice
        process.standardError = FileHandle.nullDevice
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    static var canMount: Bool {
        guard getuid() == 0 else { return false }
        let probe = URL(fileURLWithPath: "/var/tmp/ubq-mount-probe-\(getpid())")
        try? FileManager.default.createDirectory(at: probe, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: probe) }
        return mount(["-t", "tmpfs", "-o", "size=64k", "tmpfs", probe.path]) && unmount(probe.path)
    }

    @discardableResult static func unmount(_ path: String) -> Bool {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/bin/umount")
        process.arguments = ["-l", path]
        guard (try? process.run()) != nil else { return false }
        process.waitUntilExit()
        return process.terminationStatus == 0
    }

    @Test(.enabled(if: DiskFullTests.canMount, "needs root to mount a small tmpfs"))
    func aFullDiskLosesNothingAndCatchesUp() async throws {
        let cloud = try SyncRig.Cloud()
        let a = SyncRig.SyncDevice("alpha", cloud), b = SyncRig.SyncDevice("beta", cloud)
        try FileManager.default.createDirectory(at: b.folder, withIntermediateDirectories: true)
        try #require(Self.mount(["-t", "tmpfs", "-o", "size=1m", "tmpfs", b.folder.path]))
        defer { b.stop(); Self.unmount(b.folder.path) }
        try a.start()
        try b.start()

        var generator = SeededRandom(seed: 7)
        let big = Data((0..<(3 << 20)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        try big.write(to: a.url("big.bin"))
        try a.write("small.txt", "still arrives")
        #expect(SyncRig.eventually("B has the small file") { b.read("small.txt") == "still arrives" })
        // no partial file under the real name (a retry's temporary may be in flight)
        try await Task.sleep(for: .seconds(1))  // let B try the big one (not a timing assertion)
        let names = try FileManager.default.contentsOfDirectory(atPath: b.folder.path)
            .filter { !$0.hasPrefix(".ubiquity-sync") && !$0.hasPrefix("..ubiq-tmp-") }
        #expect(Set(names) == ["small.txt"], "\(names)")
        // B's own changes still go up while its disk is full (the user's write is retried while a
        // download retry's temporary fills the disk for a moment: it is removed when it fails)
        #expect(SyncRig.eventually("B's user could write a small file") { (try? b.write("from-b.txt", "B")) != nil })
        #expect(SyncRig.eventually("A has B's file") { a.read("from-b.txt") == "B" })

        // room again: the file arrives whole
        #expect(Self.mount(["-o", "remount,size=16m", b.folder.path]))
        #expect(SyncRig.eventually("B has the big file", seconds: 180) {
            (try? Data(contentsOf: b.url("big.bin"))) == big
        })
        #expect(SyncRig.eventually("no temporary is left behind") {
            ((try? FileManager.default.contentsOfDirectory(atPath: b.folder.path)) ?? []).allSatisfy { !$0.hasPrefix("..ubiq-tmp-") }
        })
        a.stop()
    }
}
