import Foundation
import Testing
import UbiquityCore
@testable import UbiquityIndex

/// A folder fed by the code that changes it (``FolderChangeFeed``, as the mounted folder's FUSE
/// handlers post): the watcher takes its changes from the feed, with no inotify watch of it
/// (issue 23: "the mount is the watcher").
@Suite struct FedFileWatcherTests {
    typealias Change = FolderChangeFeed.Change

    static func post(_ kind: Change.Kind, _ path: String, in root: String, isDirectory: Bool = false) {
        FolderChangeFeed.shared.post(Change(kind, path, isDirectory: isDirectory), in: root)
    }

    @Test func changesComeFromTheFeedAndNoFolderIsWatched() async throws {
        let fixture = try WatchFixture { root in
            try FileManager.default.createDirectory(atPath: root + "/sub", withIntermediateDirectories: true)
            FolderChangeFeed.shared.open(root)
        }
        defer {
            fixture.finish()
            FolderChangeFeed.shared.close(fixture.root)
        }
        #expect(fixture.watcher.watchCount == 0)
        // a change made on the disk behind the feed's back is not seen (no inotify)...
        try WatcherFS.writeFile(fixture.path("unseen.txt"), "x")
        // ...what is posted is, in order, with renames paired and editor saves reduced
        try WatcherFS.writeFile(fixture.path("a.txt"), "a")
        Self.post(.created, fixture.path("a.txt"), in: fixture.root)
        Self.post(.modified, fixture.path("a.txt"), in: fixture.root)
        Self.post(.closedAfterWriting, fixture.path("a.txt"), in: fixture.root)
        try WatcherFS.writeFile(fixture.path("sub/b.txt"), "b")
        Self.post(.created, fixture.path("sub/b.txt"), in: fixture.root)
        try FileManager.default.moveItem(atPath: fixture.path("sub/b.txt"), toPath: fixture.path("c.txt"))
        let cookie = FolderChangeFeed.shared.nextCookie()
        Self.post(.movedFrom(cookie: cookie), fixture.path("sub/b.txt"), in: fixture.root)
        Self.post(.movedTo(cookie: cookie), fixture.path("c.txt"), in: fixture.root)
        // sync() waits for a marker in the feed's own queue (no cookie file)
        try await fixture.watcher.sync(root: fixture.root, timeout: .seconds(30))
        try await fixture.wait("the posted changes") { changes, _ in changes.contains(.changed(fixture.path("a.txt"))) && changes.contains(.changed(fixture.path("c.txt"))) }
        #expect(!fixture.log.changes.contains(.changed(fixture.path("unseen.txt"))))
        #expect(fixture.watcher.watchCount == 0)
        let names = try FileManager.default.contentsOfDirectory(atPath: fixture.root)
        #expect(!names.contains { $0.hasPrefix(WatchPaths.cookiePrefix) })
    }

    @Test func ignoredFoldersStayQuietAndAnOverflowOrAClosedFeedAsksForARescan() async throws {
        let fixture = try WatchFixture { root in FolderChangeFeed.shared.open(root) }
        defer {
            fixture.finish()
            FolderChangeFeed.shared.close(fixture.root)
        }
        // inotify would not watch inside an ignored folder: a feed's changes there are dropped too
        try FileManager.default.createDirectory(atPath: fixture.path("cache.tmp/x"), withIntermediateDirectories: true)
        try WatcherFS.writeFile(fixture.path("cache.tmp/x/y.js"), "y")
        Self.post(.created, fixture.path("cache.tmp/x/y.js"), in: fixture.root)
        try WatcherFS.writeFile(fixture.path("kept.txt"), "k")
        Self.post(.created, fixture.path("kept.txt"), in: fixture.root)
        try await fixture.watcher.sync(root: fixture.root, timeout: .seconds(30))
        try await fixture.wait("kept.txt") { changes, _ in changes.contains(.changed(fixture.path("kept.txt"))) }
        #expect(!fixture.log.changes.contains { "\($0)".contains("cache.tmp") })

        // more than the queue holds: the rest is dropped and the root rescanned
        let flood = (0...FolderChangeFeed.capacity).map { Change(.modified, fixture.path("f\($0 % 2)")) }
        FolderChangeFeed.shared.post(contentsOf: flood, in: fixture.root)
        try await fixture.wait("an overflow rescan") { _, rescans in rescans.contains { $0.reason == .overflow && $0.path == fixture.root } }

        // the feed goes (the mount ended): a rescan, and the root is no longer watched
        FolderChangeFeed.shared.close(fixture.root)
        try await fixture.wait("a root-changed rescan") { _, rescans in rescans.contains { $0.reason == .rootChanged && $0.path == fixture.root } }
    }
}
