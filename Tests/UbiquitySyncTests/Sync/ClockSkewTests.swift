// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// libfaketime, where installed.
enum FakeTime {
    static let library = ["/usr/lib/x86_64-linux-gnu/faketime/libfaketimeMT.so.1", "/usr/lib/aarch64-linux-gnu/faketime/libfaketimeMT.so.1",
                          "/usr/lib/faketime/libfaketimeMT.so.1"].first { FileManager.default.fileExists(atPath: $0) }

    /// The program a faked device starts `ubiq` through. libfaketime's constructor sets
    /// `FAKETIME_SHARED` in a process started without it, and the Swift runtime then finds no
    /// command-line arguments (`ubiq` prints its help); a launcher that is itself preloaded has
    /// set it already, so `ubiq` starts with its environment untouched.
    static let launcher = URL(fileURLWithPath: "/usr/bin/env")

    /// The environment of a device whose wall clock is `offset` (libfaketime's syntax: `-3h`)
    /// from the truth. Monotonic clocks stay true, timers included (``timerShim`` is preloaded
    /// first): timers and time-outs work as they do on a machine whose clock is merely set wrong.
    static func skewed(_ offset: String) -> [String: String] {
        ["LD_PRELOAD": [timerShim, library].compactMap { $0 }.joined(separator: ":"), "FAKETIME": offset, "FAKETIME_DONT_FAKE_MONOTONIC": "1"]
    }

    /// A preload library that gives `timerfd_settime`/`timerfd_gettime` back to the kernel
    /// (compiled once per test run with the system's C compiler; nil when there is none).
    ///
    /// Why: libfaketime moves every absolute `timerfd` deadline by the fake offset, monotonic
    /// timers too, whatever `FAKETIME_DONT_FAKE_MONOTONIC` says (it cannot tell a timer's clock
    /// from its descriptor: wolfcw/libfaketime#378). libdispatch, which runs Swift's
    /// `Task.sleep`, arms monotonic `timerfd`s with absolute deadlines, so in a process whose
    /// fake clock is 3 h behind every `Task.sleep` waited 3 h (the key-value sync's 100 ms poll
    /// for local sets never came back: a `ubiq kv set` stayed dirty), and 5 h ahead it fired
    /// at once, over and over. A machine whose clock is merely wrong has true timers, which is
    /// what this restores.
    static let timerShim: String? = {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubq-faketime-\(UUID().uuidString.prefix(8))")
        try? FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
        let source = directory.appendingPathComponent("timerfd.c"), library = directory.appendingPathComponent("timerfd.so")
        let code = """
            #define _GNU_SOURCE
            #include <sys/syscall.h>
            #include <sys/timerfd.h>
            #include <unistd.h>
            int timerfd_settime(int fd, int flags, const struct itimerspec *value, struct itimerspec *old) {
                return (int)syscall(SYS_timerfd_settime, fd, flags, value, old);
            }
            int timerfd_gettime(int fd, struct itimerspec *value) { return (int)syscall(SYS_timerfd_gettime, fd, value); }
            """
        guard (try? Data(code.utf8).write(to: source)) != nil else { return nil }
        // the system's compiler, else the Swift toolchain's own clang (on PATH beside swift)
        let path = (ProcessInfo.processInfo.environment["PATH"] ?? "").split(separator: ":").map { String($0) + "/clang" }
        for compiler in ["/usr/bin/cc", "/usr/bin/clang", "/usr/bin/gcc"] + path where FileManager.default.isExecutableFile(atPath: compiler) {
            let process = Process()
            process.executableURL = URL(fileURLWithPath: compiler)
            process.arguments = ["-shared", "-fPIC", "-O2", "-o", library.path, source.path]
            guard (try? process.run()) != nil else { continue }
            process.waitUntilExit()
            if process.terminationStatus == 0 { return library.path }
        }
        return nil
    }()
}

/// Clocks that disagree (issue 6, "Bad input and faults"): two devices whose wall clocks are
/// hours apart, faked with libfaketime (Debian's `libfaketime`; the test is skipped without it),
/// against a server with the true time. Document sync is decided by the server's change tags,
/// never by timestamps, so the later edit wins whatever the clocks say, and a conflict keeps
/// both contents. The key-value store times changes on the server's clock (the daemon measures
/// its offset), so there too the later set wins whatever the devices' clocks say.
@Suite(.serialized, .enabled(if: FakeTime.library != nil && FakeTime.timerShim != nil,
                             "libfaketime is not installed (apt-get install libfaketime), or no C compiler for the timer shim"))
struct ClockSkewTests {
    @Test func devicesWithClocksHoursApartConvergeAndLoseNothing() async throws {
        let admin = Device()
        let data = admin.root.appendingPathComponent("server").path
        #expect(try admin.run(["admin", "--data", data, "user", "add", "mei", "--password-stdin"], input: "pw").status == 0)
        let server = try ServeRig.startServer(admin, ["--data", data])
        defer { server.process.kill(SIGTERM); _ = server.process.wait(seconds: 30) }

        let behind = Device(extraEnvironment: FakeTime.skewed("-3h"), launcher: FakeTime.launcher),
            ahead = Device(extraEnvironment: FakeTime.skewed("+5h"), launcher: FakeTime.launcher)
        // the fake clocks took: `date` on each device is hours off
        for (device, hours) in [(behind, -3.0), (ahead, 5.0)] {
            let date = try device.start(URL(fileURLWithPath: "/bin/date"), ["+%s"])
            _ = date.wait(seconds: 10)
            let seconds = try #require(date.output.first.flatMap { Double($0.trimmingCharacters(in: .whitespaces)) })
            #expect(abs(seconds - Date().timeIntervalSince1970 - hours * 3600) < 600, "\(seconds)")
        }
        var daemons: [ObjectIdentifier: Subprocess] = [:]
        defer { for daemon in daemons.values { daemon.kill(SIGTERM) } }
        func start(_ device: Device) throws {
            let daemon = try device.start(Binaries.ubiq, ["daemon", "--log-level", "warning", "--sync-poll-interval", "2"])
            guard daemon.waitForLine(containing: "coordination service listening on", seconds: 60) != nil else {
                daemon.kill()
                throw DeviceError.didNotStart("ubiq daemon: " + daemon.output.prefix(20).joined(separator: "\n"))
            }
            daemons[ObjectIdentifier(device)] = daemon
        }
        func stop(_ device: Device) {
            daemons.removeValue(forKey: ObjectIdentifier(device))?.kill(SIGTERM)
        }
        for (device, name) in [(behind, "behind"), (ahead, "ahead")] {
            let login = try device.run(["account", "login", "--server", server.url, "--user", "mei", "--password-stdin", "--device-name", name],
                                       input: "pw\n")
            #expect(login.status == 0, "\(login.stderr)")
            try start(device)
        }
        func folder(_ device: Device) -> URL { device.root.appendingPathComponent("home/Ubiquity") }
        func read(_ device: Device, _ name: String) -> String? {
            (try? Data(contentsOf: folder(device).appendingPathComponent(name))).map { String(decoding: $0, as: UTF8.self) }
        }
        func write(_ device: Device, _ name: String, _ text: String) throws {
            try FileManager.default.createDirectory(at: folder(device), withIntermediateDirectories: true)
            try Data(text.utf8).write(to: folder(device).appendingPathComponent(name))
        }

        // edits go both ways, and the later one wins although its device's clock is 8 hours behind
        try write(behind, "doc.txt", "one")
        #expect(SyncRig.eventually("ahead has doc.txt") { read(ahead, "doc.txt") == "one" })
        try write(ahead, "doc.txt", "two, from the clock 5 h ahead")
        #expect(SyncRig.eventually("behind has the edit") { read(behind, "doc.txt") == "two, from the clock 5 h ahead" })
        try write(behind, "doc.txt", "three, from the clock 3 h behind")
        #expect(SyncRig.eventually("ahead has the later edit") { read(ahead, "doc.txt") == "three, from the clock 3 h behind" })

        // both edit while one is away: the server's version takes the name, the other is a conflict version
        stop(ahead)
        try write(behind, "doc.txt", "four, behind")
        try write(behind, "marker.txt", "after four")
        try await Task.sleep(for: .seconds(1))
        try write(ahead, "doc.txt", "four, ahead, offline")
        try start(ahead)
        #expect(SyncRig.eventually("both have the server's version") {
            read(ahead, "doc.txt") == "four, behind" && read(behind, "doc.txt") == "four, behind" && read(ahead, "marker.txt") == "after four"
        })
        #expect(SyncRig.eventually("ahead keeps its edit as a conflict version") {
            guard let run = try? ahead.run(["versions", folder(ahead).appendingPathComponent("doc.txt").path, "--json"]), run.status == 0,
                  let json = try? JSONSerialization.jsonObject(with: Data(run.stdout.utf8)) as? [String: Any],
                  let conflicts = (json["versions"] as? [[String: Any]])?.filter({ $0["conflict"] as? Bool == true }),
                  // one: an edit that reached the other device before the next is no conflict
                  conflicts.count == 1, let version = conflicts.first,
                  let url = version["url"] as? String else { return false }
            return (try? String(contentsOfFile: url, encoding: .utf8)) == "four, ahead, offline"
        })

        // the key-value store: a set made by the CLI on each device reaches the other (the daemon
        // of the device 3 h behind wakes for it), and the later set wins whatever the clocks say
        func kv(_ device: Device, _ arguments: [String]) -> String? {
            guard let run = try? device.run(["kv"] + arguments), run.status == 0 else { return nil }
            return run.stdout.trimmingCharacters(in: .whitespacesAndNewlines)
        }
        #expect(kv(behind, ["set", "theme", "from behind"]) != nil)
        #expect(SyncRig.eventually("ahead has behind's set") { kv(ahead, ["get", "theme"]) == "from behind" })
        #expect(kv(ahead, ["set", "theme", "from ahead"]) != nil)
        #expect(SyncRig.eventually("behind has ahead's later set") { kv(behind, ["get", "theme"]) == "from ahead" })
        #expect(kv(behind, ["set", "theme", "later, from behind"]) != nil)
        #expect(SyncRig.eventually("ahead has the later set from the clock 8 h behind") { kv(ahead, ["get", "theme"]) == "later, from behind" })
    }
}
