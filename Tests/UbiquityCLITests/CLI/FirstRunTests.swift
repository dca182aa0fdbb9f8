// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// The first run (`scripts/run` → `ubiq daemon --local-server`): a server inside the daemon, a
/// local account signed in, the folder synced; a second device joins with a device token; the
/// daemon installs itself as a systemd user unit. Real processes; waits are hang guards only.
@Suite(.serialized) struct FirstRunTests {
    @Test func aFirstRunSyncsTheFolderAndASecondDeviceJoins() throws {
        let a = SignedInDevice(), b = SignedInDevice()
        let daemon = try a.device.start(Binaries.ubiq, ["daemon", "--local-server", "--local-server-port", "0", "--local-user", "mei",
                                                        "--log-level", "warning", "--sync-poll-interval", "2"])
        a.process.set(daemon)
        let listening = try #require(daemon.waitForLine(containing: "local server listening on ", seconds: 60))
        let url = String(listening[listening.range(of: "listening on ")!.upperBound...]).trimmingCharacters(in: .whitespaces)
        #expect(url.hasPrefix("http://127.0.0.1:"))
        #expect(daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil)
        #expect(daemon.waitForLine(containing: "ubiq status", seconds: 30) != nil, "the next steps are printed")

        // signed in, with a device token, in a 0600 file
        let status = try a.device.run(["account", "status", "--json"])
        #expect(status.status == 0, "\(status.stderr)")
        #expect(status.stdout.contains("\"user\":\"mei\"") && status.stdout.contains(url))
        let accountFile = a.device.root.appendingPathComponent("config/ubiquity/account.json").path
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: accountFile)[.posixPermissions] as? Int)
        #expect(mode & 0o077 == 0)

        try Data("hello from the first run".utf8).write(to: a.folder.appendingPathComponent("hello.txt"))

        // a second device: a device token from this machine's server data, then login and daemon
        let token = try a.device.run(["admin", "user", "token", "mei", "--device"])
        #expect(token.status == 0, "\(token.stderr)")
        let login = try b.device.run(["account", "login", "--server", url, "--token=" + token.stdout.trimmingCharacters(in: .whitespacesAndNewlines)])
        #expect(login.status == 0, "\(login.stderr)")
        try b.startDaemon()
        #expect(SyncRig.eventually("B has the first run's file") { b.file("hello.txt") == "hello from the first run" })
        try Data("and back".utf8).write(to: b.folder.appendingPathComponent("reply.txt"))
        #expect(SyncRig.eventually("A has B's file") { a.file("reply.txt") == "and back" })
    }

    @Test func aSecondFirstRunReusesTheAccountAndThePort() throws {
        let a = SignedInDevice()
        let first = try a.device.start(Binaries.ubiq, ["daemon", "--local-server", "--local-server-port", "0", "--local-user", "mei"])
        let line = try #require(first.waitForLine(containing: "local server listening on ", seconds: 60))
        #expect(first.waitForLine(containing: "coordination service listening on", seconds: 60) != nil)
        first.signal(SIGTERM)
        #expect(first.wait(seconds: 60) == 0)
        let token = try a.device.run(["account", "status", "--offline", "--json"]).stdout

        // no port given: the signed-in local account's port; the account is kept
        let second = try a.device.start(Binaries.ubiq, ["daemon", "--local-server"])
        a.process.set(second)
        let again = try #require(second.waitForLine(containing: "local server listening on ", seconds: 60))
        #expect(again == line)
        #expect(second.waitForLine(containing: "coordination service listening on", seconds: 60) != nil)
        #expect(try a.device.run(["account", "status", "--offline", "--json"]).stdout == token)
    }

    @Test func aSIGTERMDuringStartUpStopsTheDaemonCleanlyOnceItIsUp() throws {
        // sent mid start-up (the folder, index and coordination service are still to come): caught,
        // not the default action that kills the process with status 15
        let a = SignedInDevice()
        let daemon = try a.device.start(Binaries.ubiq, ["daemon", "--local-server", "--local-server-port", "0", "--local-user", "mei"])
        #expect(daemon.waitForLine(containing: "local server listening on ", seconds: 60) != nil)
        daemon.signal(SIGTERM)
        #expect(daemon.wait(seconds: 60) == 0)
    }

    @Test func badLocalServerArgumentsAreUsageErrors() throws {
        let device = Device()
        let user = try device.run(["daemon", "--local-server", "--local-user", "no spaces"])
        #expect(user.status == 64 && user.stderr.contains("--local-user"), "\(user.stderr)")
        let port = try device.run(["daemon", "--local-server-port", "8080"])
        #expect(port.status == 64 && port.stderr.contains("--local-server"), "\(port.stderr)")
        let both = try device.run(["daemon", "--install-service", "--uninstall-service"])
        #expect(both.status == 64, "\(both.stderr)")
    }

    @Test func theDaemonAndTheServerInstallAsSystemdUserUnits() throws {
        // a shell that ran the tests: their switches stay out of the unit, the daemon's settings go in
        let device = Device(extraEnvironment: ["UBIQUITY_TEST_SYNC_LOG": "debug", "UBIQUITY_SKIP_POSTGRES": "1",
                                               "UBIQUITY_DEVICE_NAME": "desk"])
        let install = try device.run(["daemon", "--local-server", "--folder", "/var/tmp/my docs", "--install-service", "--no-start", "--json"])
        #expect(install.status == 0, "\(install.stderr)")
        let unitPath = device.root.appendingPathComponent("config/systemd/user/ubiquity-daemon.service").path
        #expect(install.stdout.contains(unitPath))
        let unit = try String(contentsOfFile: unitPath, encoding: .utf8)
        let exec = try #require(unit.split(separator: "\n").first { $0.hasPrefix("ExecStart=") })
        #expect(exec.hasPrefix("ExecStart=/") && exec.hasSuffix(" daemon --local-server --folder \"/var/tmp/my docs\""), "\(exec)")
        #expect(unit.contains("Environment=XDG_CONFIG_HOME=\(device.root.appendingPathComponent("config").path)"))
        #expect(unit.contains("Environment=UBIQUITY_DEVICE_NAME=desk"))
        #expect(!unit.contains("UBIQUITY_TEST_") && !unit.contains("UBIQUITY_SKIP_"), "\(unit)")
        let mode = try #require(try FileManager.default.attributesOfItem(atPath: unitPath)[.posixPermissions] as? Int)
        #expect(mode == 0o600)
        // the unit is the sample's text with the command, folder and environment filled in
        #expect(Self.template(unit) == Self.template(try Self.sample("ubiquity-daemon.service")))

        let serve = try device.run(["serve", "--port", "8081", "--install-service", "--no-start"])
        #expect(serve.status == 0, "\(serve.stderr)")
        let serveUnit = try String(contentsOfFile: device.root.appendingPathComponent("config/systemd/user/ubiquity-serve.service").path, encoding: .utf8)
        #expect(serveUnit.contains(" serve --port 8081\n"))
        #expect(Self.template(serveUnit) == Self.template(try Self.sample("ubiquity-serve.service")))

        let remove = try device.run(["daemon", "--uninstall-service"])
        #expect(remove.status == 0, "\(remove.stderr)")
        #expect(!FileManager.default.fileExists(atPath: unitPath))
    }

    /// A unit without the lines `--install-service` fills in.
    static func template(_ unit: String) -> [Substring] {
        unit.split(separator: "\n", omittingEmptySubsequences: false).filter {
            !$0.hasPrefix("ExecStart=") && !$0.hasPrefix("WorkingDirectory=") && !$0.hasPrefix("Environment=")
        }
    }

    static func sample(_ name: String) throws -> String {
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
            .deletingLastPathComponent()
        return try String(contentsOf: root.appendingPathComponent("Samples/systemd/" + name), encoding: .utf8)
    }
}
