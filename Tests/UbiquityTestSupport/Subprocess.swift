// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Where the package's executables were built (next to the test bundle), or `UBIQ_BIN_DIR`.
package enum Binaries {
    package static let directory: URL = {
        if let dir = ProcessInfo.processInfo.environment["UBIQ_BIN_DIR"] { return URL(fileURLWithPath: dir) }
        var url = URL(fileURLWithPath: CommandLine.arguments[0]).resolvingSymlinksInPath()
        while url.path != "/" {
            url.deleteLastPathComponent()
            if FileManager.default.isExecutableFile(atPath: url.appendingPathComponent("ubiq").path) { return url }
        }
        let source = URL(fileURLWithPath: #filePath)
        return source.deletingLastPathComponent().appendingPathComponent("../../../.build/debug").standardized
    }()
    package static var ubiq: URL { directory.appendingPathComponent("ubiq") }
    package static var bench: URL { directory.appendingPathComponent("UbiquityBench") }
    package static var monkey: URL { directory.appendingPathComponent("MonkeyDocument") }
    package static var atlas: URL { directory.appendingPathComponent("CloudKitAtlas") }
    package static var keyValue: URL { directory.appendingPathComponent("KeyValue") }
}

/// One simulated device: its own HOME and XDG folders, so daemons and clients of different
/// devices never meet. Paths are short because Unix socket paths are limited to 107 bytes.
package final class Device: Sendable {
    package let root: URL
    package let environment: [String: String]
    /// A program every `ubiq` of this device is started through (`/usr/bin/env`), or nil.
    package let launcher: URL?

    /// A device whose processes all get `extraEnvironment` too (a faked clock, say), started
    /// through `launcher` when one is given.
    package init(extraEnvironment: [String: String] = [:], launcher: URL? = nil) {
        self.launcher = launcher
        root = URL(fileURLWithPath: "/tmp/ubq-" + String(UUID().uuidString.prefix(8)))
        for sub in ["home", "data", "state", "config", "run"] {
            try! FileManager.default.createDirectory(at: root.appendingPathComponent(sub), withIntermediateDirectories: true)
        }
        var env = ProcessInfo.processInfo.environment
        env["HOME"] = root.appendingPathComponent("home").path
        env["XDG_DATA_HOME"] = root.appendingPathComponent("data").path
        env["XDG_STATE_HOME"] = root.appendingPathComponent("state").path
        env["XDG_CONFIG_HOME"] = root.appendingPathComponent("config").path
        env["XDG_RUNTIME_DIR"] = root.appendingPathComponent("run").path
        env.removeValue(forKey: "UBIQUITY_COORDINATION_SOCKET")
        env.removeValue(forKey: "UBIQUITY_HOME")
        environment = env.merging(extraEnvironment) { $1 }
    }

    package var socket: String { root.appendingPathComponent("run/ubiquity/coordination.sock").path }

    package func file(_ name: String, _ contents: String? = nil) -> URL {
        let url = root.appendingPathComponent(name)
        if let contents { try! Data(contents.utf8).write(to: url) }
        return url
    }

    /// Starts a process of this device.
    package func start(_ executable: URL, _ arguments: [String], extraEnvironment: [String: String] = [:]) throws -> Subprocess {
        if let launcher, executable == Binaries.ubiq {
            return try Subprocess(launcher, [executable.path] + arguments, environment: environment.merging(extraEnvironment) { $1 })
        }
        return try Subprocess(executable, arguments, environment: environment.merging(extraEnvironment) { $1 })
    }

    /// Runs `ubiq` to completion.
    package func ubiq(_ arguments: [String], timeout: Double = 60) throws -> (status: Int32, output: String) {
        let process = try start(Binaries.ubiq, arguments)
        let status = process.wait(seconds: timeout)
        return (status ?? -1, process.output.joined(separator: "\n"))
    }

    /// Starts `ubiq present PATH` and waits for its ready line (which is the first output line).
    package func present(_ path: URL, autoAck: Bool = true) throws -> Subprocess {
        let present = try start(Binaries.ubiq, ["present", path.path] + (autoAck ? ["--auto-ack"] : []))
        guard present.waitForLine(containing: "\"ready\"") != nil else {
            present.kill()
            throw DeviceError.didNotStart("ubiq present")
        }
        return present
    }

    /// Starts a daemon and waits until it listens.
    package func startDaemon() throws -> Subprocess {
        let daemon = try start(Binaries.ubiq, ["daemon", "--log-level", "warning"])
        guard daemon.waitForLine(containing: "coordination service listening on") != nil else {
            daemon.kill()
            throw DeviceError.didNotStart("ubiq daemon")
        }
        return daemon
    }

    deinit { try? FileManager.default.removeItem(at: root) }
}

package enum DeviceError: Error { case didNotStart(String) }

/// A child process whose stdout lines are collected as they arrive.
package final class Subprocess: Sendable {
    package let process: Process
    private let lines = LineBuffer()
    private let input: Pipe

    package init(_ executable: URL, _ arguments: [String], environment: [String: String]) throws {
        process = Process()
        process.executableURL = executable
        process.arguments = arguments
        process.environment = environment
        let output = Pipe()
        input = Pipe()
        process.standardOutput = output
        process.standardInput = input
        process.standardError = FileHandle.standardError
        let handle = output.fileHandleForReading
        let lines = self.lines
        let thread = Thread {
            var buffer = Data()
            while true {
                let chunk = handle.availableData
                if chunk.isEmpty {
                    if !buffer.isEmpty { lines.append(String(decoding: buffer, as: UTF8.self)) }  // a last line without newline
                    lines.finish()
                    break
                }
                buffer.append(chunk)
                while let newline = buffer.firstIndex(of: 10) {
                    let line = String(decoding: buffer[buffer.startIndex..<newline], as: UTF8.self)
                    buffer.removeSubrange(buffer.startIndex...newline)
                    lines.append(line)
                }
            }
        }
        try process.run()
        thread.start()
    }

    package var output: [String] { lines.all }

    /// Waits (generous deadline) for a line containing `text`; returns it.
    package func waitForLine(containing text: String, seconds: Double = 30) -> String? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while Date() < deadline {
            if let line = output.first(where: { $0.contains(text) }) { return line }
            usleep(5000)
        }
        return nil
    }

    /// Waits until at least `count` lines arrived.
    package func waitForLines(_ count: Int, seconds: Double = 30) -> [String] {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while output.count < count && Date() < deadline { usleep(5000) }
        return output
    }

    /// Writes a line to the child's stdin.
    package func send(_ line: String) { input.fileHandleForWriting.write(Data((line + "\n").utf8)) }
    package func closeInput() { try? input.fileHandleForWriting.close() }

    /// Waits for exit and for the end of its output; nil on time-out.
    package func wait(seconds: Double = 60) -> Int32? {
        let deadline = Date(timeIntervalSinceNow: seconds)
        while process.isRunning && Date() < deadline { usleep(5000) }
        if process.isRunning { return nil }
        while !lines.finished && Date() < deadline { usleep(1000) }
        return process.terminationStatus
    }

    package var isRunning: Bool { process.isRunning }

    /// Sends `signal` without waiting for the exit (safe on the cooperative pool).
    package func signal(_ signal: Int32) {
        if process.isRunning { Glibc.kill(process.processIdentifier, signal) }
    }

    package func kill(_ signal: Int32 = SIGKILL) {
        if process.isRunning { Glibc.kill(process.processIdentifier, signal) }
        _ = wait(seconds: 10)
    }

    deinit { kill() }
}

/// Lines collected from a child's stdout.
package final class LineBuffer: Sendable {
    private let lines = Mutex<(lines: [String], finished: Bool)>(([], false))
    package func append(_ line: String) { lines.withLock { $0.lines.append(line) } }
    package func finish() { lines.withLock { $0.finished = true } }
    package var all: [String] { lines.withLock { $0.lines } }
    package var finished: Bool { lines.withLock { $0.finished } }
}
