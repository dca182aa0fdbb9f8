// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync
import UbiquityIndex

/// `ubiq doctor`: the deciding parts without I/O, then the command against a real server.
@Suite struct DoctorTests {
    @Test func inotifyLimitsAgainstTheFolder() {
        let fine = Doctor.inotify(limits: (watches: 524_288, instances: 128, queue: 16_384), directories: 1_000)
        #expect(fine.map(\.level) == [.ok])
        let tight = Doctor.inotify(limits: (watches: 8_192, instances: 8, queue: 4_096), directories: 7_000)
        #expect(tight.count == 3)
        #expect(tight.allSatisfy { $0.level == .warning && $0.fix != nil })
        #expect(tight[0].fix?.contains("sysctl fs.inotify.max_user_watches=524288") == true)
        let over = Doctor.inotify(limits: (watches: 8_192, instances: 128, queue: 16_384), directories: 9_000)
        #expect(over.first?.level == .failure)
        #expect(Doctor.inotify(limits: nil, directories: nil).first?.level == .failure)
    }

    @Test func fileSystemsAndClocks() {
        #expect(Doctor.fileSystemName(0xEF53) == "ext4")
        #expect(Doctor.fileSystemName(0x6969) == "nfs")
        #expect(Doctor.folder("/n", fileSystem: "nfs", exists: true).level == .warning)
        #expect(Doctor.folder("/e", fileSystem: "ext4", exists: true).level == .ok)
        #expect(Doctor.folder("/x", fileSystem: nil, exists: false).level == .warning)
        #expect(Doctor.clock(skew: 3, server: "s").level == .ok)
        let skewed = Doctor.clock(skew: -300, server: "s")
        #expect(skewed.level == .warning && skewed.detail.contains("300 s behind"))
        #expect(Doctor.clock(skew: nil, server: "s").level == .warning)
    }

    /// The sync's health as the engine keeps it, and as doctor judges it: ok while passes
    /// succeed, a warning after a failure or two, a failure with the last error after three.
    @Test func syncHealthFromPassesToFindings() {
        let start = Date(timeIntervalSince1970: 1_000_000)
        var health = SyncHealth()
        #expect(Doctor.sync(health.report(folder: "/f"), now: start).level == .ok)
        health.passSucceeded(at: start)
        let fine = Doctor.sync(health.report(folder: "/f"), now: start.addingTimeInterval(5))
        #expect(fine.level == .ok && fine.detail.contains("5 s ago"))
        health.passFailed("missing ckAPIToken", at: start.addingTimeInterval(10))
        #expect(Doctor.sync(health.report(folder: "/f")).level == .warning)
        health.passFailed("network down", at: start.addingTimeInterval(11))
        health.passFailed("missing ckAPIToken (or server-to-server signature headers)", at: start.addingTimeInterval(13))
        let report = health.report(folder: "/f")
        #expect(report.isFailing && report.consecutiveFailures == 3 && report.failingSince == start.addingTimeInterval(10))
        let failing = Doctor.sync(report, now: start.addingTimeInterval(40))
        #expect(failing.level == .failure)
        #expect(failing.detail.contains("3 passes") && failing.detail.contains("for 30 s") && failing.detail.contains("missing ckAPIToken"))
        #expect(failing.fix?.contains("ubiq account login") == true)
        health.passSucceeded(at: start.addingTimeInterval(50))
        #expect(health.report(folder: "/f") == SyncHealthReport(folder: "/f", lastSuccess: start.addingTimeInterval(50)))
    }

    @Test func theCommandChecksEverythingAndSaysWhatToFix() throws {
        let device = Device()
        let folder = device.root.appendingPathComponent("Ubiquity")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        // not signed in, no daemon: warnings, exit 0
        let alone = try device.run(["doctor", "--folder", folder.path])
        #expect(alone.status == 0, "\(alone.stdout)\(alone.stderr)")
        #expect(alone.stdout.contains("warning daemon: no daemon answers"))
        #expect(alone.stdout.contains("fix: `ubiq account login"))
        #expect(alone.stdout.contains("ok      inotify"))

        let data = device.root.appendingPathComponent("server").path
        #expect(try device.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw").status == 0)
        let server = try ServeRig.startServer(device, ["--data", data])
        #expect(try device.run(["account", "login", "--server", server.url, "--user", "mei", "--password-stdin"], input: "pw\n").status == 0)
        let signedIn = try device.run(["doctor", "--folder", folder.path, "--json"])
        #expect(signedIn.status == 0, "\(signedIn.stdout)")
        #expect(signedIn.stdout.contains(#""check":"server","level":"ok""#))
        #expect(signedIn.stdout.contains(#""check":"clock","level":"ok""#))
        #expect(signedIn.stdout.contains("accepts this device"))

        // the server gone: a failure, exit 1, and the fix
        server.process.kill(SIGTERM)
        _ = server.process.wait(seconds: 30)
        let down = try device.run(["doctor", "--folder", folder.path])
        #expect(down.status == 1)
        #expect(down.stdout.contains("FAIL    server"))
        #expect(down.stdout.contains("fix: check the URL"))
    }
}
