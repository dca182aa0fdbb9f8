// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Testing
@testable import UbiquityServer
import UbiquityCore

/// Issue 24 (Low): the SQLite push signal's abstract socket hears only the server's own user
/// (and root). Another user's datagram is sent for real, as user `nobody` (`setpriv`), which
/// needs root: CI runs as root; elsewhere the test checks only the rule.
@Suite struct PushSignalPeersTests {
    static let isRoot = getuid() == 0 && FileManager.default.isExecutableFile(atPath: "/usr/bin/setpriv")
        && FileManager.default.isExecutableFile(atPath: "/usr/bin/python3")

    @Test func theRuleIsTheOwnUserOrRoot() {
        #expect(SQLitePushSignal.accepts(sender: getuid()))
        #expect(SQLitePushSignal.accepts(sender: 0))
        #expect(!SQLitePushSignal.accepts(sender: 65_534) || getuid() == 65_534)
        #expect(!SQLitePushSignal.accepts(sender: .max))
    }

    /// Sends `payload` to the signal's socket as `uid` (nil: this process's user).
    static func send(_ payload: String, to signal: SQLitePushSignal, as uid: Int?) throws {
        let script = """
            import socket, sys
            s = socket.socket(socket.AF_UNIX, socket.SOCK_DGRAM)
            s.sendto(sys.argv[2].encode(), b"\\0" + sys.argv[1].encode())
            """
        let process = Process()
        process.executableURL = URL(fileURLWithPath: uid == nil ? "/usr/bin/python3" : "/usr/bin/setpriv")
        let python = ["/usr/bin/python3", "-c", script, "ubiquity-push/\(signal.namespace)/\(signal.name)", payload]
        process.arguments = uid.map { ["--reuid=\($0)", "--regid=\($0)", "--clear-groups", "--"] + python } ?? Array(python.dropFirst())
        process.currentDirectoryURL = URL(fileURLWithPath: "/")
        try process.run()
        process.waitUntilExit()
        #expect(process.terminationStatus == 0)
    }

    @Test(.enabled(if: isRoot)) func datagramsFromAnotherLocalUserAreDropped() async throws {
        let data = FileManager.default.temporaryDirectory.appendingPathComponent("ubiquity-push-peers-\(UUID().uuidString)")
        try FileManager.default.createDirectory(at: data, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: data) }
        var logger = Logger(label: "test.push-peers")
        logger.logLevel = .critical
        let signal = try SQLitePushSignal(dataDirectory: data, logger: logger)
        defer { signal.stop() }
        let heard = Mutex<[[NotificationLogKey: Int64]]>([])
        let (stream, continuation) = AsyncStream<Void>.makeStream()
        let task = Task {
            await signal.run { heads in
                guard let heads else { return }
                heard.withLock { $0.append(heads) }
                continuation.yield()
            }
        }
        defer { task.cancel() }
        let forged = "iCloud.org.example.Forged\tdevelopment\t_victim\t99"
        try Self.send(forged, to: signal, as: 65_534)
        // the server's own user is heard (and, arriving after the forged one, shows it was dropped)
        try Self.send("iCloud.org.example.Own\tdevelopment\t_owner\t7", to: signal, as: nil)
        var iterator = stream.makeAsyncIterator()
        _ = await iterator.next()
        let all = heard.withLock { $0 }
        #expect(all.count == 1)
        #expect(all.first?.keys.map(\.container) == ["iCloud.org.example.Own"])
    }
}
