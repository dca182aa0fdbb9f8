// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing

@testable import UbiquityIndex

/// The signal that wakes the key-value store, its sync and the identity monitor
/// (`FileChangeSignal`, through the process's one inotify hub): a real watch on a temporary
/// folder; the batch filter as a pure function. Nothing is timed: the waits are hang guards.
@Suite struct FileChangeSignalTests {
    /// Counts the handler's calls.
    final class Counter: Sendable {
        let calls = Atomic<Int>(0)
        func bump() { calls.add(1, ordering: .relaxed) }
        var value: Int { calls.load(ordering: .relaxed) }

        /// Waits until the count exceeds `count` (false after 10 s: a hang guard).
        func exceeds(_ count: Int) async throws -> Bool {
            for _ in 0..<1000 {
                if value > count { return true }
                try await Task.sleep(for: .milliseconds(10))
            }
            return false
        }
    }

    static func folder() throws -> URL {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-signal-\(UUID().uuidString.prefix(8))", isDirectory: true)
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        return folder
    }

    @Test func onlyTheFileItsSuffixedSiblingsAndLostEventsMatter() {
        let paths: Set<String> = ["/d/store.sqlite", "/d/store.sqlite-wal"]
        func matters(_ batch: WatchBatch) -> Bool { FileChangeSignal.matters(batch, paths: paths) }
        #expect(matters(WatchBatch(changes: [.changed("/d/store.sqlite")])))
        #expect(matters(WatchBatch(changes: [.changed("/d/other"), .changed("/d/store.sqlite-wal")])))
        #expect(matters(WatchBatch(changes: [.removed("/d/store.sqlite")])))
        #expect(matters(WatchBatch(changes: [.moved(from: "/d/.tmp-1", to: "/d/store.sqlite")])))
        #expect(!matters(WatchBatch(changes: [.changed("/d/store.sqlite-shm")])))
        #expect(!matters(WatchBatch(changes: [.changed("/d/other"), .moved(from: "/d/a", to: "/d/b")])))
        #expect(!matters(WatchBatch(changes: [.changed("/e/store.sqlite")])))
        #expect(matters(WatchBatch(rescans: [RescanRequest(path: "/d", reason: .overflow)])))
        #expect(matters(WatchBatch(rescans: [RescanRequest(path: "/d", reason: .rootChanged)])))
    }

    @Test func aWriteAWalWriteAndAReplaceByRenameEachSignal() async throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let store = folder.appendingPathComponent("store.sqlite")
        let counter = Counter()
        let signal = try #require(FileChangeSignal(path: store.path) { counter.bump() })
        defer { signal.stop() }

        try Data("a".utf8).write(to: store)
        #expect(try await counter.exceeds(0), "a write of the file itself")

        var seen = counter.value
        try Data("wal".utf8).write(to: URL(fileURLWithPath: store.path + "-wal"))
        #expect(try await counter.exceeds(seen), "a write of its -wal")

        seen = counter.value
        let temporary = folder.appendingPathComponent(".store.tmp")
        try Data("b".utf8).write(to: temporary)
        #expect(rename(temporary.path, store.path) == 0)
        #expect(try await counter.exceeds(seen), "a replace by rename")
        signal.stop()  // stopping twice (here and on the way out) is harmless
    }

    @Test func aMissingFolderGivesNoSignalSoTheCallerPolls() throws {
        let folder = try Self.folder()
        defer { try? FileManager.default.removeItem(at: folder) }
        let path = folder.appendingPathComponent("gone/store.sqlite").path
        #expect(FileChangeSignal(path: path, onChange: {}) == nil)
    }
}
