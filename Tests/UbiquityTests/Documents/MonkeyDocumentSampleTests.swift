// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import Ubiquity

/// The MonkeyDocument sample driven as a subprocess, without a daemon (so only what one process
/// sees: creating, loading, autosaving, saving; reloads across processes are tested with the
/// daemon in UbiquitySyncTests).
@Suite("MonkeyDocument sample", .enabled(if: MonkeyProcess.executable != nil, "MonkeyDocument is not built"))
struct MonkeyDocumentSampleTests {
    @Test("creates the file, autosaves a change, saves on demand and on quit")
    func createEditQuit() throws {
        let box = try DocumentSandbox()
        let url = box.root.appendingPathComponent("docs/test.txt")
        let monkey = try MonkeyProcess(["--file", url.path, "--autosave-interval", "0.1"], home: box.root)
        #expect(monkey.waitForLine { $0.hasPrefix("loaded:") } == "loaded: ")
        #expect(documentFileText(url) == "")

        monkey.send("set hello monkey")
        #expect(monkey.waitForLine { $0 == "saved" } != nil)
        #expect(documentFileText(url) == "hello monkey")

        monkey.send("show")
        #expect(monkey.waitForLine { $0.hasPrefix("text:") } == "text: hello monkey")
        monkey.send("save")
        #expect(monkey.waitForLine(after: 1) { $0 == "saved" } != nil)
        monkey.send("set last words")
        monkey.send("quit")
        #expect(monkey.waitForExit() == 0)
        #expect(documentFileText(url) == "last words")
    }

    @Test("opens an existing file in the container named by UBIQUITY_CONTAINERS")
    func openInContainer() throws {
        let box = try DocumentSandbox()
        let documents = box.root.appendingPathComponent("data/ubiquity/containers/iCloud~com~example~Monkey/Documents")
        try FileManager.default.createDirectory(at: documents, withIntermediateDirectories: true)
        try Data("from before\n".utf8).write(to: documents.appendingPathComponent("test.txt"))
        let monkey = try MonkeyProcess([], home: box.root, extra: ["UBIQUITY_CONTAINERS": "iCloud.com.example.Monkey"])
        #expect(monkey.waitForLine { $0.hasPrefix("loaded:") } == "loaded: from before")
        monkey.send("quit")
        #expect(monkey.waitForExit() == 0)
    }

    @Test("refuses bad arguments with status 64")
    func badArguments() throws {
        let box = try DocumentSandbox()
        let monkey = try MonkeyProcess(["--container", "not-reverse-dns"], home: box.root)
        #expect(monkey.waitForExit() == 64)
    }
}

/// A running MonkeyDocument with its own XDG folders, whose stdout lines are collected.
final class MonkeyProcess: Sendable {
    /// The sample's executable, next to this test bundle (or in `UBIQ_BIN_DIR`).
    static let executable: URL? = {
        if let dir = ProcessInfo.processInfo.environment["UBIQ_BIN_DIR"] {
            let url = URL(fileURLWithPath: dir).appendingPathComponent("MonkeyDocument")
            return FileManager.default.isExecutableFile(atPath: url.path) ? url : nil
        }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            let candidate = url.appendingPathComponent("MonkeyDocument")
            if FileManager.default.isExecutableFile(atPath: candidate.path) { return candidate }
        }
        return nil
    }()

    private let process: Process
    private let input: FileHandle
    private let lines = Mutex<[String]>([])

    init(_ arguments: [String], home: URL, extra: [String: String] = [:]) throws {
        guard let executable = Self.executable else { throw UbiquityError(.notFound, "MonkeyDocument is not built") }
        var environment = ProcessInfo.processInfo.environment
        for (key, sub) in [("HOME", "home"), ("XDG_DATA_HOME", "data"), ("XDG_STATE_HOME", "state"),
                           ("XDG_CONFIG_HOME", "config"), ("XDG_RUNTIME_DIR", "run")] {
            environment[key] = home.appendingPathComponent(sub).path
        }
        for key in ["UBIQUITY_HOME", "UBIQUITY_CONTAINERS", "UBIQUITY_COORDINATION_SOCKET"] { environment.removeValue(forKey: key) }
        environment.merge(extra) { $1 }
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let stdin = Pipe(), stdout = Pipe()
        process.standardInput = stdin
        process.standardOutput = stdout
        process.standardError = FileHandle.nullDevice
        input = stdin.fileHandleForWriting
        let reader = stdout.fileHandleForReading
        let thread = Thread { [weak self] in
            var buffer = Data()
            while true {
                let chunk = reader.availableData
                if chunk.isEmpty { break }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 10) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    self?.lines.withLock { $0.append(line) }
                }
            }
        }
        try process.run()
        thread.start()
    }

    deinit {
        if process.isRunning { process.terminate() }
    }

    /// Sends one command line.
    func send(_ command: String) {
        try? input.write(contentsOf: Data((command + "\n").utf8))
    }

    /// The first line (after the first `skip` matching ones) satisfying `match`, waiting up to
    /// a generous deadline.
    func waitForLine(after skip: Int = 0, _ match: (String) -> Bool) -> String? {
        let deadline = Date(timeIntervalSinceNow: 30)
        repeat {
            let found = lines.withLock { $0.filter(match) }
            if found.count > skip { return found[skip] }
            Thread.sleep(forTimeInterval: 0.02)
        } while Date() < deadline
        return nil
    }

    /// The exit status, once the process has ended (nil if it did not within the deadline).
    func waitForExit() -> Int32? {
        let deadline = Date(timeIntervalSinceNow: 30)
        while process.isRunning && Date() < deadline { Thread.sleep(forTimeInterval: 0.02) }
        return process.isRunning ? nil : process.terminationStatus
    }
}
