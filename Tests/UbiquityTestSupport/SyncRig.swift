// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import Testing
import Ubiquity
import UbiquityCloudKit
import UbiquityCore
import UbiquitySync

/// Sync end to end with real processes: one `ubiq serve` (SQLite, port 0) and `ubiq daemon`
/// devices, each with its own folder, state, runtime folder and sockets; and the hang guards
/// every such test waits with (generous, 120 s, never a timing assertion).
package enum SyncRig {
    /// The server and the credentials of its one user.
    package final class Cloud: Sendable {
        package let device: Device
        package let apiToken: String
        package let webToken: String
        package let url: String
        /// The arguments that name its store: `--data DIR`, or a shared one.
        private let store: [String]
        private let process: Mutex<Subprocess?>

        /// A server on SQLite in a folder of its own.
        package convenience init() throws {
            let device = Device()
            try self.init(device: device, store: ["--data", device.root.appendingPathComponent("server").path])
        }

        /// A server on the store `store` names (`--database URL --schema S --blobs s3://…`, say),
        /// made ready with the container and the user.
        package convenience init(store: [String]) throws {
            try self.init(device: Device(), store: store)
        }

        private convenience init(device: Device, store: [String]) throws {
            let apiToken = try device.run(["admin"] + store + ["container", "add", SyncRecord.defaultContainer]).stdout
                .trimmingCharacters(in: .whitespacesAndNewlines)
            let webToken = try device.run(["admin"] + store + ["user", "add", "mei"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
            try self.init(device: device, store: store, apiToken: apiToken, webToken: webToken)
        }

        private init(device: Device, store: [String], apiToken: String, webToken: String) throws {
            self.device = device
            self.store = store
            self.apiToken = apiToken
            self.webToken = webToken
            let server = try ServeRig.startServer(device, store)
            url = server.url
            process = Mutex(server.process)
        }

        /// A second server process on the same store, with the same user and tokens: servers
        /// that act as one.
        /// Runs `ubiq admin … ARGUMENTS` on the server's store (input on stdin).
        package func admin(_ arguments: [String], input: String? = nil) throws -> UbiqRun {
            try device.run(["admin"] + store + arguments, input: input)
        }

        package func sibling() throws -> Cloud {
            try Cloud(device: Device(), store: store, apiToken: apiToken, webToken: webToken)
        }

        /// Stops the server (SIGTERM).
        package func stop() {
            guard let server = process.withLock({ value in defer { value = nil }; return value }) else { return }
            server.kill(SIGTERM)
        }

        /// Kills the server at once (SIGKILL): no request is finished, no store closed.
        package func kill9() {
            process.withLock { value in defer { value = nil }; return value }?.kill(SIGKILL)
        }

        /// Starts it again on the same port and data.
        package func restart() throws {
            let port = String(URL(string: url)!.port!)
            let server = try device.start(Binaries.ubiq, ["serve", "--port", port, "--log-level", "warning"] + store)
            guard server.waitForLine(containing: "listening on ") != nil else {
                server.kill()
                throw DeviceError.didNotStart("ubiq serve (again)")
            }
            process.withLock { $0 = server }
        }

        /// Every item the server has: path → (record name, content hash). Throws when two
        /// records name one path (a duplicate).
        package func items() async throws -> [String: (id: String, hash: String)] {
            let container = CloudContainer(identifier: SyncRecord.defaultContainer, serverURL: URL(string: url)!,
                                           credentials: .apiToken(apiToken, webAuthToken: webToken))
            var items: [String: (id: String, hash: String)] = [:]
            for record in try await SyncRig.liveRecords(container.privateCloudDatabase) {
                guard let item = SyncRecord.item(from: record) else { continue }
                if let other = items[item.path] { throw DuplicateItem(path: item.path, ids: [other.id, item.id]) }
                items[item.path] = (item.id, item.contentHash)
            }
            return items
        }

        deinit { stop() }
    }

    package struct DuplicateItem: Error { let path: String; let ids: [String] }

    /// The documents zone's live records, listed from the start of its changes.
    package static func liveRecords(_ database: CloudDatabase) async throws -> [Record] {
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
    package final class SyncDevice: Sendable {
        package let device = Device()
        package let name: String
        package let cloud: Cloud
        private let daemon = LockedProcess()
        /// More arguments of its daemon (`--mount`, say).
        package let extra: [String]
        package var folder: URL { device.root.appendingPathComponent("home/Ubiquity") }

        package init(_ name: String, _ cloud: Cloud, extra: [String] = []) {
            self.name = name
            self.cloud = cloud
            self.extra = extra
        }

        package var arguments: [String] {
            ["daemon", "--log-level", ProcessInfo.processInfo.environment["UBIQUITY_TEST_SYNC_LOG"] ?? "warning", "--server", cloud.url,
             // tokens are base64url and may start with '-': always pass them attached
             "--api-token=" + cloud.apiToken, "--web-auth-token=" + cloud.webToken,
             "--folder", folder.path, "--device-name", name] + extra
        }

        package func start() throws {
            let process = try device.start(Binaries.ubiq, arguments)
            guard process.waitForLine(containing: "coordination service listening on", seconds: 60) != nil else {
                process.kill()
                throw DeviceError.didNotStart("ubiq daemon (\(name))")
            }
            daemon.set(process)
        }

        package func stop() {
            guard let process = daemon.take() else { return }
            process.kill(SIGTERM)
        }

        package func kill9() { daemon.take()?.kill(SIGKILL) }

        /// Whether its daemon runs (started and not exited).
        package var isRunning: Bool { daemon.isRunning }

        /// What its daemon printed so far (for a failing test's message).
        package var daemonOutput: String { daemon.output.joined(separator: "\n") }

        package func url(_ relative: String) -> URL { folder.appendingPathComponent(relative) }

        package func write(_ relative: String, _ text: String) throws {
            let url = url(relative)
            try FileManager.default.createDirectory(at: url.deletingLastPathComponent(), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: url)
        }

        package func read(_ relative: String) -> String? {
            (try? Data(contentsOf: url(relative))).map { String(decoding: $0, as: UTF8.self) }
        }

        package func exists(_ relative: String) -> Bool { FileStamp.of(url(relative).path) != nil }

        /// `ubiq status PATH --json`'s sync state.
        package func syncStatus(_ relative: String) -> String? {
            guard let run = try? device.run(["status", url(relative).path, "--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any] else { return nil }
            return json["sync"] as? String
        }

        deinit { stop() }
    }

    /// A daemon process that can be replaced.
    package final class LockedProcess: Sendable {
        private let process = Mutex<Subprocess?>(nil)
        /// None yet.
        package init() {}
        package func set(_ new: Subprocess) { process.withLock { $0 = new } }
        package func take() -> Subprocess? { process.withLock { value in defer { value = nil }; return value } }
        /// Whether there is a process and it has not exited.
        package var isRunning: Bool { process.withLock { $0?.isRunning ?? false } }
        /// The process's output lines so far (none without a process).
        package var output: [String] { process.withLock { $0?.output ?? [] } }
    }

    /// Polls `check` until it holds (a hang guard, not a timing assertion).
    package static func eventually(_ what: String, seconds: Double = 120, _ check: () -> Bool) -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if check() { return true }
            usleep(20_000)
        }
        Issue.record("timed out waiting until \(what)")
        return false
    }

    package static func eventuallyAsync(_ what: String, seconds: Double = 120, _ check: () async throws -> Bool) async -> Bool {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if (try? await check()) == true { return true }
            try? await Task.sleep(for: .milliseconds(50))
        }
        Issue.record("timed out waiting until \(what)")
        return false
    }

    package static func sha(_ text: String) -> String { Hex.encode(SHA256.hash(data: Data(text.utf8))) }

    /// Bytes that differ from file to file (no run of zeros a placeholder could be taken for).
    package static func content(_ seed: String, size: Int) -> Data {
        var data = Data(capacity: size)
        var counter = 0
        while data.count < size {
            data.append(contentsOf: Hex.encode(SHA256.hash(data: Data("\(seed)-\(counter)".utf8))).utf8)
            counter += 1
        }
        return data.prefix(size)
    }

    package static func status(_ device: SyncDevice, _ relative: String) -> [String: Any]? {
        guard let run = try? device.device.run(["status", device.url(relative).path, "--json"]), run.status == 0 else { return nil }
        return try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any]
    }

    package static func uploaded(_ device: SyncDevice, _ relative: String) -> Bool {
        status(device, relative)?["sync"] as? String == "uploaded"
    }
}
