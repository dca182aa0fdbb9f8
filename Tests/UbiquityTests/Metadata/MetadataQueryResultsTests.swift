// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityIndex
import UbiquityStore
@testable import Ubiquity

/// A query's results under live updates: the same results as applying each update to a plain
/// array, snapshots that do not move when later updates come, sorting and packing done when the
/// results are read (the burst benchmark: 100,000 new files and 10,000 renames, each update in
/// time proportional to itself, not to the results).
@Suite struct MetadataQueryResultsTests {
    static func record(_ path: String, size: Int64 = 1) -> IndexRecord {
        IndexRecord(path: path, size: size, isDirectory: false, inode: 1, mtimeNanoseconds: 1, ctimeNanoseconds: 1)
    }

    @Test func updatesGiveWhatAPlainListGives() {
        var results = MetadataQueryResults()
        var model: [IndexRecord] = []
        var generator = SystemRandomNumberGenerator()
        var next = 0
        for round in 0..<300 {
            var update = QueryUpdate()
            for _ in 0..<Int.random(in: 0...40, using: &generator) {
                update.added.append(Self.record("/r/f\(next)"))
                next += 1
            }
            let present = model.map(\.path)
            for path in present.shuffled(using: &generator).prefix(Int.random(in: 0...15, using: &generator)) {
                update.removed.append(Self.record(path))
            }
            for path in present.shuffled(using: &generator).prefix(3) where !update.removed.contains(where: { $0.path == path }) {
                update.changed.append(Self.record(path, size: Int64(round)))
            }
            results.apply(update)
            let gone = Set(update.removed.map(\.path))
            model.removeAll { gone.contains($0.path) }
            for record in update.changed { if let index = model.firstIndex(where: { $0.path == record.path }) { model[index] = record } }
            model += update.added
            #expect(results.count == model.count)
            if round % 25 == 0 { #expect(results.ordered().map(\.record) == model) }
        }
        #expect(results.ordered().map(\.record) == model)
        for (position, record) in model.enumerated().shuffled().prefix(20) { #expect(results.position(of: record.path) == position) }
        #expect(results.position(of: "/r/nowhere") == nil)
    }

    @Test func aSnapshotKeepsTheResultsOfItsMoment() {
        var results = MetadataQueryResults()
        results.apply(QueryUpdate(added: (0..<3000).map { Self.record("/r/\($0)") }))
        let before = results.frozen
        results.apply(QueryUpdate(added: [Self.record("/r/new")], removed: (0..<2000).map { Self.record("/r/\($0)") }))
        #expect(before.items.count == 3000 && before.items.first?.record.path == "/r/0")
        #expect(results.frozen.items.map(\.record.path) == (2000..<3000).map { "/r/\($0)" } + ["/r/new"])
    }

    @Test func sortedResultsAreSortedWhenRead() throws {
        var results = MetadataQueryResults()
        results.sortKeys = [(try #require(MetadataAttribute(name: "kMDItemFSSize")), false)]
        results.apply(QueryUpdate(added: [Self.record("/r/a", size: 1), Self.record("/r/b", size: 3), Self.record("/r/c", size: 2)]))
        #expect(results.ordered().map(\.record.path) == ["/r/b", "/r/c", "/r/a"])
        results.apply(QueryUpdate(changed: [Self.record("/r/a", size: 9)]))
        #expect(results.frozen.items.map(\.record.path) == ["/r/a", "/r/b", "/r/c"])
        #expect(results.position(of: "/r/c") == 2)
    }
}
