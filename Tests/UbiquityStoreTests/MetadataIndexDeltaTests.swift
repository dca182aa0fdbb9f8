import Testing
@testable import UbiquityStore

@Suite struct MetadataIndexDeltaTests {
    typealias S = MetadataIndexTestSupport

    @Test func addedThenRemovedCancels() {
        var delta = IndexDelta(added: [S.file("/r/a")])
        delta.merge(IndexDelta(removed: ["/r/a"]))
        #expect(delta.isEmpty)
    }

    @Test func removedThenAddedBecomesChanged() {
        var delta = IndexDelta(removed: ["/r/a"])
        delta.merge(IndexDelta(added: [S.file("/r/a", size: 3)]))
        #expect(delta.removed.isEmpty && delta.added.isEmpty)
        #expect(delta.changed.map(\.size) == [3])
    }

    @Test func movedThenChangedKeepsTheMove() {
        var delta = IndexDelta(moved: [MovedRecord(from: "/r/a", record: S.file("/r/b"))])
        delta.merge(IndexDelta(changed: [S.file("/r/b", size: 9)]))
        #expect(delta.moved.map(\.from) == ["/r/a"])
        #expect(delta.moved.map(\.record.size) == [9])
        #expect(delta.changed.isEmpty)
    }

    @Test func addedThenMovedIsAddedAtTheNewPath() {
        var delta = IndexDelta(added: [S.file("/r/a")])
        delta.merge(IndexDelta(moved: [MovedRecord(from: "/r/a", record: S.file("/r/b"))]))
        #expect(delta.added.map(\.path) == ["/r/b"])
        #expect(delta.moved.isEmpty)
    }

    @Test func independentPartsConcatenate() {
        var delta = IndexDelta(added: [S.file("/r/a")], removed: ["/r/x"])
        delta.merge(IndexDelta(added: [S.file("/r/b")], changed: [S.file("/r/c")], removed: ["/r/y"]))
        #expect(delta.added.map(\.path) == ["/r/a", "/r/b"])
        #expect(delta.changed.map(\.path) == ["/r/c"])
        #expect(delta.removed == ["/r/x", "/r/y"])
        #expect(delta.count == 5)
    }
}

@Suite struct MetadataIndexDeltaMergingTests {
    typealias S = MetadataIndexTestSupport

    @Test func mergingManyAgreesWithPairwiseMerge() {
        let steps = [
            IndexDelta(added: [S.file("/r/a"), S.file("/r/b")]),
            IndexDelta(changed: [S.file("/r/a", size: 2)], removed: ["/r/old"]),
            IndexDelta(moved: [MovedRecord(from: "/r/b", record: S.file("/r/c"))]),
            IndexDelta(removed: ["/r/a"]),
        ]
        var pairwise = IndexDelta()
        for step in steps { pairwise.merge(step) }
        let merged = IndexDelta.merging(steps)
        #expect(merged == pairwise)
        #expect(merged.added.map(\.path) == ["/r/c"])
        #expect(merged.removed == ["/r/old"])
    }

    @Test func fastPathConcatenatesDistinctAdditions() {
        let steps = (0..<3).map { batch in IndexDelta(added: (0..<4).map { S.file("/r/\(batch)-\($0)") }) }
        #expect(IndexDelta.merging(steps).added.count == 12)
        let repeated = [IndexDelta(added: [S.file("/r/x")]), IndexDelta(changed: [S.file("/r/x", size: 5)])]
        #expect(IndexDelta.merging(repeated) == IndexDelta(added: [S.file("/r/x", size: 5)]))
    }
}
