// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(FoundationNetworking)
import FoundationNetworking
#endif
import Testing
import UbiquityTestSupport
import UbiquityCore
import UbiquityWire

/// `ubiq serve` and `ubiq admin` as real processes: readiness, health, metrics, graceful
/// shutdown without losing a committed write, and several servers on one PostgreSQL.
@Suite struct ServeCLITests {
    @Test func serveAdminHealthMetricsAndGracefulShutdown() async throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        let api = try device.run(["admin", "--data", data, "container", "add", "iCloud.org.example.Serve"])
        #expect(api.status == 0)
        let apiToken = api.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(!apiToken.contains("\n") && apiToken.count >= 40)
        let web = try device.run(["admin", "--data", data, "user", "add", "mei", "--email", "mei@example.org"])
        let webToken = web.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try device.run(["admin", "--data", data, "user", "token", "mei"]).status == 0)
        #expect(try device.run(["admin", "--data", data, "user", "token", "nobody"]).status != 0)
        let badKey = try device.run(["admin", "--data", data, "key", "add", "iCloud.org.example.Serve", "--public-key=-----BEGIN PUBLIC KEY-----\nnope\n-----END PUBLIC KEY-----"])
        #expect(badKey.status == 64)
        #expect(badKey.stderr.contains("--public-key"))

        let readyFile = device.root.appendingPathComponent("ready").path
        let server = try ServeRig.startServer(device, ["--data", data], extra: ["--ready-file", readyFile])
        #expect(server.url.hasPrefix("http://127.0.0.1:"))
        #expect((try? String(contentsOfFile: readyFile, encoding: .utf8))?.trimmingCharacters(in: .newlines) == server.url)
        #expect(try await ServeRig.request(server.url + "/healthz").body == "ok\n")

        @Sendable func write(_ index: Int) async -> String? {
            let body = #"{"operations":[{"operationType":"create","record":{"recordType":"Note","recordName":"n\#(index)","fields":{"i":{"value":\#(index)}}}}]}"#
            guard let reply = try? await ServeRig.request(ServeRig.endpoint(server, "records/modify", api: apiToken, web: webToken), body: body),
                  reply.status == 200, reply.body.contains("recordChangeTag") else { return nil }
            return "n\(index)"
        }
        // a few writes answered before the signal (on a loaded machine the concurrent ones below
        // may all arrive after it), then writes in flight when SIGTERM arrives: every one that
        // was answered 200 is stored
        var before: [String] = []
        for index in 0..<4 { if let name = await write(index) { before.append(name) } }
        #expect(before.count == 4)
        let during = await withTaskGroup(of: String?.self) { group in
            for index in 4..<40 {
                group.addTask {
                    if index == 20 { server.process.signal(SIGTERM) }
                    return await write(index)
                }
            }
            var names: [String] = []
            for await name in group { if let name { names.append(name) } }
            return names
        }
        let answered = before + during
        #expect(server.process.wait(seconds: 60) == 0)

        let again = try ServeRig.startServer(device, ["--data", data])
        defer { again.process.kill(SIGTERM); _ = again.process.wait(seconds: 30) }
        let lookupBody = "{\"records\":[" + answered.map { "{\"recordName\":\"\($0)\"}" }.joined(separator: ",") + "]}"
        let lookup = try await ServeRig.request(ServeRig.endpoint(again, "records/lookup", api: apiToken, web: webToken), body: lookupBody)
        #expect(lookup.status == 200)
        #expect(!lookup.body.contains("NOT_FOUND"), "a write answered before shutdown was lost: \(lookup.body)")
        let metrics = try await ServeRig.request(again.url + "/metrics")
        #expect(metrics.body.contains("ubiquity_records_requests_total"))
    }

    /// Graceful shutdown reaches every connection: one opened before the signal and never used,
    /// one opened before and used after it (served, then closed rather than kept alive), and one
    /// that sent half a request and stopped (closed after `--shutdown-grace`). Before the fix
    /// the first two kept the server running for as long as their clients stayed connected.
    @Test func connectionsOpenAtShutdownDoNotKeepTheServerRunning() async throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        #expect(try device.run(["admin", "--data", data, "container", "add", "iCloud.org.example.Serve"]).status == 0)
        let server = try ServeRig.startServer(device, ["--data", data], extra: ["--shutdown-grace", "2"])
        defer { server.process.kill() }
        let port = try #require(URL(string: server.url)?.port)
        let unused = try RawConnection(port: port)
        let late = try RawConnection(port: port)
        let halfway = try RawConnection(port: port)
        halfway.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n")
        // the server has the connections once it answers on another one
        #expect(try await ServeRig.request(server.url + "/healthz").body == "ok\n")

        server.process.signal(SIGTERM)
        late.send("GET /healthz HTTP/1.1\r\nHost: 127.0.0.1\r\n\r\n")
        let answer = late.receiveToEnd()
        // served in full if it arrived before the connection was closed; either way it ends
        #expect(answer.isEmpty || answer.hasSuffix("ok\n"), "\(answer)")
        #expect(unused.receiveToEnd().isEmpty)
        #expect(halfway.receiveToEnd().isEmpty)
        // a generous guard against a hang, not a timing assertion
        #expect(server.process.wait(seconds: 90) == 0)
    }

    @Test func adminGarbageCollectsAssets() throws {
        let device = Device()
        let data = device.root.appendingPathComponent("server").path
        #expect(try device.run(["admin", "--data", data, "container", "add", "iCloud.org.example.Serve"]).status == 0)
        let collected = try device.run(["admin", "--data", data, "gc", "--older-than", "0"])
        #expect(collected.status == 0, "\(collected.stderr)")
        #expect(collected.stdout.hasPrefix("deleted 0 assets"))
        #expect(FileManager.default.fileExists(atPath: data + "/blobs"))
        let noBlobs = try device.run(["admin", "--database", "postgres://postgres@127.0.0.1:1/nope", "gc"], timeout: 60)
        #expect(noBlobs.status != 0)
        #expect(try device.run(["admin", "--data", data, "gc", "--older-than", "-1"]).status == 64)
    }

    @Test func serverFlagsAreChecked() throws {
        let device = Device()
        let both = try device.run(["serve", "--data", "/tmp/x", "--database", "postgres://h/db"])
        #expect(both.status == 64)
        #expect(try device.run(["serve", "--port", "70000"]).status == 64)
        #expect(try device.run(["serve", "--tls-cert", "/nonexistent.pem"]).status == 64)
        let noBlobs = try device.run(["serve", "--database", "postgres://postgres@127.0.0.1:1/nope", "--port", "0"])
        #expect(noBlobs.status == 64)
        #expect(noBlobs.stderr.contains("--blobs"))
        #expect(try device.run(["serve", "--private-quota", "5X"]).status == 64)
        let unreachable = try device.run(["serve", "--database", "postgres://postgres@127.0.0.1:1/nope", "--blobs", "/tmp/ubq-serve-blobs-unused", "--port", "0"],
                                         timeout: 60)
        #expect(unreachable.status != 0)
        #expect(unreachable.stderr.contains("127.0.0.1"))
    }

    /// Several `ubiq serve` processes on one PostgreSQL behave as one server: concurrent
    /// read-modify-write increments through both, with change tags, lose nothing.
    @Test(.enabled(if: ProcessInfo.processInfo.environment["UBIQUITY_TEST_POSTGRES_URL"] != nil))
    func serversSharingPostgreSQLLoseNoUpdate() async throws {
        let device = Device()
        let url = ProcessInfo.processInfo.environment["UBIQUITY_TEST_POSTGRES_URL"]!
        let schema = "serve_" + String(UUID().uuidString.prefix(8)).lowercased()
        let store = ["--database", url, "--schema", schema, "--blobs", NSTemporaryDirectory() + "ubq-blobs-" + schema]
        let apiToken = try device.run(["admin"] + store + ["container", "add", "iCloud.org.example.Serve"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let webToken = try device.run(["admin"] + store + ["user", "add", "mei"]).stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        let servers = [try ServeRig.startServer(device, store), try ServeRig.startServer(device, store)]
        defer { for server in servers { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) } }
        let create = #"{"operations":[{"operationType":"create","record":{"recordType":"Counter","recordName":"c","fields":{"n":{"value":0}}}}]}"#
        #expect(try await ServeRig.request(ServeRig.endpoint(servers[0], "records/modify", api: apiToken, web: webToken), body: create).status == 200)
        let workers = 6, increments = 8
        try await withThrowingTaskGroup(of: Void.self) { group in
            for worker in 0..<workers {
                group.addTask {
                    let server = servers[worker % 2]
                    var done = 0
                    while done < increments {
                        let lookup = try await ServeRig.request(ServeRig.endpoint(server, "records/lookup", api: apiToken, web: webToken), body: #"{"records":[{"recordName":"c"}]}"#)
                        let record = try JSONValue.parse(Data(lookup.body.utf8)).objectValue?["records"]?.arrayValue?.first?.objectValue
                        guard let tag = record?["recordChangeTag"]?.stringValue,
                              case .integer(let value)? = record?["fields"]?.objectValue?["n"]?.objectValue?["value"] else { continue }
                        let update = #"{"operations":[{"operationType":"update","record":{"recordName":"c","recordChangeTag":"\#(tag)","fields":{"n":{"value":\#(value + 1)}}}}]}"#
                        let reply = try await ServeRig.request(ServeRig.endpoint(server, "records/modify", api: apiToken, web: webToken), body: update)
                        if reply.status == 200, !reply.body.contains("serverErrorCode") { done += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        let final = try await ServeRig.request(ServeRig.endpoint(servers[1], "records/lookup", api: apiToken, web: webToken), body: #"{"records":[{"recordName":"c"}]}"#)
        let value = try JSONValue.parse(Data(final.body.utf8)).objectValue?["records"]?.arrayValue?.first?.objectValue?["fields"]?.objectValue?["n"]?.objectValue?["value"]
        #expect(value == .integer(Int64(workers * increments)))
    }
}
