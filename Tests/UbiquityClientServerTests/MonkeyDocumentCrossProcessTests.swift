// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// The MonkeyDocument sample (a Document in its own process) with the daemon: it reloads when
/// another process writes the file, saves before another process reads it, and keeps a
/// conflict version when both changed.
@Suite("MonkeyDocument across processes")
struct MonkeyDocumentCrossProcessTests {
    func start(_ device: Device, _ file: URL, autosave: String = "0.2") throws -> Subprocess {
        let monkey = try device.start(Binaries.monkey, ["--file", file.path, "--autosave-interval", autosave])
        _ = try #require(monkey.waitForLine(containing: "loaded:"))
        return monkey
    }

    @Test("a coordinated write from another process makes the open document reload")
    func reloadsOnRemoteWrite() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("test.txt", "hello")
        let monkey = try start(device, file)
        defer { monkey.kill() }
        let write = try device.ubiq(["coordinate", "write", file.path, "--", "sh", "-c", "printf remote > '\(file.path)'"])
        #expect(write.status == 0)
        #expect(monkey.waitForLine(containing: "reloaded: remote") != nil)
    }

    @Test("a coordinated read from another process sees unsaved text, saved first")
    func savesBeforeRemoteRead() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("test.txt", "hello")
        let monkey = try start(device, file, autosave: "600")  // no autosave: only the reader makes it save
        defer { monkey.kill() }
        monkey.send("set typed but not saved")
        monkey.send("show")
        _ = try #require(monkey.waitForLine(containing: "text: typed but not saved"))
        let read = try device.ubiq(["coordinate", "read", file.path, "--", "cat", file.path])
        #expect(read.status == 0)
        #expect(read.output == "typed but not saved")
    }

    @Test("edits on both sides: the local text wins the file, the remote text is kept as a conflict version")
    func conflict() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("test.txt", "base")
        let monkey = try start(device, file, autosave: "600")
        defer { monkey.kill() }
        monkey.send("set local edit")
        monkey.send("show")
        _ = try #require(monkey.waitForLine(containing: "text: local edit"))
        let write = try device.ubiq(["coordinate", "write", file.path, "--", "sh", "-c", "printf 'remote edit' > '\(file.path)'"])
        #expect(write.status == 0)
        // The document keeps its edits and preserves the remote text as a conflict version.
        let deadline = Date(timeIntervalSinceNow: 20)
        var versions = ""
        while Date() < deadline {
            versions = try device.ubiq(["versions", file.path, "--json"]).output
            if versions.contains("\"conflict\" : true") || versions.contains("\"conflict\":true") { break }
            usleep(50_000)
        }
        #expect(versions.contains("conflict"), "no conflict version: \(versions)")
        monkey.send("save")
        _ = try #require(monkey.waitForLine(containing: "saved"))
        #expect(try String(contentsOf: file, encoding: .utf8) == "local edit")
        let json = try #require(try JSONSerialization.jsonObject(with: Data(versions.utf8)) as? [String: Any])
        let list = try #require(json["versions"] as? [[String: Any]])
        let conflictVersion = try #require(list.first { ($0["conflict"] as? Bool) == true })
        let id = try #require(conflictVersion["id"] as? String)
        // Resolving by the conflict's id brings the remote text back; the open document reloads.
        #expect(try device.ubiq(["resolve", file.path, "--keep", id]).status == 0)
        #expect(try String(contentsOf: file, encoding: .utf8) == "remote edit")
        #expect(monkey.waitForLine(containing: "reloaded: remote edit") != nil)
    }

    @Test("with --container it finds test.txt with a metadata query, in any folder of Documents, as Apple's sample does",
          arguments: [false, true])
    func findsTestDocumentByQuery(withDaemon: Bool) throws {
        let device = Device()
        let daemon = withDaemon ? try device.startDaemon() : nil
        defer { daemon?.kill(SIGTERM) }
        let container = "iCloud.com.example.monkey"
        let run = try device.run(["container", "url", container, "--container", container, "--json"])
        let entry = try #require(try JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any], "\(run)")
        let documents = try #require(entry["documents"] as? String, "\(run)")
        try FileManager.default.createDirectory(atPath: documents + "/Old Notes", withIntermediateDirectories: true)
        try Data("found me".utf8).write(to: URL(fileURLWithPath: documents + "/Old Notes/test.txt"))
        let monkey = try device.start(Binaries.monkey, ["--container", container],
                                      extraEnvironment: ["UBIQUITY_INDEX": withDaemon ? "daemon" : "local"])
        defer { monkey.kill() }
        #expect(monkey.waitForLine(containing: "loaded:") == "loaded: found me", "\(monkey.output)")
        monkey.send("quit")
        #expect(monkey.wait(seconds: 30) == 0)
        #expect(!FileManager.default.fileExists(atPath: documents + "/test.txt"), "no second test.txt was created")
    }
}
