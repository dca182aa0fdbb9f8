import Testing
import UbiquityCore
@testable import UbiquityIndex

/// The batching state machine, fed with synthetic events and clock values (no I/O).
@Suite struct WatchCoalescerTests {
    static let root = "/r"
    static let ms: UInt64 = 1_000_000

    func coalescer(rules: IgnoreRules = .defaults) -> WatchCoalescer {
        var coalescer = WatchCoalescer(settle: .milliseconds(20), maximumLatency: .milliseconds(200))
        coalescer.addRoot(Self.root, rules: rules)
        return coalescer
    }

    /// Feeds `events` at time 0 and flushes once settled.
    func run(_ events: [WatchEvent], existing: Set<String> = [], rules: IgnoreRules = .defaults) -> WatchBatch? {
        var coalescer = coalescer(rules: rules)
        for event in events { coalescer.ingest(event, at: 0) }
        #expect(coalescer.flush(at: 19 * Self.ms, exists: { existing.contains($0) }) == nil)
        return coalescer.flush(at: 20 * Self.ms, exists: { existing.contains($0) })
    }

    @Test func burstOnOnePathIsOneChange() {
        let batch = run([.init(.created, "/r/a"), .init(.modified, "/r/a"), .init(.modified, "/r/a"), .init(.modified, "/r/a")])
        #expect(batch?.changes == [.changed("/r/a")])
    }

    @Test func anIgnoreRuleForFoldersStillAppliesWhenTheKindAtAPathChanges() {
        // the rules are asked once per pending path and kind: a folder at a file's pending path is asked again
        let rules = IgnoreRules(patterns: IgnoreRules.defaultPatterns + ["build/"])
        let batch = run([
            .init(.created, "/r/build"), .init(.modified, "/r/build"), .init(.deleted, "/r/build"),
            .init(.created, "/r/build", isDirectory: true), .init(.modified, "/r/build", isDirectory: true),
        ], rules: rules)
        #expect(batch?.changes == [.removed("/r/build")])
        // and an ignored name stays ignored however many events it gets
        #expect(run([.init(.created, "/r/x.swp"), .init(.modified, "/r/x.swp"), .init(.closedAfterWriting, "/r/x.swp")]) == nil)
    }

    @Test func lastEventDecides() {
        #expect(run([.init(.created, "/r/a"), .init(.deleted, "/r/a")])?.changes == [.removed("/r/a")])
        #expect(run([.init(.deleted, "/r/a"), .init(.created, "/r/a")])?.changes == [.changed("/r/a")])
    }

    @Test func outputOrderIsMovesRemovalsChanges() {
        let batch = run([
            .init(.modified, "/r/c"), .init(.deleted, "/r/d"),
            .init(.movedFrom(cookie: 7), "/r/x"), .init(.movedTo(cookie: 7), "/r/y"),
        ])
        #expect(batch?.changes == [.moved(from: "/r/x", to: "/r/y"), .removed("/r/d"), .changed("/r/c")])
    }

    @Test func pairedMoveIsOneMove() {
        let batch = run([.init(.movedFrom(cookie: 1), "/r/a"), .init(.movedTo(cookie: 1), "/r/b")])
        #expect(batch?.changes == [.moved(from: "/r/a", to: "/r/b")])
    }

    @Test func unpairedMovesAreRemovalAndChange() {
        #expect(run([.init(.movedFrom(cookie: 1), "/r/a")])?.changes == [.removed("/r/a")])
        #expect(run([.init(.movedTo(cookie: 2), "/r/b")])?.changes == [.changed("/r/b")])
    }

    @Test func chainedMovesCollapse() {
        let batch = run([
            .init(.movedFrom(cookie: 1), "/r/a"), .init(.movedTo(cookie: 1), "/r/b"),
            .init(.movedFrom(cookie: 2), "/r/b"), .init(.movedTo(cookie: 2), "/r/c"),
        ])
        #expect(batch?.changes == [.moved(from: "/r/a", to: "/r/c")])
        let back = run([
            .init(.movedFrom(cookie: 1), "/r/a"), .init(.movedTo(cookie: 1), "/r/b"),
            .init(.movedFrom(cookie: 2), "/r/b"), .init(.movedTo(cookie: 2), "/r/a"),
        ])
        #expect(back == nil)
    }

    @Test func changeBeforeFolderMoveFollowsTheFolder() {
        let batch = run([
            .init(.modified, "/r/d/f"),
            .init(.movedFrom(cookie: 3), "/r/d", isDirectory: true), .init(.movedTo(cookie: 3), "/r/e", isDirectory: true),
            .init(.modified, "/r/e/g"),
        ])
        #expect(batch?.changes == [.moved(from: "/r/d", to: "/r/e"), .changed("/r/e/f"), .changed("/r/e/g")])
    }

    @Test func vimSave() {
        let batch = run([
            .init(.created, "/r/4913"), .init(.modified, "/r/4913"), .init(.deleted, "/r/4913"),
            .init(.created, "/r/.doc.txt.swp"), .init(.modified, "/r/.doc.txt.swp"),
            .init(.movedFrom(cookie: 9), "/r/doc.txt"), .init(.movedTo(cookie: 9), "/r/doc.txt~"),
            .init(.created, "/r/doc.txt"), .init(.modified, "/r/doc.txt"), .init(.modified, "/r/doc.txt"),
            .init(.modified, "/r/doc.txt"), .init(.deleted, "/r/doc.txt~"), .init(.deleted, "/r/.doc.txt.swp"),
        ], existing: ["/r/doc.txt"])
        #expect(batch?.changes == [.changed("/r/doc.txt")])
    }

    @Test func renameToBackupWithoutNewFileIsRemoval() {
        let batch = run([.init(.movedFrom(cookie: 9), "/r/doc.txt"), .init(.movedTo(cookie: 9), "/r/doc.txt~")])
        #expect(batch?.changes == [.removed("/r/doc.txt")])
    }

    @Test func temporaryThenRename() {
        let batch = run([
            .init(.created, "/r/.ubiq-tmp-doc-1"), .init(.modified, "/r/.ubiq-tmp-doc-1"),
            .init(.movedFrom(cookie: 4), "/r/.ubiq-tmp-doc-1"), .init(.movedTo(cookie: 4), "/r/doc.txt"),
        ])
        #expect(batch?.changes == [.changed("/r/doc.txt")])
    }

    @Test func temporaryWithOrdinaryNameThenRename() {
        let batch = run([
            .init(.created, "/r/doc.txt.new"), .init(.modified, "/r/doc.txt.new"),
            .init(.movedFrom(cookie: 4), "/r/doc.txt.new"), .init(.movedTo(cookie: 4), "/r/doc.txt"),
        ])
        #expect(batch?.changes == [.changed("/r/doc.txt")])
    }

    @Test func emacsSave() {
        let batch = run([
            .init(.created, "/r/.#doc.txt"), .init(.created, "/r/#doc.txt#"), .init(.modified, "/r/#doc.txt#"),
            .init(.movedFrom(cookie: 5), "/r/doc.txt"), .init(.movedTo(cookie: 5), "/r/doc.txt~"),
            .init(.created, "/r/doc.txt"), .init(.modified, "/r/doc.txt"),
            .init(.deleted, "/r/#doc.txt#"), .init(.deleted, "/r/.#doc.txt"),
        ], existing: ["/r/doc.txt"])
        #expect(batch?.changes == [.changed("/r/doc.txt")])
    }

    @Test func renameToOrdinaryBackupThenRewrite() {
        let batch = run([
            .init(.movedFrom(cookie: 6), "/r/doc.txt"), .init(.movedTo(cookie: 6), "/r/doc.bak"),
            .init(.created, "/r/doc.txt"), .init(.modified, "/r/doc.txt"),
        ])
        #expect(batch?.changes == [.moved(from: "/r/doc.txt", to: "/r/doc.bak"), .changed("/r/doc.txt")])
    }

    @Test func ignoredNamesAndCookiesNeverAppear() {
        let rules = IgnoreRules(patterns: ["*.log"])
        let batch = run([
            .init(.created, "/r/a.log"), .init(.created, "/r/.ubiquity-cookie-1"), .init(.created, "/r/b.txt"),
        ], rules: rules)
        #expect(batch?.changes == [.changed("/r/b.txt")])
    }

    @Test func removedFolderCoversItsContents() {
        let batch = run([
            .init(.deleted, "/r/d/a"), .init(.deleted, "/r/d/b"), .init(.deleted, "/r/d", isDirectory: true),
        ])
        #expect(batch?.changes == [.removed("/r/d")])
    }

    @Test func continuousStreamIsDeliveredAtMaximumLatency() {
        var coalescer = coalescer()
        var delivered: [WatchBatch] = []
        for step in 0..<30 {
            let now = UInt64(step) * 10 * Self.ms
            coalescer.ingest(.init(.modified, "/r/f\(step)"), at: now)
            if let batch = coalescer.flush(at: now, exists: { _ in true }) { delivered.append(batch) }
        }
        #expect(delivered.count == 1)
        #expect(delivered.first?.changes.count == 21)
        #expect(coalescer.deadline == 290 * Self.ms + 20 * Self.ms)
    }

    @Test func latencyFlushKeepsAMoveWaitingForItsPair() {
        var coalescer = coalescer()
        coalescer.ingest(.init(.modified, "/r/x"), at: 0)
        coalescer.ingest(.init(.modified, "/r/x"), at: 195 * Self.ms)
        coalescer.ingest(.init(.movedFrom(cookie: 8), "/r/a"), at: 199 * Self.ms)
        let first = coalescer.flush(at: 200 * Self.ms, exists: { _ in true })
        #expect(first?.changes == [.changed("/r/x")])
        coalescer.ingest(.init(.movedTo(cookie: 8), "/r/b"), at: 201 * Self.ms)
        let second = coalescer.flush(at: 230 * Self.ms, exists: { _ in true })
        #expect(second?.changes == [.moved(from: "/r/a", to: "/r/b")])
    }

    @Test func rescansAreBatchedAndFollowFolderMoves() {
        var coalescer = coalescer()
        coalescer.ingest(.init(.created, "/r/n", isDirectory: true), at: 0)
        coalescer.request(RescanRequest(path: "/r/n", reason: .newDirectory), at: 0)
        coalescer.request(RescanRequest(path: "/r/n", reason: .newDirectory), at: 0)
        coalescer.ingest(.init(.movedFrom(cookie: 2), "/r/n", isDirectory: true), at: 0)
        coalescer.ingest(.init(.movedTo(cookie: 2), "/r/m", isDirectory: true), at: 0)
        let batch = coalescer.flush(at: 0, force: true, exists: { _ in true })
        #expect(batch?.changes == [.changed("/r/m")])
        #expect(batch?.rescans == [RescanRequest(path: "/r/m", reason: .newDirectory)])
    }

    @Test func overflowRequestIsDelivered() {
        var coalescer = coalescer()
        let request = RescanRequest(path: "/r", reason: .overflow, message: WatchMessages.overflow(root: "/r"))
        coalescer.request(request, at: 0)
        let batch = coalescer.flush(at: 20 * Self.ms, exists: { _ in true })
        #expect(batch?.rescans == [request])
        #expect(request.message?.contains("fs.inotify.max_queued_events") == true)
        #expect(request.message?.contains("sysctl -w") == true)
    }

    @Test func eventsOutsideRootsAreDropped() {
        #expect(run([.init(.created, "/elsewhere/a"), .init(.created, "/r")]) == nil)
    }

    @Test func completedWritesNeedOnlyTheQuickSettle() {
        var coalescer = WatchCoalescer(settle: .milliseconds(20), maximumLatency: .milliseconds(200), quickSettle: .milliseconds(2))
        coalescer.addRoot(Self.root, rules: .defaults)
        coalescer.ingest(.init(.created, "/r/a"), at: 0)
        coalescer.ingest(.init(.modified, "/r/a"), at: 0)
        #expect(coalescer.flush(at: 2 * Self.ms, exists: { _ in true }) == nil, "an unfinished write waits for the full settle")
        coalescer.ingest(.init(.closedAfterWriting, "/r/a"), at: 3 * Self.ms)
        #expect(coalescer.flush(at: 4 * Self.ms, exists: { _ in true }) == nil)
        #expect(coalescer.flush(at: 5 * Self.ms, exists: { _ in true })?.changes == [.changed("/r/a")])
    }

    @Test func aSavePatternInProgressWaitsForTheFullSettle() {
        var coalescer = WatchCoalescer(settle: .milliseconds(20), maximumLatency: .milliseconds(200), quickSettle: .milliseconds(2))
        coalescer.addRoot(Self.root, rules: .defaults)
        // vim: the document is renamed to its backup (nothing complete yet: the full settle applies)…
        coalescer.ingest(.init(.movedFrom(cookie: 3), "/r/doc"), at: 0)
        coalescer.ingest(.init(.movedTo(cookie: 3), "/r/doc~"), at: 0)
        #expect(coalescer.flush(at: 5 * Self.ms, exists: { _ in false }) == nil)
        // …then written anew and closed: one completed change of the document.
        coalescer.ingest(.init(.created, "/r/doc"), at: 6 * Self.ms)
        coalescer.ingest(.init(.closedAfterWriting, "/r/doc"), at: 6 * Self.ms)
        coalescer.ingest(.init(.deleted, "/r/doc~"), at: 6 * Self.ms)
        #expect(coalescer.flush(at: 8 * Self.ms, exists: { $0 == "/r/doc" })?.changes == [.changed("/r/doc")])
    }

    @Test("the quick settle follows every path's state as it changes (many files, then a folder, then its removal)")
    func quickSettleCountsStatesAsTheyChange() {
        var coalescer = WatchCoalescer(settle: .milliseconds(20), maximumLatency: .milliseconds(200), quickSettle: .milliseconds(2))
        coalescer.addRoot(Self.root, rules: .defaults)
        for number in 0..<1000 {
            coalescer.ingest(.init(.created, "/r/f\(number)"), at: 0)
            coalescer.ingest(.init(.modified, "/r/f\(number)"), at: 0)
        }
        #expect(coalescer.deadline == 20 * Self.ms, "unfinished writes wait for the full settle")
        for number in 0..<999 { coalescer.ingest(.init(.closedAfterWriting, "/r/f\(number)"), at: 0) }
        #expect(coalescer.deadline == 20 * Self.ms, "one write is still open")
        coalescer.ingest(.init(.closedAfterWriting, "/r/f999"), at: 0)
        #expect(coalescer.deadline == 2 * Self.ms, "every write completed")
        coalescer.ingest(.init(.created, "/r/d", isDirectory: true), at: 0)
        #expect(coalescer.deadline == 20 * Self.ms, "a new folder")
        coalescer.ingest(.init(.deleted, "/r/d", isDirectory: true), at: 0)
        #expect(coalescer.deadline == 20 * Self.ms, "a removal")
        // the folder is replaced (its state goes with it) by a completed file of that name
        coalescer.ingest(.init(.movedTo(cookie: 9), "/r/d"), at: 0)
        coalescer.ingest(.init(.closedAfterWriting, "/r/d"), at: 0)
        #expect(coalescer.deadline == 2 * Self.ms)
        #expect(coalescer.flush(at: 2 * Self.ms, exists: { _ in true })?.changes.count == 1001)
        #expect(coalescer.deadline == nil)
        // after a flush the count starts again
        coalescer.ingest(.init(.created, "/r/g"), at: 10 * Self.ms)
        #expect(coalescer.deadline == 30 * Self.ms)
        coalescer.ingest(.init(.closedAfterWriting, "/r/g"), at: 10 * Self.ms)
        #expect(coalescer.deadline == 12 * Self.ms)
    }
}
