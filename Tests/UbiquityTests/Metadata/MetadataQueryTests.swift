import Foundation
import Testing
@testable import Ubiquity

/// `MetadataQuery` in this process (no daemon): gathering, live updates, notifications, sorting.
@Suite("Metadata query (in-process)")
struct MetadataQueryTests {
    /// Collects a query's snapshots until one satisfies `condition` (or 120 s pass: a guard against hangs, generous for loaded machines).
    static func next(_ iterator: inout AsyncStream<MetadataQuery.Snapshot>.Iterator,
                     until condition: (MetadataQuery.Snapshot) -> Bool) async -> MetadataQuery.Snapshot? {
        let deadline = ContinuousClock.now + .seconds(120)
        while ContinuousClock.now < deadline {
            guard let step = await iterator.next() else { return nil }
            if condition(step) { return step }
        }
        return nil
    }

    static func isFinish(_ step: MetadataQuery.Snapshot) -> Bool {
        if case .didFinishGathering = step.kind { return true }
        return false
    }

    @Test("gathers matching files, then reports creates, renames, edits and deletes")
    func liveUpdates() async throws {
        let folder = TemporaryDirectory()
        try Data("hello".utf8).write(to: folder.url.appendingPathComponent("test.txt"))
        try Data("x".utf8).write(to: folder.url.appendingPathComponent("other.md"))
        try FileManager.default.createDirectory(at: folder.url.appendingPathComponent("sub"), withIntermediateDirectories: true)
        try Data("deep".utf8).write(to: folder.url.appendingPathComponent("sub/deep.txt"))

        let query = MetadataQuery()
        query.predicate = try QueryPredicate(format: "%K LIKE %@", NSMetadataItemFSNameKey, "*.txt")
        query.searchScopes = [folder.url]
        query.sortDescriptors = [MetadataSortDescriptor(key: NSMetadataItemFSNameKey)]
        var steps = query.snapshots().makeAsyncIterator()
        #expect(query.start())
        #expect(!query.start(), "a running query does not start twice")
        let finished = try #require(await Self.next(&steps, until: Self.isFinish))
        #expect(finished.results.map { $0.value(forAttribute: NSMetadataItemFSNameKey) as? String } == ["deep.txt", "test.txt"])
        #expect(query.resultCount == 2)
        #expect(query.value(ofAttribute: "kMDItemFSSize", forResultAt: 1) as? Int64 == 5)
        #expect((query.result(at: 1) as? MetadataItem)?.url.path == folder.url.appendingPathComponent("test.txt").path)

        try Data("new".utf8).write(to: folder.url.appendingPathComponent("added.txt"))
        let added = try #require(await Self.next(&steps) { !$0.added.isEmpty })
        #expect(added.added.map(\.record.name) == ["added.txt"])
        #expect(query.resultCount == 3)

        try FileManager.default.moveItem(at: folder.url.appendingPathComponent("added.txt"), to: folder.url.appendingPathComponent("renamed.txt"))
        let renamed = try #require(await Self.next(&steps) { $0.added.contains { $0.record.name == "renamed.txt" } })
        #expect(renamed.removed.map(\.record.name) == ["added.txt"])

        try Data("hello, world".utf8).write(to: folder.url.appendingPathComponent("test.txt"))
        let changed = try #require(await Self.next(&steps) { $0.changed.contains { $0.record.name == "test.txt" } })
        #expect(changed.changed.first { $0.record.name == "test.txt" }?.record.size == 12)

        try FileManager.default.removeItem(at: folder.url.appendingPathComponent("sub"))
        let removed = try #require(await Self.next(&steps) { !$0.removed.isEmpty })
        #expect(removed.removed.map(\.record.name) == ["deep.txt"])
        #expect(query.resultItems.map(\.record.name) == ["renamed.txt", "test.txt"])
        query.stop()
        #expect(query.isStopped)
    }

    @Test("notifications are posted in order, the update carrying Apple's userInfo keys")
    func notifications() async throws {
        let folder = TemporaryDirectory()
        let query = MetadataQuery()
        query.predicate = try QueryPredicate(format: "kMDItemFSName == 'test.txt'")
        query.searchScopes = [folder.url.path]
        let queue = OperationQueue()
        queue.maxConcurrentOperationCount = 1
        query.operationQueue = queue
        let seen = NotificationLog()
        var tokens: [any NSObjectProtocol] = []
        for name in [Notification.Name.NSMetadataQueryDidStartGathering, .NSMetadataQueryGatheringProgress,
                     .NSMetadataQueryDidFinishGathering, .NSMetadataQueryDidUpdate] {
            tokens.append(NotificationCenter.default.addObserver(forName: name, object: query, queue: nil) { note in
                seen.append(note.name.rawValue, added: (note.userInfo?[NSMetadataQueryUpdateAddedItemsKey] as? [Any])?.count)
            })
        }
        defer { tokens.forEach(NotificationCenter.default.removeObserver) }
        var steps = query.snapshots().makeAsyncIterator()
        #expect(query.start())
        _ = await Self.next(&steps, until: Self.isFinish)
        try Data("t".utf8).write(to: folder.url.appendingPathComponent("test.txt"))
        _ = await Self.next(&steps) { !$0.added.isEmpty }
        let deadline = ContinuousClock.now + .seconds(120)
        while seen.names.last != "NSMetadataQueryDidUpdateNotification" && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(10))
        }
        let names = seen.names
        #expect(names.first == "NSMetadataQueryDidStartGatheringNotification")
        #expect(names.contains("NSMetadataQueryDidFinishGatheringNotification"))
        #expect(names.last == "NSMetadataQueryDidUpdateNotification")
        #expect(seen.lastAdded == 1)
        query.stop()
    }

    @Test("disableUpdates holds changes back until enableUpdates")
    func disableUpdates() async throws {
        let folder = TemporaryDirectory()
        let query = MetadataQuery()
        query.predicate = .truePredicate
        query.searchScopes = [folder.url]
        var steps = query.snapshots().makeAsyncIterator()
        #expect(query.start())
        _ = await Self.next(&steps, until: Self.isFinish)
        query.disableUpdates()
        query.disableUpdates()
        try Data("a".utf8).write(to: folder.url.appendingPathComponent("a"))
        // Wait until the change is surely in the pipeline: a second query sees it.
        var other: [MetadataItem] = []
        let deadline = ContinuousClock.now + .seconds(120)
        while other.isEmpty && ContinuousClock.now < deadline {
            try await Task.sleep(for: .milliseconds(20))
            other = try await MetadataQuery.results(matching: .truePredicate, in: [folder.url])
        }
        #expect(other.count == 1)
        try await Task.sleep(for: .milliseconds(100))
        #expect(query.resultCount == 0)
        query.enableUpdates()
        #expect(query.resultCount == 0, "updates nest")
        query.enableUpdates()
        let update = try #require(await Self.next(&steps) { !$0.added.isEmpty })
        #expect(update.results.count == 1)
        query.stop()
    }

    @Test("bad scopes and missing predicates make start() return false with a reason")
    func badStart() throws {
        let query = MetadataQuery()
        #expect(!query.start())
        #expect(query.lastError?.message.contains("no predicate") == true)
        query.predicate = .truePredicate
        query.searchScopes = ["relative/path"]
        #expect(!query.start())
        #expect(query.lastError?.code == .invalidArgument)
    }

    @Test("a missing folder scope fails the query with an error")
    func missingFolder() async throws {
        let query = MetadataQuery()
        query.predicate = .truePredicate
        query.searchScopes = ["/nonexistent-\(UUID().uuidString)"]
        var steps = query.snapshots().makeAsyncIterator()
        #expect(query.start())
        let failed = await Self.next(&steps) { if case .failed = $0.kind { return true } else { return false } }
        #expect(failed != nil)
        #expect(query.lastError?.code == .notFound)
    }

    @Test("value lists and grouped results count distinct values")
    func valueListsAndGroups() async throws {
        let folder = TemporaryDirectory()
        for name in ["a.txt", "b.txt", "c.md"] { try Data(name.utf8).write(to: folder.url.appendingPathComponent(name)) }
        let query = MetadataQuery()
        query.predicate = .truePredicate
        query.searchScopes = [folder.url]
        query.valueListAttributes = [NSMetadataItemContentTypeKey]
        query.groupingAttributes = [NSMetadataItemContentTypeKey]
        var steps = query.snapshots().makeAsyncIterator()
        #expect(query.start())
        _ = await Self.next(&steps, until: Self.isFinish)
        let list = try #require(query.valueLists[NSMetadataItemContentTypeKey])
        #expect(list.first { $0.value as? String == "public.plain-text" }?.count == 2)
        #expect(query.groupedResults.map(\.resultCount).sorted() == [1, 2])
        query.stop()
    }
}

/// Notification names seen, in order. `@unchecked Sendable`: guarded by its lock.
final class NotificationLog: @unchecked Sendable {
    private let lock = NSLock()
    private var seen: [(String, Int?)] = []
    func append(_ name: String, added: Int?) { lock.withLock { seen.append((name, added)) } }
    var names: [String] { lock.withLock { seen.map(\.0) } }
    var lastAdded: Int? { lock.withLock { seen.last?.1 } }
}
