import Foundation
import Logging
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityIndex
import UbiquityStore

@Suite struct IndexerTests {
    private static let logger = Logger(label: "IndexerTests")

    private func makeIndexer() throws -> Indexer {
        Indexer(index: try MetadataIndex.inMemory(logger: Self.logger), logger: Self.logger)
    }

    private func paths(_ indexer: Indexer, _ tree: ScanTestTree) throws -> [String] {
        try indexer.index.records(under: tree.root).map { String($0.path.dropFirst(tree.root.count + 1)) }
    }

    @Test func addRootScansTheTree() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("a.txt")
        tree.file("d/b.txt")
        tree.file("d/.b.txt.swp")
        let indexer = try makeIndexer()
        let delta = try await indexer.addRoot(tree.root, ignoring: .defaults)
        #expect(Set(delta.added.map(\.name)) == ["a.txt", "d", "b.txt"])
        #expect(try paths(indexer, tree) == ["a.txt", "d", "d/b.txt"])
        let status = try await indexer.status()
        #expect(status.itemCount == 3 && status.folderCount == 1)
        #expect(status.roots.map(\.path) == [tree.root])
        #expect(status.roots.first?.lastScanFinished != nil)
        #expect(try await indexer.addRoot(tree.root, ignoring: .defaults).isEmpty)
    }

    @Test func changedCreatesUpdatesAndRemoves() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("a.txt", "1")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)

        tree.file("new.txt")
        tree.file("a.txt", "longer")
        var delta = try await indexer.apply(WatchBatch(changes: [.changed(tree.path("new.txt")), .changed(tree.path("a.txt"))]))
        #expect(delta.added.map(\.name) == ["new.txt"])
        #expect(delta.changed.map(\.name) == ["a.txt"])
        #expect(try indexer.index.record(at: tree.path("a.txt"))?.size == 6)

        // A changed path that no longer exists is removed.
        tree.delete("new.txt")
        delta = try await indexer.apply(WatchBatch(changes: [.changed(tree.path("new.txt"))]))
        #expect(delta.removed == [tree.path("new.txt")])

        // A new folder is scanned with its contents.
        tree.file("fresh/inner/x.md")
        delta = try await indexer.apply(WatchBatch(changes: [.changed(tree.path("fresh"))]))
        #expect(Set(delta.added.map(\.name)) == ["fresh", "inner", "x.md"])

        // A folder replaced by a file drops its former contents.
        tree.delete("fresh")
        tree.file("fresh", "now a file")
        delta = try await indexer.apply(WatchBatch(changes: [.changed(tree.path("fresh"))]))
        #expect(Set(delta.removed) == [tree.path("fresh/inner"), tree.path("fresh/inner/x.md")])
        #expect(try indexer.index.record(at: tree.path("fresh"))?.isDirectory == false)

        // Paths outside the roots are ignored.
        #expect(try await indexer.apply(WatchBatch(changes: [.changed("/elsewhere/file")])).isEmpty)
    }

    @Test("many written files are indexed in large transactions, in order with the other changes")
    func manyWrittenFilesInOneBatch() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("old.txt")
        tree.file("edited.txt", "1")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        let count = Indexer.filesPerTransactionForTests + 500
        var changes: [WatchChange] = []
        for number in 0..<count {
            tree.file("n\(number).txt", "\(number)")
            changes.append(.changed(tree.path("n\(number).txt")))
            if number == count / 2 {
                tree.delete("old.txt")
                changes.append(.removed(tree.path("old.txt")))
                tree.file("edited.txt", "edited")
                changes.append(.changed(tree.path("edited.txt")))
                tree.file("folder/inner.txt")
                changes.append(.changed(tree.path("folder")))
                changes.append(.changed(tree.path("vanished.txt")))  // not there: nothing to add
            }
        }
        let delta = try await indexer.apply(WatchBatch(changes: changes))
        #expect(delta.added.count == count + 2)  // the files, the folder and its file
        #expect(delta.removed == [tree.path("old.txt")])
        #expect(delta.changed.map(\.name) == ["edited.txt"])
        #expect(try indexer.index.record(at: tree.path("edited.txt"))?.size == 6)
        #expect(try indexer.index.record(at: tree.path("n\(count - 1).txt"))?.size == Int64("\(count - 1)".utf8.count))
        #expect(try paths(indexer, tree).count == count + 3)
        // the same batch again changes nothing (the quick-check)
        #expect(try await indexer.apply(WatchBatch(changes: changes.filter { if case .removed = $0 { false } else { true } })).isEmpty)
    }

    @Test func removedDropsTheSubtree() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("d/1")
        tree.file("d/e/2")
        tree.file("keep")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        tree.delete("d")
        let delta = try await indexer.apply(WatchBatch(changes: [.removed(tree.path("d"))]))
        #expect(Set(delta.removed) == Set(["d", "d/1", "d/e", "d/e/2"].map(tree.path)))
        #expect(try paths(indexer, tree) == ["keep"])
    }

    @Test func movedRenamesRowsOrIndexesTheNewcomer() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("d/1.txt")
        tree.file("d/e/2.txt")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        let before = try #require(try indexer.index.record(at: tree.path("d/e/2.txt")))

        #expect(rename(tree.path("d"), tree.path("moved")) == 0)
        var delta = try await indexer.apply(WatchBatch(changes: [.moved(from: tree.path("d"), to: tree.path("moved"))]))
        #expect(Set(delta.moved.map(\.from)) == Set(["d", "d/1.txt", "d/e", "d/e/2.txt"].map(tree.path)))
        #expect(try paths(indexer, tree) == ["moved", "moved/1.txt", "moved/e", "moved/e/2.txt"])
        #expect(try indexer.index.record(at: tree.path("moved/e/2.txt"))?.inode == before.inode)

        // A move from an unindexed path (say, an ignored temporary name) indexes the destination.
        tree.file("elsewhere-new.txt")
        delta = try await indexer.apply(WatchBatch(changes: [.moved(from: tree.path("x.tmp"), to: tree.path("elsewhere-new.txt"))]))
        #expect(delta.added.map(\.name) == ["elsewhere-new.txt"])

        // A move out of the roots is a removal.
        delta = try await indexer.apply(WatchBatch(changes: [.moved(from: tree.path("elsewhere-new.txt"), to: "/outside/x")]))
        #expect(delta.removed == [tree.path("elsewhere-new.txt")])
    }

    @Test func rescanRequestsReconcileSubtrees() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("d/1")
        tree.file("d/2")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        tree.delete("d/1")
        tree.file("d/3")
        tree.file("d/sub/4")
        let delta = try await indexer.apply(WatchBatch(rescans: [
            RescanRequest(path: tree.path("d"), reason: .newDirectory),
            RescanRequest(path: tree.path("d/sub"), reason: .newDirectory),
        ]))
        #expect(delta.removed == [tree.path("d/1")])
        #expect(Set(delta.added.map(\.name)) == ["3", "sub", "4"])
        #expect(try paths(indexer, tree) == ["d", "d/2", "d/3", "d/sub", "d/sub/4"])

        // An overflow marks the root pending until its rescan finishes.
        tree.file("after-overflow")
        let overflow = try await indexer.apply(WatchBatch(rescans: [RescanRequest(path: tree.root, reason: .overflow)]))
        #expect(overflow.added.map(\.name) == ["after-overflow"])
        #expect(try await indexer.status().roots.first?.rescanPending == false)

        // A watch-limit request on a subfolder leaves the message for the user.
        _ = try await indexer.apply(WatchBatch(rescans: [
            RescanRequest(path: tree.path("d"), reason: .watchLimit, message: "raise fs.inotify.max_user_watches"),
        ]))
        let root = try #require(try await indexer.status().roots.first)
        #expect(root.rescanPending && root.message == "raise fs.inotify.max_user_watches")
    }

    @Test func changesInsideARescannedSubtreeAreLeftToTheRescan() async throws {
        // the filter: changed/removed at or under a rescanned path go; moves and the rest stay
        let changes: [WatchChange] = [
            .changed("/r/new"), .changed("/r/new/a"), .removed("/r/new/sub/b"), .changed("/r/newer"),
            .moved(from: "/r/new/c", to: "/r/other/c"), .changed("/r/other/d"), .removed("/r/e"),
        ]
        let kept = Indexer.changes(changes, outside: Indexer.outermost([
            RescanRequest(path: "/r/new/", reason: .newDirectory), RescanRequest(path: "/r/new/sub", reason: .newDirectory),
        ]))
        #expect(kept == [.changed("/r/newer"), .moved(from: "/r/new/c", to: "/r/other/c"), .changed("/r/other/d"), .removed("/r/e")])
        #expect(Indexer.changes(changes, outside: [RescanRequest(path: "/", reason: .overflow)]) == [.moved(from: "/r/new/c", to: "/r/other/c")])
        #expect(Indexer.changes(changes, outside: []) == changes)

        // a new folder named by its events and by its rescan ends up indexed as it is on disk
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("keep.txt")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        tree.file("fresh/1")
        tree.file("fresh/2")
        tree.file("fresh/inner/3")
        tree.file("other.txt")
        let delta = try await indexer.apply(WatchBatch(changes: [
            .changed(tree.path("fresh")), .changed(tree.path("fresh/1")), .changed(tree.path("fresh/2")),
            .changed(tree.path("fresh/gone")), .changed(tree.path("other.txt")),
        ], rescans: [RescanRequest(path: tree.path("fresh"), reason: .newDirectory)]))
        #expect(Set(delta.added.map(\.name)) == ["fresh", "1", "2", "inner", "3", "other.txt"])
        #expect(try paths(indexer, tree) == ["fresh", "fresh/1", "fresh/2", "fresh/inner", "fresh/inner/3", "keep.txt", "other.txt"])
    }

    @Test func missingRootIsEmptiedAndMarkedPending() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        tree.file("a")
        let indexer = try makeIndexer()
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        tree.remove()
        let delta = try await indexer.rescan(tree.root)
        #expect(delta.removed == [tree.path("a")])
        #expect(try await indexer.status().roots.first?.rescanPending == true)
    }

    @Test func subscribersReceiveEveryDelta() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        let indexer = try makeIndexer()
        let first = indexer.index.changes()
        let second = indexer.index.changes()
        tree.file("a")
        _ = try await indexer.addRoot(tree.root, ignoring: .defaults)
        tree.file("b")
        _ = try await indexer.apply(WatchBatch(changes: [.changed(tree.path("b"))]))
        for stream in [first, second] {
            var names: [String] = []
            for await delta in stream {
                names += delta.added.map(\.name)
                if names.count == 2 { break }
            }
            #expect(names == ["a", "b"])
        }
    }

    /// The walk hands its batches to the writer thread and goes on; a write that fails stops the
    /// scan with its error, and what was written before stays.
    @Test func aScansWritesFollowItsWalkAndAFailedWriteStopsIt() throws {
        let writer = BackgroundThread(name: "test.writer", nice: 0)
        let writes = PipelinedWrites(writer: writer, steps: IndexJobSteps(keepsDeltas: true))
        let written = Mutex<[Int]>([])
        for batch in 0..<5 {
            try writes.submit {
                written.withLock { $0.append(batch) }
                return IndexDelta(added: [IndexRecord(path: "/r/\(batch)", size: 0, isDirectory: false, inode: 0, mtimeNanoseconds: 0, ctimeNanoseconds: 0)])
            }
        }
        let steps = try writes.finish()
        #expect(written.withLock { $0 } == [0, 1, 2, 3, 4] && steps.counts.added == 5)
        let failing = PipelinedWrites(writer: writer, steps: IndexJobSteps(keepsDeltas: false))
        try failing.submit { throw UbiquityError(.io, "disk full") }
        var thrown: (any Error)?
        do {
            for _ in 0..<10 { try failing.submit { IndexDelta() } }
            _ = try failing.finish()
        } catch {
            thrown = error
        }
        #expect((thrown as? UbiquityError)?.message == "disk full")
    }

    @Test func largeTreeRescanIsANoOp() async throws {
        let tree = ScanTestTree()
        defer { tree.remove() }
        for folder in 0..<40 {
            tree.folder("f\(folder)")
            for file in 0..<500 {
                let path = tree.path("f\(folder)/file-\(file).dat")
                let fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0o644)
                #expect(fd >= 0)
                close(fd)
            }
        }
        let indexer = try makeIndexer()
        let first = try await indexer.addRoot(tree.root, ignoring: .defaults)
        #expect(first.added.count == 20_040)
        let second = try await indexer.rescan(tree.root)
        #expect(second.isEmpty)
        #expect(try indexer.index.count(under: tree.root) == 20_040)
    }
}
