import Foundation
import Glibc
import Logging
import Testing
import UbiquityCore
@testable import UbiquityIndex

/// The watcher on real inotify, each test in its own temporary folder.
@Suite struct FileWatcherTests {
    @Test func createWriteDelete() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        let file = fixture.path("a.txt")
        try WatcherFS.writeFile(file, "one")
        try await fixture.wait("create") { changes, _ in changes.contains(.changed(file)) }
        try await fixture.quiesce()
        let mark = fixture.log.changes.count
        try WatcherFS.writeFile(file, " two", flags: O_WRONLY | O_APPEND)
        try await fixture.wait("write") { _, _ in fixture.changes(since: mark).contains(.changed(file)) }
        try WatcherFS.remove(file)
        try await fixture.wait("delete") { _, _ in fixture.changes(since: mark).contains(.removed(file)) }
    }

    @Test func newFolderIsWatchedAndRescanned() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        let folder = fixture.path("d")
        try WatcherFS.makeFolder(folder)
        try WatcherFS.writeFile(folder + "/f.txt", "x")
        try await fixture.wait("new folder") { changes, rescans in
            rescans.contains(RescanRequest(path: folder, reason: .newDirectory))
                && WatcherFS.isCovered(folder + "/f.txt", changes: changes, rescans: rescans)
        }
        try await fixture.quiesce()
        try WatcherFS.writeFile(folder + "/g.txt", "y")
        try await fixture.wait("file in new folder") { changes, _ in changes.contains(.changed(folder + "/g.txt")) }
        #expect(fixture.watcher.watchCount == 2)
    }

    @Test func nestedFoldersWithImmediateFiles() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        try FileManager.default.createDirectory(atPath: fixture.path("a/b/c"), withIntermediateDirectories: true)
        let files = ["a/1.txt", "a/b/2.txt", "a/b/c/3.txt"].map(fixture.path)
        for file in files { try WatcherFS.writeFile(file, "x") }
        try await fixture.wait("nested files") { changes, rescans in
            files.allSatisfy { WatcherFS.isCovered($0, changes: changes, rescans: rescans) }
        }
        try await fixture.quiesce()
        let late = fixture.path("a/b/c/late.txt")
        try WatcherFS.writeFile(late, "x")
        try await fixture.wait("late file") { changes, _ in changes.contains(.changed(late)) }
        #expect(fixture.watcher.watchCount == 4)
    }

    @Test func renameFileIsOneMove() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        try WatcherFS.writeFile(fixture.path("old.txt"), "x")
        try await fixture.quiesce()
        let mark = fixture.log.changes.count
        try WatcherFS.move(fixture.path("old.txt"), fixture.path("new.txt"))
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark) == [.moved(from: fixture.path("old.txt"), to: fixture.path("new.txt"))])
    }

    @Test func renameFolderThenChangeInside() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        try FileManager.default.createDirectory(atPath: fixture.path("d/sub"), withIntermediateDirectories: true)
        try WatcherFS.writeFile(fixture.path("d/sub/f.txt"), "x")
        try await fixture.quiesce()
        let mark = fixture.log.changes.count
        let watches = fixture.watcher.watchCount
        try WatcherFS.move(fixture.path("d"), fixture.path("e"))
        try WatcherFS.writeFile(fixture.path("e/sub/f.txt"), "y", flags: O_WRONLY | O_APPEND)
        try await fixture.quiesce()
        let changes = fixture.changes(since: mark)
        #expect(changes.first == .moved(from: fixture.path("d"), to: fixture.path("e")))
        #expect(changes.contains(.changed(fixture.path("e/sub/f.txt"))))
        #expect(!changes.contains(.changed(fixture.path("d/sub/f.txt"))))
        #expect(fixture.watcher.watchCount == watches)
        // The moved subtree's watches now report the new paths.
        let mark2 = fixture.log.changes.count
        try WatcherFS.writeFile(fixture.path("e/sub/g.txt"), "z")
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark2) == [.changed(fixture.path("e/sub/g.txt"))])
    }

    @Test func moveInAndOutOfTheRoot() async throws {
        let outside = try WatchFixture.temporaryFolder()
        defer { WatcherFS.removeTree(outside) }
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        try WatcherFS.writeFile(outside + "/in.txt", "x")
        try FileManager.default.createDirectory(atPath: outside + "/folder/inner", withIntermediateDirectories: true)
        try WatcherFS.writeFile(outside + "/folder/inner/deep.txt", "x")
        try WatcherFS.writeFile(fixture.path("out.txt"), "x")
        try await fixture.quiesce()
        let mark = fixture.log.changes.count

        try WatcherFS.move(outside + "/in.txt", fixture.path("in.txt"))
        try WatcherFS.move(outside + "/folder", fixture.path("folder"))
        try WatcherFS.move(fixture.path("out.txt"), outside + "/out.txt")
        try await fixture.quiesce()
        let changes = fixture.changes(since: mark)
        #expect(changes.contains(.changed(fixture.path("in.txt"))))
        #expect(changes.contains(.changed(fixture.path("folder"))))
        #expect(changes.contains(.removed(fixture.path("out.txt"))))
        #expect(fixture.log.rescans.contains(RescanRequest(path: fixture.path("folder"), reason: .newDirectory)))
        #expect(fixture.watcher.watchCount == 3)

        // Moving the folder out drops its watches: changes there are not reported.
        let mark2 = fixture.log.changes.count
        try WatcherFS.move(fixture.path("folder"), outside + "/gone")
        try await fixture.quiesce()
        try WatcherFS.writeFile(outside + "/gone/inner/deep.txt", "y")
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark2) == [.removed(fixture.path("folder"))])
        #expect(fixture.watcher.watchCount == 1)
    }

    @Test func ignorePatterns() async throws {
        let rules = IgnoreRules(patterns: IgnoreRules.defaultPatterns + ["*.log", "build/"])
        let fixture = try WatchFixture(rules: rules) { root in try WatcherFS.makeFolder(root + "/build") }
        defer { fixture.finish() }
        #expect(fixture.watcher.watchCount == 1)
        let mark = fixture.log.changes.count
        try WatcherFS.writeFile(fixture.path("x.log"), "x")
        try WatcherFS.writeFile(fixture.path("build/a.o"), "x")
        try WatcherFS.makeFolder(fixture.path("build2"))
        try WatcherFS.writeFile(fixture.path("keep.txt"), "x")
        try await fixture.quiesce()
        let changes = fixture.changes(since: mark)
        #expect(changes.contains(.changed(fixture.path("keep.txt"))))
        #expect(changes.allSatisfy { change in
            if case .changed(let path) = change { return path.hasSuffix("keep.txt") || path.hasSuffix("build2") }
            return false
        })
    }

    @Test func twoWatchersGetOnlyTheirOwnEvents() async throws {
        let first = try WatchFixture()
        defer { first.finish() }
        let second = try WatchFixture()
        defer { second.finish() }
        try WatcherFS.writeFile(first.path("one.txt"), "1")
        try WatcherFS.writeFile(second.path("two.txt"), "2")
        try await first.quiesce()
        try await second.quiesce()
        #expect(first.log.changes.contains(.changed(first.path("one.txt"))))
        #expect(second.log.changes.contains(.changed(second.path("two.txt"))))
        #expect(first.log.changes.allSatisfy { "\($0)".contains(first.root + "/") })
        #expect(second.log.changes.allSatisfy { "\($0)".contains(second.root + "/") })
    }

    @Test func syncReturnsAfterEarlierWritesWereDelivered() async throws {
        let root = try WatchFixture.temporaryFolder()
        defer { WatcherFS.removeTree(root) }
        let watcher = FileWatcher(configuration: .init(settle: .seconds(10), maximumLatency: .seconds(60)),
                                  logger: Logger(label: "test.sync"))
        try watcher.watch(root: root, ignoring: .defaults)
        try WatcherFS.writeFile(root + "/written.txt", "x")
        try await watcher.sync(root: root)
        watcher.stop()
        var delivered: [WatchChange] = []
        for await batch in watcher.batches { delivered += batch.changes }
        #expect(delivered == [.changed(root + "/written.txt")])
        let leftovers = try FileManager.default.contentsOfDirectory(atPath: root)
        #expect(leftovers == ["written.txt"])
    }

    @Test func syncOnUnwatchedRootFails() async throws {
        let watcher = FileWatcher(logger: Logger(label: "test.sync"))
        defer { watcher.stop() }
        await #expect(throws: UbiquityError.self) { try await watcher.sync(root: "/tmp") }
    }

    @Test func watchRejectsMissingRootAndFiles() throws {
        let watcher = FileWatcher(logger: Logger(label: "test.errors"))
        defer { watcher.stop() }
        #expect(throws: UbiquityError.self) { try watcher.watch(root: "/tmp/ubiq-watch-missing-\(UUID())", ignoring: .defaults) }
        let root = try WatchFixture.temporaryFolder()
        defer { WatcherFS.removeTree(root) }
        try WatcherFS.writeFile(root + "/file", "x")
        #expect(throws: UbiquityError.self) { try watcher.watch(root: root + "/file", ignoring: .defaults) }
        #expect(watcher.watchCount == 0)
    }

    @Test func watchLimitIsReportedNotThrown() async throws {
        var configuration = FileWatcher.Configuration()
        configuration.failAddWatch = { path in path.hasSuffix("/deep") ? ENOSPC : nil }
        let fixture = try WatchFixture(configuration: configuration) { root in try WatcherFS.makeFolder(root + "/deep") }
        defer { fixture.finish() }
        try await fixture.wait("watch limit") { _, rescans in
            rescans.contains { $0.reason == .watchLimit && $0.path == fixture.path("deep") }
        }
        let message = fixture.log.rescans.first { $0.reason == .watchLimit }?.message ?? ""
        #expect(message.contains("fs.inotify.max_user_watches"))
        #expect(message.contains("sysctl -w fs.inotify.max_user_watches="))
        #expect(fixture.watcher.watchCount == 1)
    }

    @Test func overflowBecomesRescanOfEveryRoot() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        fixture.watcher.simulateQueueOverflow()
        try await fixture.wait("overflow") { _, rescans in
            rescans.contains { $0.reason == .overflow && $0.path == fixture.root }
        }
        let message = fixture.log.rescans.first { $0.reason == .overflow }?.message ?? ""
        #expect(message.contains("inotify queue overflowed: rescanning \(fixture.root)"))
        #expect(message.contains("sysctl -w fs.inotify.max_queued_events="))
    }

    @Test func deletedRootIsReported() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        try WatcherFS.writeFile(fixture.path("f.txt"), "x")
        try await fixture.quiesce()
        WatcherFS.removeTree(fixture.root)
        try await fixture.wait("root change") { _, rescans in
            rescans.contains { $0.reason == .rootChanged && $0.path == fixture.root }
        }
        #expect(fixture.watcher.watchCount == 0)
    }

    @Test func deletedFoldersLoseTheirWatches() async throws {
        let fixture = try WatchFixture()
        defer { fixture.finish() }
        try FileManager.default.createDirectory(atPath: fixture.path("x/y"), withIntermediateDirectories: true)
        try await fixture.quiesce()
        #expect(fixture.watcher.watchCount == 3)
        WatcherFS.removeTree(fixture.path("x"))
        try await fixture.wait("folder removal") { changes, _ in changes.contains(.removed(fixture.path("x"))) }
        try await fixture.quiesce()
        #expect(fixture.watcher.watchCount == 1)
        // Re-created at the same path, the folder is watched again.
        try WatcherFS.makeFolder(fixture.path("x"))
        try await fixture.quiesce()
        try WatcherFS.writeFile(fixture.path("x/again.txt"), "x")
        try await fixture.wait("file in re-created folder") { changes, _ in changes.contains(.changed(fixture.path("x/again.txt"))) }
    }

    @Test func burstOfFiveThousandFiles() async throws {
        let fixture = try WatchFixture(configuration: .init())
        defer { fixture.finish() }
        var files: [String] = []
        for folder in 0..<50 {
            let path = fixture.path("f\(folder)")
            try WatcherFS.makeFolder(path)
            for index in 0..<100 {
                let file = path + "/file\(index)"
                try WatcherFS.touch(file)
                files.append(file)
            }
        }
        try await fixture.quiesce()
        let changes = Set(fixture.log.changes.compactMap { change -> String? in
            if case .changed(let path) = change { return path }
            return nil
        })
        let rescans = fixture.log.rescans
        let missing = files.filter { file in
            !changes.contains(file) && !rescans.contains { WatchPaths.isWithin(file, root: $0.path) }
        }
        #expect(missing.isEmpty, "not reported: \(missing.prefix(10))")
    }
}
