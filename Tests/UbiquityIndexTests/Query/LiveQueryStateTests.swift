import Foundation
import Testing
import UbiquityCore
@testable import UbiquityIndex
import UbiquityStore

/// The live result set, driven by synthetic deltas (no I/O).
@Suite("Live query state")
struct LiveQueryStateTests {
    static func record(_ path: String, size: Int64 = 10, directory: Bool = false) -> IndexRecord {
        let name = IndexRecord.lastComponent(of: path)
        return IndexRecord(path: path, name: name, size: size, creationDate: nil, contentChangeDate: Date(timeIntervalSince1970: 1_000),
                           contentType: ContentType.identifier(forFileName: name, isDirectory: directory), isDirectory: directory,
                           inode: 1, mtimeNanoseconds: 1, ctimeNanoseconds: 1)
    }

    func state(_ format: String, scopes: [String] = ["/root"], excluding: [String] = []) throws -> LiveQueryState {
        LiveQueryState(predicate: try QueryPredicate(format: format), scopes: scopes, excluding: excluding)
    }

    @Test("matching items are added, changed, and removed when they stop matching")
    func addChangeRemove() throws {
        var live = try state("kMDItemFSName LIKE '*.txt' AND kMDItemFSSize > 5")
        live.gather([Self.record("/root/a.txt")])
        var update = live.apply(IndexDelta(added: [Self.record("/root/b.txt"), Self.record("/root/c.md")]))
        #expect(update.added.map(\.path) == ["/root/b.txt"])
        update = live.apply(IndexDelta(changed: [Self.record("/root/a.txt", size: 50)]))
        #expect(update.changed.map(\.path) == ["/root/a.txt"])
        update = live.apply(IndexDelta(changed: [Self.record("/root/a.txt", size: 1)]))
        #expect(update.removed.map(\.path) == ["/root/a.txt"])
        update = live.apply(IndexDelta(removed: ["/root/b.txt", "/root/never.txt"]))
        #expect(update.removed.map(\.path) == ["/root/b.txt"])
        #expect(live.matches.isEmpty)
    }

    @Test("a rename is removed under the old path and added under the new one")
    func rename() throws {
        var live = try state("kMDItemFSName ENDSWITH '.txt'")
        live.gather([Self.record("/root/a.txt")])
        let update = live.apply(IndexDelta(moved: [MovedRecord(from: "/root/a.txt", record: Self.record("/root/b.txt"))]))
        #expect(update.removed.map(\.path) == ["/root/a.txt"])
        #expect(update.added.map(\.path) == ["/root/b.txt"])
        let away = live.apply(IndexDelta(moved: [MovedRecord(from: "/root/b.txt", record: Self.record("/root/b.md"))]))
        #expect(away.removed.map(\.path) == ["/root/b.txt"] && away.added.isEmpty)
    }

    @Test("scopes: inside only, never the scope itself, never an excluded folder")
    func scopes() throws {
        let live = try state("TRUEPREDICATE", scopes: ["/root/c"], excluding: ["/root/c/Documents"])
        #expect(live.isInScope("/root/c/a"))
        #expect(live.isInScope("/root/c/x/y"))
        #expect(!live.isInScope("/root/c"))
        #expect(!live.isInScope("/root/cc/a"))
        #expect(!live.isInScope("/root/c/Documents"))
        #expect(!live.isInScope("/root/c/Documents/a.txt"))
        #expect(live.isInScope("/root/c/Documents2/a.txt"))
        let everything = try state("TRUEPREDICATE", scopes: [])
        #expect(everything.isInScope("/anything"))
    }

    @Test("merging updates keeps one entry per path, the latest state winning")
    func merge() {
        var update = QueryUpdate(added: [Self.record("/root/a")])
        update.merge(QueryUpdate(changed: [Self.record("/root/a", size: 99)]))
        #expect(update.added.map(\.size) == [99] && update.changed.isEmpty)
        update.merge(QueryUpdate(removed: [Self.record("/root/a")]))
        #expect(update.isEmpty)
        update.merge(QueryUpdate(removed: [Self.record("/root/b")]))
        update.merge(QueryUpdate(added: [Self.record("/root/b")]))
        #expect(update.changed.map(\.path) == ["/root/b"] && update.removed.isEmpty && update.added.isEmpty)
    }
}
