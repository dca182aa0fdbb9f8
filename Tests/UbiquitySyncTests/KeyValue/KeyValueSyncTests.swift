// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityServer
import UbiquityStore
import UbiquitySync
import UbiquityCloudKit

/// `KeyValueSync` in-process against a real `RecordsServer` on loopback, with two devices (two
/// local stores in two state folders, one user): a set on one reaches the other with its
/// reason, and conflicting sets end with the later timestamp on both.
@Suite struct KeyValueSyncTests {
    static let containerID = "iCloud.org.example.KeyValueSync"

    /// A server with one user, and the devices made against it.
    final class Harness: Sendable {
        let url: URL
        let api: String
        let admin: RecordsAdmin
        let task: Task<Void, any Error>
        let directory: URL
        let logger: Logger

        init() async throws {
            directory = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-kvsync-\(UUID().uuidString.prefix(8))")
            var logger = Logger(label: "test.kv-sync")
            logger.logLevel = .warning
            self.logger = logger
            let store = try SQLiteRecordStore(directory: directory.appendingPathComponent("server"), logger: logger)
            admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
            api = try await admin.addContainer(KeyValueSyncTests.containerID)
            _ = try await admin.addUser("mei", email: nil, password: nil)
            let server = RecordsServer(store: store, configuration: .init(), logger: logger)
            let (stream, continuation) = AsyncStream<String>.makeStream()
            task = Task { try await server.application { continuation.yield($0) }.run() }
            var iterator = stream.makeAsyncIterator()
            url = URL(string: try #require(await iterator.next()))!
        }

        /// A device: its own state folder, store and sync (signed in as mei with a token of its own).
        func device(_ name: String, fetchInterval: Duration = .seconds(5)) async throws -> Device {
            let token = try await admin.issueToken(forUser: "mei")
            let container = CloudContainer(identifier: KeyValueSyncTests.containerID, serverURL: url,
                                           credentials: .apiToken(api, webAuthToken: token), logger: logger)
            let root = directory.appendingPathComponent(name)
            let paths = UbiquityPaths(environment: ["HOME": root.path, "XDG_STATE_HOME": root.appendingPathComponent("state").path])
            let store = try KeyValueStore(containerIdentifier: KeyValueSyncTests.containerID, paths: paths,
                                          notificationCenter: NotificationCenter(), pollInterval: .milliseconds(20), logger: logger)
            let sync = try KeyValueSync(container: container, paths: paths, logger: logger, pollInterval: .milliseconds(20),
                                        fetchInterval: fetchInterval)
            return Device(store: store, sync: sync, recorder: Recorder(store.changes()))
        }

        /// Runs `body` with a fresh harness and always stops it (and deletes its folder) after.
        static func with(_ body: (Harness) async throws -> Void) async throws {
            let harness = try await Harness()
            do {
                try await body(harness)
            } catch {
                await harness.stop()
                throw error
            }
            await harness.stop()
        }

        func stop() async {
            task.cancel()
            _ = try? await task.value
            try? FileManager.default.removeItem(at: directory)
        }
    }

    struct Device: Sendable {
        let store: KeyValueStore
        let sync: KeyValueSync
        let recorder: Recorder

        /// Waits (hang guard: 60 s) for a change touching `key`; the changes before it are skipped.
        func waitForChange(of key: String) async -> KeyValueStore.Change? {
            let deadline = ContinuousClock.now + .seconds(60)
            while ContinuousClock.now < deadline {
                if let change = recorder.take(where: { $0.changedKeys.contains(key) }) { return change }
                try? await Task.sleep(for: .milliseconds(10))
            }
            return nil
        }
    }

    /// A store's changes, recorded as they come.
    final class Recorder: Sendable {
        let changes = Mutex<[KeyValueStore.Change]>([])
        let task = Mutex<Task<Void, Never>?>(nil)

        init(_ stream: AsyncStream<KeyValueStore.Change>) {
            let started = Task { [weak self] in
                for await change in stream { self?.changes.withLock { $0.append(change) } }
            }
            task.withLock { $0 = started }
        }

        deinit { task.withLock { $0?.cancel() } }

        /// Removes and returns the first change matching `matches`, with those before it.
        func take(where matches: (KeyValueStore.Change) -> Bool) -> KeyValueStore.Change? {
            changes.withLock { changes in
                guard let index = changes.firstIndex(where: matches) else { return nil }
                let change = changes[index]
                changes.removeFirst(index + 1)
                return change
            }
        }
    }

    @Test func setOnOneDeviceReachesTheOtherWithItsReason() async throws {
        try await Harness.with { harness in
            // What B hears while running comes by push; the periodic fetch (10 s here) is only the
            // safety net for a change made before B's push connection was up.
            let a = try await harness.device("a", fetchInterval: .seconds(10))
            let b = try await harness.device("b", fetchInterval: .seconds(10))

            // Set before the first sync: B's first download is the initial sync.
            #expect(a.store.set("hello", forKey: "greeting"))
            try await a.sync.synchronize()
            #expect(try a.sync.database.dirtyEntries().isEmpty)
            b.sync.start()
            let initial = await b.waitForChange(of: "greeting")
            #expect(initial == KeyValueStore.Change(reason: .initialSyncChange, changedKeys: ["greeting"]))
            #expect(b.store.string(forKey: "greeting") == "hello")

            // While both run, a set on A reaches B as a server change, by push.
            a.sync.start()
            #expect(a.store.set(["level": 13] as [String: Any], forKey: "progress"))
            let change = await b.waitForChange(of: "progress")
            #expect(change == KeyValueStore.Change(reason: .serverChange, changedKeys: ["progress"]))
            #expect(b.store.dictionary(forKey: "progress")?["level"] as? Int == 13)

            // And back: B removes a key, A hears of it.
            b.store.removeObject(forKey: "greeting")
            let removal = await a.waitForChange(of: "greeting")
            #expect(removal?.reason == .serverChange)
            #expect(a.store.string(forKey: "greeting") == nil)
            await a.sync.stop()
            await b.sync.stop()
        }
    }

    @Test func conflictingSetsEndWithTheLaterTimestampOnBoth() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            let b = try await harness.device("b")
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let early = try KeyValueStore.Value.string("from A, earlier").encoded()
            let late = try KeyValueStore.Value.string("from B, later").encoded()

            // The later set reaches the server first: A's earlier one is answered with B's, and adopted.
            try a.sync.database.set("level", encodedValue: early, writer: "test", now: now + 10)
            try b.sync.database.set("level", encodedValue: late, writer: "test", now: now + 20)
            try await b.sync.synchronize()
            try await a.sync.synchronize()
            #expect(a.store.string(forKey: "level") == "from B, later")
            #expect(try a.sync.database.dirtyEntries().isEmpty)
            try await b.sync.synchronize()
            #expect(b.store.string(forKey: "level") == "from B, later")

            // The earlier set reaches the server first: the later one replaces it, and both end with it.
            try b.sync.database.set("score", encodedValue: early, writer: "test", now: now + 30)
            try a.sync.database.set("score", encodedValue: late, writer: "test", now: now + 40)
            try await b.sync.synchronize()
            try await a.sync.synchronize()
            try await b.sync.synchronize()
            #expect(a.store.string(forKey: "score") == "from B, later")
            #expect(b.store.string(forKey: "score") == "from B, later")
            #expect(try b.sync.database.dirtyEntries().isEmpty)
            let change = await b.waitForChange(of: "score")
            #expect(change?.reason == .serverChange)
        }
    }

    /// Timestamps are on the server's clock: the measured offset is added to every local set.
    @Test func changesAreTimedOnTheServersClock() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            // this machine and the loopback server share a clock: no offset is recorded (a
            // measurement needs a round trip under half a second, which a loaded machine running
            // the suites in parallel may not give three times in a row: asked again, not timed)
            var measured: Double?
            for _ in 0..<20 where measured == nil { measured = await ServerClock.skew(serverURL: harness.url) }
            let skew = try #require(measured)
            #expect(abs(skew) < 5)
            a.sync.start()
            try await Task.sleep(for: .milliseconds(300))  // let it measure (not a timing assertion)
            #expect(try a.sync.database.syncState(KeyValueDatabase.clockOffsetKey) == nil)
            // a device two hours behind the server stamps its sets two hours later than its clock says
            try a.sync.database.setClockOffset(2 * 3600 * 1000)
            let before = Int64(Date().timeIntervalSince1970 * 1000)
            let entry = try #require(try a.sync.database.set("k", encodedValue: try KeyValueStore.Value.string("v").encoded(), writer: "test"))
            #expect(entry.modified >= before + 2 * 3600 * 1000 && entry.modified < before + 2 * 3600 * 1000 + 60_000)
            await a.sync.stop()
        }
    }

    @Test func anEntryTheServerRefusesOverTheQuotaIsPutBack() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            let b = try await harness.device("b")
            let big = String(repeating: "x", count: 600_000)

            // Each device alone is within 1 MB; together they are not. A gets there first.
            #expect(a.store.set(big, forKey: "first"))
            try await a.sync.synchronize()
            #expect(b.store.set("small", forKey: "kept"))
            #expect(b.store.set(big, forKey: "second"))
            try await b.sync.synchronize()

            // B's big entry is refused and removed (the server has none), with a quota violation;
            // its small one went up; A's arrived.
            let refused = await b.waitForChange(of: "second")
            #expect(refused == KeyValueStore.Change(reason: .quotaViolationChange, changedKeys: ["second"]))
            #expect(b.store.string(forKey: "second") == nil)
            #expect(b.store.string(forKey: "first") == big)
            #expect(try b.sync.database.dirtyEntries().isEmpty)
            try await a.sync.synchronize()
            #expect(a.store.string(forKey: "kept") == "small")
            #expect(a.store.string(forKey: "second") == nil)
        }
    }

    @Test func uploadsWaitForTheServerAndLoseNothing() async throws {
        try await Harness.with { harness in
            // A device whose server is not listening: rounds fail, entries stay dirty.
            let token = try await harness.admin.issueToken(forUser: "mei")
            let unreachable = CloudContainer(identifier: KeyValueSyncTests.containerID, serverURL: URL(string: "http://127.0.0.1:1")!,
                                             credentials: .apiToken(harness.api, webAuthToken: token), logger: harness.logger)
            let a = try await harness.device("a")
            let offline = KeyValueSync(container: unreachable, database: a.sync.database, logger: harness.logger)
            #expect(a.store.set("written offline", forKey: "note"))
            await #expect(throws: (any Error).self) { try await offline.synchronize() }
            #expect(try a.sync.database.dirtyEntries().map(\.key) == ["note"])
            // The real server: the entry goes up and reaches another device.
            try await a.sync.synchronize()
            #expect(try a.sync.database.dirtyEntries().isEmpty)
            let b = try await harness.device("b")
            try await b.sync.synchronize()
            #expect(b.store.string(forKey: "note") == "written offline")
        }
    }
}
