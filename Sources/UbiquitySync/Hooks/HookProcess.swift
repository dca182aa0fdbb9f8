// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import UbiquityCore

/// Runs one hook executable: its own process group (so a time-out kills what it started too),
/// the event JSON on stdin (from an unlinked temporary file: no pipe to block on or break),
/// stdout and stderr captured up to a limit, signals the daemon ignores restored to default.
enum HookProcess {
    /// Set once the hook's process has been reaped.
    final class ExitFlag: Sendable {
        private let flag = Atomic<Bool>(false)
        var isSet: Bool { flag.load(ordering: .acquiring) }
        func set() { flag.store(true, ordering: .releasing) }
    }

    static func run(_ executable: URL, input: Data, environment: [String: String], timeout: Duration, outputLimit: Int) async -> HookResult {
        let started = ContinuousClock.now
        func failed(_ why: String) -> HookResult {
            HookResult(executable: executable, status: nil, timedOut: false, output: "", failure: why, duration: ContinuousClock.now - started)
        }
        let spawned: (pid: pid_t, output: Int32)
        do {
            spawned = try await BlockingWork.run { try spawn(executable.path, input: input, environment: environment) }
        } catch {
            return failed("\(error)")
        }
        let pid = spawned.pid
        let exited = ExitFlag()
        // The time limit: SIGTERM to the group, SIGKILL two seconds later.
        let killer = Task {
            do { try await Task.sleep(for: timeout) } catch { return false }
            guard !exited.isSet else { return false }
            kill(-pid, SIGTERM)
            do { try await Task.sleep(for: .seconds(2)) } catch { return true }
            if !exited.isSet { kill(-pid, SIGKILL) }
            return true
        }
        async let output = (try? BlockingWork.run { readOutput(spawned.output, limit: outputLimit, exited: exited) }) ?? ""
        let status = (try? await BlockingWork.run { () -> Int32 in
            var raw: Int32 = 0
            while waitpid(pid, &raw, 0) < 0 {
                if errno != EINTR { return -1 }
            }
            // WIFEXITED / WEXITSTATUS / WTERMSIG, spelled out (they are C macros).
            let signal = raw & 0x7f
            return signal == 0 ? (raw >> 8) & 0xff : 128 + signal
        }) ?? -1
        exited.set()
        killer.cancel()
        let timedOut = await killer.value
        // What is left of the group (a child the hook left behind) goes too.
        kill(-pid, SIGKILL)
        return HookResult(executable: executable, status: status, timedOut: timedOut, output: await output, failure: nil,
                          duration: ContinuousClock.now - started)
    }

    /// Starts the process; returns its pid and the read end of its output pipe.
    private static func spawn(_ path: String, input: Data, environment: [String: String]) throws -> (pid_t, Int32) {
        // stdin: an unlinked temporary file holding the JSON.
        var template = Array((NSTemporaryDirectory() + "/ubiquity-hook-XXXXXX").utf8CString)
        let inputFile = template.withUnsafeMutableBufferPointer { mkstemp($0.baseAddress!) }
        guard inputFile >= 0 else { throw UbiquityError.posix("mkstemp", path: NSTemporaryDirectory()) }
        defer { close(inputFile) }
        _ = fcntl(inputFile, F_SETFD, FD_CLOEXEC)
        template.withUnsafeBufferPointer { _ = unlink($0.baseAddress!) }
        let written = input.withUnsafeBytes { write(inputFile, $0.baseAddress, $0.count) }
        guard written == input.count, lseek(inputFile, 0, SEEK_SET) == 0 else { throw UbiquityError.posix("write", path: "hook input") }
        var pipeEnds: [Int32] = [0, 0]
        guard pipe(&pipeEnds) == 0 else { throw UbiquityError.posix("pipe", path: path) }
        for end in pipeEnds { _ = fcntl(end, F_SETFD, FD_CLOEXEC) }
        defer { close(pipeEnds[1]) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_adddup2(&actions, inputFile, 0)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 1)
        posix_spawn_file_actions_adddup2(&actions, pipeEnds[1], 2)
        var attributes = posix_spawnattr_t()
        posix_spawnattr_init(&attributes)
        defer { posix_spawnattr_destroy(&attributes) }
        var defaults = sigset_t()
        sigemptyset(&defaults)
        for signal in [SIGTERM, SIGINT, SIGPIPE, SIGHUP] { sigaddset(&defaults, signal) }
        posix_spawnattr_setsigdefault(&attributes, &defaults)
        var empty = sigset_t()
        sigemptyset(&empty)
        posix_spawnattr_setsigmask(&attributes, &empty)
        posix_spawnattr_setpgroup(&attributes, 0)
        posix_spawnattr_setflags(&attributes, Int16(POSIX_SPAWN_SETPGROUP | POSIX_SPAWN_SETSIGDEF | POSIX_SPAWN_SETSIGMASK))

        let merged = ProcessInfo.processInfo.environment.merging(environment) { $1 }
        let argv: [UnsafeMutablePointer<CChar>?] = [strdup(path), nil]
        let envp: [UnsafeMutablePointer<CChar>?] = merged.map { strdup("\($0.key)=\($0.value)") } + [nil]
        defer {
            for pointer in argv { free(pointer) }
            for pointer in envp { free(pointer) }
        }
        var pid: pid_t = 0
        var code = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
        // "Text file busy": another thread's fork holds the file open for writing for a moment
        // (an editor or installer just wrote the hook). Try again shortly.
        var attempts = 1
        while code == ETXTBSY && attempts < 10 {
            usleep(50_000)
            code = posix_spawn(&pid, path, &actions, &attributes, argv, envp)
            attempts += 1
        }
        guard code == 0 else {
            close(pipeEnds[0])
            throw UbiquityError(.io, "cannot run hook \(path): \(String(cString: strerror(code)))")
        }
        return (pid, pipeEnds[0])
    }

    /// Reads the output pipe until end of file (or, once the hook exited, until nothing came
    /// for a second: something it left behind may hold the pipe open), keeping `limit` bytes.
    private static func readOutput(_ descriptor: Int32, limit: Int, exited: ExitFlag) -> String {
        defer { close(descriptor) }
        var kept: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        var quietAfterExit = 0
        while true {
            var poller = pollfd(fd: descriptor, events: Int16(POLLIN), revents: 0)
            let ready = poll(&poller, 1, 250)
            if ready > 0 {
                let count = buffer.withUnsafeMutableBytes { read(descriptor, $0.baseAddress, $0.count) }
                if count == 0 { break }
                if count < 0 {
                    if errno == EINTR || errno == EAGAIN { continue }
                    break
                }
                if kept.count < limit { kept += buffer.prefix(min(count, limit - kept.count)) }
                continue
            }
            if exited.isSet {
                quietAfterExit += 1
                if quietAfterExit >= 4 { break }
            }
        }
        return String(decoding: kept, as: UTF8.self)
    }
}
