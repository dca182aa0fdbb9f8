// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import Ubiquity

struct ArbiterStateTests {
    func claim(_ id: UInt64, _ purpose: String, _ locks: (String, ItemLock.Mode)...) -> ArbiterState.Claim {
        ArbiterState.Claim(id: id, purpose: purpose, locks: locks.map { ItemLock(path: $0.0, mode: $0.1) })
    }

    @Test("readers share, writers exclude, release grants the next in order")
    func readersShareWritersExclude() {
        var arbiter = ArbiterState()
        #expect(arbiter.request(claim(1, "a", ("/f", .read))) == [1])
        #expect(arbiter.request(claim(2, "b", ("/f", .read))) == [2])
        #expect(arbiter.request(claim(3, "c", ("/f", .write))) == [])
        // A reader queued behind a waiting writer waits too (writers do not starve).
        #expect(arbiter.request(claim(4, "d", ("/f", .read))) == [])
        #expect(arbiter.remove(1) == [])
        #expect(arbiter.remove(2) == [3])
        #expect(arbiter.remove(3) == [4])
    }

    @Test("a plain folder write does not touch its children; delete, move and replace cover the subtree")
    func folderRules() {
        var arbiter = ArbiterState()
        #expect(arbiter.request(claim(1, "a", ("/d/x", .write))) == [1])
        #expect(arbiter.request(claim(2, "b", ("/d", .write))) == [2])
        #expect(arbiter.request(claim(3, "c", ("/d", .read))) == [])  // waits for the folder write
        #expect(arbiter.request(claim(4, "d", ("/d", .subtreeWrite))) == [])
        #expect(arbiter.remove(2) == [3])
        #expect(arbiter.remove(3) == [])  // the subtree write still waits for /d/x
        #expect(arbiter.remove(1) == [4])
        #expect(arbiter.request(claim(5, "e", ("/d/y/z", .read))) == [])  // inside a folder being deleted
        #expect(arbiter.request(claim(6, "f", ("/dx", .write))) == [6])  // a sibling with a common prefix is unrelated
        #expect(arbiter.remove(4) == [5])
    }

    @Test("same purpose never conflicts; uploading reads cover the subtree against writers only")
    func purposesAndSubtreeReads() {
        var arbiter = ArbiterState()
        #expect(arbiter.request(claim(1, "p", ("/f", .write))) == [1])
        #expect(arbiter.request(claim(2, "p", ("/f", .write))) == [2])
        #expect(arbiter.request(claim(3, "q", ("/d", .subtreeRead))) == [3])
        #expect(arbiter.request(claim(4, "r", ("/d/a", .read))) == [4])
        #expect(arbiter.request(claim(5, "s", ("/d/a", .write))) == [])
        #expect(arbiter.remove(3) == [])
        #expect(arbiter.remove(4) == [5])
    }

    @Test("a presenter saving for a reader goes ahead of the queue and of that reader")
    func presenterSavePriority() {
        var arbiter = ArbiterState()
        #expect(arbiter.request(claim(1, "reader", ("/f", .read))) == [1])
        #expect(arbiter.request(claim(2, "writer", ("/f", .write))) == [])
        #expect(arbiter.setMessaging(1, purposes: ["doc"]) == [])
        // The document's save (purpose "doc") conflicts with the reader and the queued writer, yet runs.
        #expect(arbiter.request(claim(3, "doc", ("/f", .write))) == [3])
        #expect(arbiter.remove(3) == [])
        #expect(arbiter.setMessaging(1, purposes: []) == [])
        #expect(arbiter.remove(1) == [2])
    }

    @Test("withdrawing a waiting claim lets the ones behind it go")
    func withdrawWaiting() {
        var arbiter = ArbiterState()
        #expect(arbiter.request(claim(1, "a", ("/f", .read))) == [1])
        #expect(arbiter.request(claim(2, "b", ("/f", .write))) == [])
        #expect(arbiter.request(claim(3, "c", ("/f", .read))) == [])
        #expect(arbiter.remove(2) == [3])
        #expect(arbiter.waiting.isEmpty)
    }

    @Test("inter-process lock bytes: folder deletes conflict with child access, plain folder writes do not")
    func interprocessLockBytes() {
        func conflict(_ a: [(Int64, Bool)], _ b: [(Int64, Bool)]) -> Bool {
            a.contains { x in b.contains { y in x.0 == y.0 && (x.1 || y.1) } }
        }
        let child = InterprocessLocks.requests(for: [ItemLock(path: "/d/x", mode: .write)]).map { ($0.offset, $0.exclusive) }
        let folderWrite = InterprocessLocks.requests(for: [ItemLock(path: "/d", mode: .write)]).map { ($0.offset, $0.exclusive) }
        let folderDelete = InterprocessLocks.requests(for: [ItemLock(path: "/d", mode: .subtreeWrite)]).map { ($0.offset, $0.exclusive) }
        let childRead = InterprocessLocks.requests(for: [ItemLock(path: "/d/x", mode: .read)]).map { ($0.offset, $0.exclusive) }
        let upload = InterprocessLocks.requests(for: [ItemLock(path: "/d", mode: .subtreeRead)]).map { ($0.offset, $0.exclusive) }
        #expect(!conflict(child, folderWrite))
        #expect(conflict(child, folderDelete))
        #expect(conflict(childRead, folderDelete))
        #expect(conflict(child, upload))
        #expect(!conflict(childRead, upload))
        #expect(!conflict(childRead, childRead))
        #expect(conflict(child, child))
    }
}
