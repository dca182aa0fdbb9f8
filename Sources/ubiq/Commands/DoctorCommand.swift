// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityIndex
import UbiquityMount
import UbiquitySync
import UbiquityCloudKit

/// `ubiq doctor`: checks what Ubiquity depends on and says exactly what to fix.
struct DoctorCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "doctor",
        abstract: "Check inotify limits, the daemon, the account and server, clocks, the folder's file system and extended attributes.",
        discussion: """
            Each line is a check: `ok`, `warning` (works, but will bite) or `FAIL`, with the fix \
            under it. Exit codes: 0 nothing failed (warnings allowed); 1 something failed.

            Examples:
              ubiq doctor
              ubiq doctor --folder ~/Ubiquity --json
            """)

    @Option(help: "The sync folder (default $UBIQUITY_FOLDER or ~/Ubiquity).")
    var folder: String?

    @Flag(help: "Print one JSON object per check.")
    var json = false

    @Flag(help: "Do not contact the server.")
    var offline = false

    func run() async throws {
        let paths = UbiquityPaths()
        let environment = ProcessInfo.processInfo.environment
        let folderPath = try folder.map(CLI.absolutePath) ?? environment["UBIQUITY_FOLDER"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? paths.home.appendingPathComponent("Ubiquity").path
        var isDirectory: ObjCBool = false
        let mounted: Bool? = switch MountPoint.state(of: folderPath) {
        case .ubiquity(let live): live
        default: nil
        }
        let folderExists = mounted != false && FileManager.default.fileExists(atPath: folderPath, isDirectory: &isDirectory) && isDirectory.boolValue
        var findings: [DoctorFinding] = []

        let walk = folderExists ? Doctor.walk(folderPath) : nil
        findings += Doctor.inotify(limits: Doctor.readInotifyLimits(), directories: walk?.directories)
        findings += daemonFindings()
        if mounted == nil {
            findings.append(Doctor.folder(folderPath, fileSystem: folderExists ? Doctor.fileSystem(of: folderPath) : nil, exists: folderExists))
        }
        findings += Doctor.mount(folderPath, devFuse: access("/dev/fuse", R_OK | W_OK) == 0,
                                 fusermount: ["/usr/bin/fusermount3", "/bin/fusermount3"].contains { FileManager.default.isExecutableFile(atPath: $0) },
                                 mounted: mounted)
        if let walk { findings.append(Doctor.names(invalid: walk.invalidNames)) }
        let probeDirectory = folderExists ? folderPath : paths.dataDirectory.path
        if FileManager.default.fileExists(atPath: probeDirectory) {
            findings.append(Doctor.extendedAttributes(in: probeDirectory))
            if let disk = Doctor.disk(probeDirectory) { findings.append(disk) }
        }
        findings += await accountFindings()

        for finding in findings {
            if json {
                CLI.printLine(CLI.jsonObject([("check", finding.check), ("level", finding.level.rawValue), ("detail", finding.detail), ("fix", finding.fix)]))
            } else {
                let mark = finding.level == .ok ? "ok     " : finding.level == .warning ? "warning" : "FAIL   "
                CLI.printLine("\(mark) \(finding.check): \(finding.detail)")
                if let fix = finding.fix, finding.level != .ok { CLI.printLine("        fix: \(fix)") }
            }
        }
        if findings.contains(where: { $0.level == .failure }) { throw ExitCode.failure }
    }

    /// The daemon, and its folder sync's health when it syncs one.
    func daemonFindings() -> [DoctorFinding] {
        do {
            let reply = try MetadataQueryControl.request(ControlWire.Request(op: .status))
            guard let status = reply.status else { return [DoctorFinding("daemon", .warning, "the daemon answered without a status")] }
            let messages = status.messages.isEmpty ? "" : "; it reports: " + status.messages.joined(separator: "; ")
            let daemon = DoctorFinding("daemon", status.messages.isEmpty ? .ok : .warning,
                                       "running: \(status.items) items indexed, \(status.watches) watches\(messages)")
            return [daemon] + (status.sync.map { [Doctor.sync($0)] } ?? [])
        } catch {
            return [DoctorFinding("daemon", .warning, "no daemon answers on \(ControlWire.socketPath()): nothing syncs and queries scan on their own",
                                  fix: "start it: `ubiq daemon &` (or as a systemd user service)")]
        }
    }

    func accountFindings() async -> [DoctorFinding] {
        let account: UbiquityAccountFile.Account?
        do {
            account = try UbiquityAccountFile().read()
        } catch {
            return [DoctorFinding("account", .failure, "\(error)", fix: "sign in again: `ubiq account login --server URL`")]
        }
        guard let account else {
            return [DoctorFinding("account", .warning, "not signed in: nothing syncs", fix: "`ubiq account login --server URL --user NAME`")]
        }
        var findings = [DoctorFinding("account", .ok, "\(account.user) on \(account.server)\(account.deviceName.map { " as \($0)" } ?? "")")]
        guard !offline, let url = URL(string: account.server) else { return findings }
        let transport = HTTPClientTransport()
        let before = Date()
        let health: CloudKitHTTPResponse
        do {
            let prefix = url.path.hasSuffix("/") ? String(url.path.dropLast()) : url.path
            health = try await transport.send(CloudKitHTTPRequest(serverURL: url, method: "GET", path: prefix + "/healthz"))
        } catch {
            findings.append(DoctorFinding("server", .failure, "\(account.server) cannot be reached: \(error)",
                                          fix: "check the URL and that `ubiq serve` runs there (`curl \(account.server)/healthz`)"))
            return findings
        }
        let after = Date()
        if health.status == 200 {
            findings.append(DoctorFinding("server", .ok, "\(account.server) answers"))
        } else {
            findings.append(DoctorFinding("server", .failure, "\(account.server)/healthz answered \(health.status): \(String(decoding: health.body.prefix(200), as: UTF8.self))",
                                          fix: "look at the server's log; its storage may be down"))
        }
        // The header has one-second resolution: compare with the middle of the request.
        let skew = ServerClock.skew(dateHeader: health.header("Date"), before: before, after: after)
        findings.append(Doctor.clock(skew: skew.map { abs($0) < 1 ? 0 : $0 }, server: account.server))
        if let token = account.deviceToken {
            do {
                _ = try await AccountSignIn(serverURL: url).signIn(token: token, deviceName: account.deviceName ?? "")
                findings.append(DoctorFinding("account", .ok, "the server accepts this device's token"))
            } catch {
                findings.append(DoctorFinding("account", .failure, "the server refuses this device's token: \(error)",
                                              fix: "sign in again: `ubiq account login --server \(account.server) --user \(account.user)`"))
            }
        } else {
            findings.append(DoctorFinding("account", .failure, "the account file has no device token", fix: "sign in again: `ubiq account login --server \(account.server)`"))
        }
        return findings
    }
}
