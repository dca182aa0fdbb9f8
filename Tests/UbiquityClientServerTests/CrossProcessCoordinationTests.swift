// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport

/// File coordination across real processes: `ubiq daemon`, `ubiq present`, `ubiq coordinate`.
@Suite("Coordination across processes")
struct CrossProcessCoordinationTests {
    /// The events (without ids) that `ubiq present` printed after its ready line.
    func events(_ present: Subprocess) -> [String] {
        present.output.compactMap { line -> String? in
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any],
                  let event = object["event"] as? String, event != "ready" else { return nil }
            return event
        }
    }

    /// The `id` of a `ubiq present` message that needs an answer.
    func messageID(_ line: String) throws -> Int {
        try #require((try JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any])?["id"] as? Int)
    }

    func waitForEvents(_ present: Subprocess, count: Int) -> [String] {
        let deadline = Date(timeIntervalSinceNow: 30)
        while events(present).count < count && Date() < deadline { usleep(5000) }
        return events(present)
    }

    @Test("a writer in one process makes a presenter in another relinquish, hear of the change and reacquire")
    func presenterInAnotherProcess() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("notes.txt", "one")
        let present = try device.present(file)
        defer { present.kill() }
        let ready = try #require(present.waitForLine(containing: "\"ready\""))
        #expect(ready.contains("\"daemon\":true"))

        let write = try device.ubiq(["coordinate", "write", file.path, "--", "sh", "-c", "echo two > '\(file.path)'"])
        #expect(write.status == 0)
        #expect(waitForEvents(present, count: 3) == ["relinquishToWriter", "didChange", "reacquire"])

        let read = try device.ubiq(["coordinate", "read", file.path, "--", "cat", file.path])
        #expect(read.status == 0 && read.output == "two")
        #expect(Array(waitForEvents(present, count: 6).suffix(3)) == ["relinquishToReader", "savePresentedItemChanges", "reacquire"])

        let moved = device.root.appendingPathComponent("moved.txt")
        let move = try device.ubiq(["coordinate", "move", file.path, moved.path, "--", "mv", file.path, moved.path])
        #expect(move.status == 0)
        #expect(Array(waitForEvents(present, count: 9).suffix(3)) == ["relinquishToWriter", "didMove", "reacquire"])
        #expect(present.output.contains { $0.contains("\"to\":\"\(moved.path)\"") })

        let delete = try device.ubiq(["coordinate", "delete", moved.path, "--", "rm", moved.path])
        #expect(delete.status == 0)
        #expect(Array(waitForEvents(present, count: 12).suffix(3)) == ["relinquishToWriter", "accommodateDeletion", "reacquire"])
    }

    @Test("a folder presenter in one process hears of items written, moved and deleted inside it by another")
    func folderPresenter() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let folder = device.root.appendingPathComponent("docs")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        let present = try device.present(folder)
        defer { present.kill() }
        let child = folder.appendingPathComponent("new.txt"), moved = folder.appendingPathComponent("renamed.txt")
        #expect(try device.ubiq(["coordinate", "write", child.path, "--", "sh", "-c", "echo 1 > '\(child.path)'"]).status == 0)
        #expect(try device.ubiq(["coordinate", "write", child.path, "--", "sh", "-c", "echo 2 > '\(child.path)'"]).status == 0)
        #expect(try device.ubiq(["coordinate", "move", child.path, moved.path, "--", "mv", child.path, moved.path]).status == 0)
        #expect(try device.ubiq(["coordinate", "delete", moved.path, "--", "rm", moved.path]).status == 0)
        #expect(waitForEvents(present, count: 5) == [
            "subitemDidAppear", "subitemDidChange", "subitemDidMove", "accommodateSubitemDeletion", "subitemDidChange",
        ])
        #expect(present.output.contains { $0.contains("subitemDidAppear") && $0.contains(child.path) })
    }

    @Test("version changes made by another process reach the presenter: resolving a conflict")
    func versionMessages() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("doc.txt", "mine")
        // A conflict version, made by a MonkeyDocument-style client: here through the library in a
        // separate process is not needed — `ubiq resolve` on a conflict added by this test.
        let theirs = device.file("theirs.txt", "theirs")
        let present = try device.present(file)
        defer { present.kill() }
        let add = try device.start(Binaries.bench, ["add-conflict", "--file", file.path, "--contents", theirs.path])
        #expect(add.wait() == 0)
        _ = try #require(present.waitForLine(containing: "didGainVersion"))
        #expect(try device.ubiq(["resolve", file.path, "--keep", "current"]).status == 0)
        _ = try #require(present.waitForLine(containing: "didLoseVersion"))
        #expect(events(present).contains("didResolveConflictVersion"))
    }

    @Test("the writer waits for the presenter's ack; an error ack makes it fail without running")
    func acks() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("doc.txt", "x")
        let marker = device.root.appendingPathComponent("ran")
        let present = try device.present(file, autoAck: false)
        defer { present.kill() }

        let writer = try device.start(Binaries.ubiq, ["coordinate", "write", file.path, "--", "touch", marker.path])
        let ask = try #require(present.waitForLine(containing: "relinquishToWriter"))
        usleep(200_000)
        #expect(writer.isRunning && !FileManager.default.fileExists(atPath: marker.path))
        let id = try messageID(ask)
        present.send("{\"ack\":\(id)}")
        #expect(writer.wait() == 0)
        #expect(FileManager.default.fileExists(atPath: marker.path))
        try FileManager.default.removeItem(at: marker)

        let refused = try device.start(Binaries.ubiq, ["coordinate", "read", file.path, "--", "touch", marker.path])
        let ask2 = try #require(present.waitForLine(containing: "relinquishToReader"))
        let id2 = try messageID(ask2)
        present.send("{\"ack\":\(id2)}")
        let ask3 = try #require(present.waitForLine(containing: "savePresentedItemChanges"))
        let id3 = try messageID(ask3)
        present.send("{\"ack\":\(id3),\"error\":\"busy editing\"}")
        #expect(refused.wait() == 1)
        #expect(!FileManager.default.fileExists(atPath: marker.path))
    }

    @Test("a daemon that dies mid-coordination releases the waiter with an error")
    func daemonDies() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        let file = device.file("doc.txt", "x")
        let present = try device.present(file, autoAck: false)
        defer { present.kill() }
        let writer = try device.start(Binaries.ubiq, ["coordinate", "write", file.path, "--", "true"])
        _ = try #require(present.waitForLine(containing: "relinquishToWriter"))
        daemon.kill(SIGKILL)
        #expect(writer.wait() == 69)  // EX_UNAVAILABLE: the service went away
        // Without the daemon, coordination continues in-process.
        #expect(try device.ubiq(["coordinate", "write", file.path, "--", "true"]).status == 0)
    }

    @Test("a presenter process that crashes does not hold writers up")
    func presenterCrashes() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("doc.txt", "x")
        let present = try device.present(file, autoAck: false)
        let writer = try device.start(Binaries.ubiq, ["coordinate", "write", file.path, "--", "true"])
        _ = try #require(present.waitForLine(containing: "relinquishToWriter"))
        present.kill(SIGKILL)
        #expect(writer.wait() == 0)
    }

    @Test("a writer killed while it holds its claim does not block the next one", arguments: [true, false])
    func holderCrashes(daemon useDaemon: Bool) throws {
        let device = Device()
        let daemon = useDaemon ? try device.startDaemon() : nil
        defer { daemon?.kill(SIGTERM) }
        let file = device.file("doc.txt", "x")
        let marker = device.root.appendingPathComponent("holding")
        // The command records its pid (exec keeps it) and lets go of our output pipe.
        let holder = try device.start(Binaries.ubiq, ["coordinate", "write", file.path, "--", "sh", "-c",
                                                      "echo $$ > '\(marker.path)'; exec sleep 30 >/dev/null 2>&1"])
        let deadline = Date(timeIntervalSinceNow: 20)
        var orphan: Int32?
        while orphan == nil && Date() < deadline {
            orphan = (try? String(contentsOf: marker, encoding: .utf8)).flatMap { Int32($0.trimmingCharacters(in: .whitespacesAndNewlines)) }
            usleep(5000)
        }
        #expect(orphan != nil)
        holder.kill(SIGKILL)  // the coordinating process dies; its command (sleep) lives on
        let next = try device.ubiq(["coordinate", "write", file.path, "--timeout", "10", "--", "true"])
        #expect(next.status == 0)
        if let orphan { kill(orphan, SIGKILL) }
    }

    @Test("a presenter that never answers makes the writer time out (exit 75) instead of hanging")
    func presenterTimeout() throws {
        let device = Device()
        let daemon = try device.startDaemon()
        defer { daemon.kill(SIGTERM) }
        let file = device.file("doc.txt", "x")
        let present = try device.present(file, autoAck: false)
        defer { present.kill() }
        let result = try device.ubiq(["coordinate", "write", file.path, "--timeout", "0.5", "--", "true"])
        #expect(result.status == 75)
    }

    @Test("presenters register with a daemon that starts later, and again after it restarts")
    func reconnect() throws {
        let device = Device()
        let file = device.file("doc.txt", "x")
        let present = try device.present(file)
        defer { present.kill() }
        let ready = try #require(present.waitForLine(containing: "\"ready\""))
        #expect(ready.contains("\"daemon\":false"))
        func writeUntilHeard(_ count: Int) -> Bool {
            let deadline = Date(timeIntervalSinceNow: 20)
            while Date() < deadline {
                _ = try? device.ubiq(["coordinate", "write", file.path, "--", "true"])
                if events(present).filter({ $0 == "didChange" }).count >= count { return true }
                usleep(100_000)
            }
            return false
        }
        let daemon = try device.startDaemon()
        #expect(writeUntilHeard(1))
        daemon.kill(SIGKILL)
        let restarted = try device.startDaemon()
        defer { restarted.kill(SIGTERM) }
        #expect(writeUntilHeard(2))
    }

    @Test("without a daemon, writers in different processes still exclude each other")
    func exclusionWithoutDaemon() throws {
        let device = Device()
        let file = device.file("shared.txt", "")
        let log = device.root.appendingPathComponent("log").path
        let script = "s=$(date +%s%N); sleep 0.05; e=$(date +%s%N); echo \"$s $e\" >> '\(log)'"
        let writers = try (0..<4).map { _ in try device.start(Binaries.ubiq, ["coordinate", "write", file.path, "--", "sh", "-c", script]) }
        for writer in writers { #expect(writer.wait() == 0) }
        let intervals = try String(contentsOfFile: log, encoding: .utf8).split(separator: "\n").map { line in
            line.split(separator: " ").map { UInt64($0)! }
        }.sorted { $0[0] < $1[0] }
        #expect(intervals.count == 4)
        for (a, b) in zip(intervals, intervals.dropFirst()) { #expect(a[1] <= b[0], "writers overlapped: \(a) \(b)") }
    }

    @Test("bad input: unknown options, missing command, relative paths resolved, missing command binary")
    func badInput() throws {
        let device = Device()
        #expect(try device.ubiq(["coordinate", "write", "x", "--options", "forNothing", "--", "true"]).status == 64)
        #expect(try device.ubiq(["coordinate", "read", "x"]).status == 64)
        #expect(try device.ubiq(["coordinate", "read", "x", "--options", "forDeleting", "--", "true"]).status == 64)
        #expect(try device.ubiq(["coordinate", "read", device.root.path + "/x", "--", "/nonexistent/binary"]).status != 0)
    }
}
