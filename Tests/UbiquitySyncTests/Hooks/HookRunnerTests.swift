// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Testing
import UbiquityTestSupport
import UbiquityCore
import UbiquitySync
import UbiquityWire

/// The daemon's hooks: real executables in a temporary hooks folder.
@Suite struct HookRunnerTests {
    static func folder() throws -> URL {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-hooks-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    /// Writes a shell script through a close-on-exec descriptor: a descriptor open for writing
    /// that a concurrent test's child inherited would make running it fail with ETXTBSY.
    static func script(_ file: URL, _ body: String, executable: Bool = true) throws {
        try FileManager.default.createDirectory(at: file.deletingLastPathComponent(), withIntermediateDirectories: true)
        let descriptor = open(file.path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, executable ? 0o755 : 0o644)
        guard descriptor >= 0 else { throw UbiquityError.posix("open", path: file.path) }
        defer { close(descriptor) }
        let bytes = Array(("#!/bin/sh\n" + body + "\n").utf8)
        guard write(descriptor, bytes, bytes.count) == bytes.count else { throw UbiquityError.posix("write", path: file.path) }
    }

    static var logger: Logger {
        var logger = Logger(label: "test.hooks")
        logger.logLevel = .critical
        return logger
    }

    @Test func aHookGetsTheEventOnStdinAndTheFactsInItsEnvironment() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let out = folder.appendingPathComponent("seen")
        try Self.script(folder.appendingPathComponent("did-download"), "cat > '\(out.path).json'; printf '%s|%s|%s' \"$UBIQUITY_EVENT\" \"$UBIQUITY_PATH\" \"$UBIQUITY_CONTAINER\" > '\(out.path).env'; echo done")
        try Self.script(folder.appendingPathComponent("did-download.d/20-second"), "echo second >> '\(out.path).order'")
        try Self.script(folder.appendingPathComponent("did-download.d/10-first"), "echo first >> '\(out.path).order'")
        try Self.script(folder.appendingPathComponent("did-download.d/30-off"), "echo never >> '\(out.path).order'", executable: false)
        try Self.script(folder.appendingPathComponent("did-download.d/.hidden"), "echo never >> '\(out.path).order'")
        try Self.script(folder.appendingPathComponent("conflict"), "exit 0", executable: false)
        try Self.script(folder.appendingPathComponent("after-party"), "exit 0")

        let runner = HookRunner(directory: folder, logger: Self.logger)
        #expect(runner.hooks(for: .didDownload).map(\.lastPathComponent) == ["did-download", "10-first", "20-second"])
        #expect(runner.hooks(for: .conflict).isEmpty)
        let problems = runner.problems().map { $0.file.lastPathComponent }
        #expect(problems.contains("conflict") && problems.contains("after-party"))

        let results = await runner.run(HookInvocation(.didDownload, facts: ["path": "notes/a b.txt", "container": "iCloud.org.example.Notes"],
                                                      details: ["size": .integer(12)]))
        #expect(results.count == 3)
        #expect(results.allSatisfy { $0.succeeded }, "\(results)")
        #expect(results.first?.output == "done\n")
        let json = try JSONValue.parse(Data(contentsOf: URL(fileURLWithPath: out.path + ".json")))
        #expect(json.objectValue?["event"]?.stringValue == "did-download")
        #expect(json.objectValue?["path"]?.stringValue == "notes/a b.txt")
        #expect(json.objectValue?["details"]?.objectValue?["size"] == .integer(12))
        #expect(try String(contentsOfFile: out.path + ".env", encoding: .utf8) == "did-download|notes/a b.txt|iCloud.org.example.Notes")
        #expect(try String(contentsOfFile: out.path + ".order", encoding: .utf8) == "first\nsecond\n")
    }

    @Test func hangingCrashingAndStrayHooksAreContained() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let pids = folder.appendingPathComponent("pids")
        // hangs, ignoring nothing; leaves a child behind that holds the output open; crashes
        try Self.script(folder.appendingPathComponent("quota.d/1-hang"), "sleep 600")
        try Self.script(folder.appendingPathComponent("quota.d/2-stray"), "sleep 600 & echo $! > '\(pids.path)'; exit 3")
        try Self.script(folder.appendingPathComponent("quota.d/3-crash"), "kill -SEGV $$")
        let runner = HookRunner(directory: folder, timeout: .seconds(1), logger: Self.logger)
        let results = await runner.run(HookInvocation(.quota))
        #expect(results.count == 3)
        #expect(results[0].timedOut && !results[0].succeeded)
        #expect(results[1].status == 3 && !results[1].timedOut)
        #expect(results[2].status == 128 + SIGSEGV)
        // the stray child was killed with the hook's process group
        let stray = try #require(Int32(String(contentsOfFile: pids.path, encoding: .utf8).trimmingCharacters(in: .whitespacesAndNewlines)))
        var gone = false
        for _ in 0..<100 where !gone {
            gone = kill(stray, 0) != 0
            if !gone { try await Task.sleep(for: .milliseconds(100)) }
        }
        #expect(gone)
    }

    @Test func postingNeverWaitsAndDropsTheOldestWhenHooksFallBehind() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let log = folder.appendingPathComponent("log")
        try Self.script(folder.appendingPathComponent("did-upload"), "read -r line; echo \"$UBIQUITY_PATH\" >> '\(log.path)'; sleep 0.2")
        let runner = HookRunner(directory: folder, maximumPending: 3, logger: Self.logger)
        for index in 0..<50 { runner.post(HookInvocation(.didUpload, facts: ["path": "f\(index)"])) }
        // no hooks for this event: nothing queued
        runner.post(HookInvocation(.conflict))
        var lines: [String] = []
        for _ in 0..<300 {
            lines = ((try? String(contentsOfFile: log.path, encoding: .utf8)) ?? "").split(separator: "\n").map(String.init)
            if lines.last == "f49" { break }
            try await Task.sleep(for: .milliseconds(100))
        }
        await runner.stop()
        #expect(lines.last == "f49")
        #expect(lines.count < 50)
        #expect(lines.count >= 3)
    }

    @Test func theCommandListsAndTestsHooks() throws {
        let device = Device()
        let hooks = device.root.appendingPathComponent("config/ubiquity/hooks")
        try Self.script(hooks.appendingPathComponent("did-download"), "echo \"got $UBIQUITY_PATH\"")
        try Self.script(hooks.appendingPathComponent("upload-failed"), "echo broken >&2; exit 2")
        let list = try device.run(["hooks", "list"])
        #expect(list.status == 0)
        #expect(list.stdout.contains("did-download: \(hooks.path)/did-download"))
        #expect(list.stdout.contains("conflict: (none)"))
        let test = try device.run(["hooks", "test", "did-download", "--path", "notes.txt"])
        #expect(test.status == 0, "\(test.stderr)")
        #expect(test.stdout.contains("exit 0") && test.stdout.contains("got notes.txt"))
        let failing = try device.run(["hooks", "test", "upload-failed", "--json"])
        #expect(failing.status == 1)
        #expect(failing.stdout.contains(#""succeeded":false"#) && failing.stdout.contains("broken"))
        let unknown = try device.run(["hooks", "test", "did-explode"])
        #expect(unknown.status == 64)
        #expect(unknown.stderr.contains("did-download"))
        #expect(try device.run(["hooks", "test", "conflict"]).stdout.contains("no hooks"))
    }
}
