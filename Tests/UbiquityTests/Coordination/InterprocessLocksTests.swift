// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
@testable import Ubiquity

/// The byte-range locks of a claim of many items (the sync engine's new-file writer claims 500
/// targets at once): all taken, shared again by the same purpose, refused to another purpose
/// (another open file description: the kernel sees it as another process), and all released.
struct InterprocessLocksTests {
    @Test func aClaimOfManyItemsTakesAndReleasesEveryByte() throws {
        let folder = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-locks-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: folder) }
        let locks = InterprocessLocks(lockFile: folder.appendingPathComponent("coordination.locks").path)
        let items = (0..<2000).map { ItemLock(path: "/sync/d\($0 % 20)/file\($0)", mode: .write) }
        let soon = ContinuousClock.now + .milliseconds(50)

        try locks.acquire(items, purpose: "writer", deadline: ContinuousClock.now + .seconds(30))
        // nested: the same purpose shares what it holds
        try locks.acquire([items[7]], purpose: "writer", deadline: soon)
        locks.release([items[7]], purpose: "writer")
        // another purpose is refused one of them (after its bounded back-off), and a folder delete above them
        #expect(throws: (any Error).self) { try locks.acquire([items[1234]], purpose: "other", deadline: soon) }
        #expect(throws: (any Error).self) { try locks.acquire([ItemLock(path: "/sync/d3", mode: .subtreeWrite)], purpose: "other", deadline: soon) }
        // a write of an item not claimed goes ahead
        try locks.acquire([ItemLock(path: "/sync/d3/new", mode: .write)], purpose: "other", deadline: soon)
        locks.release([ItemLock(path: "/sync/d3/new", mode: .write)], purpose: "other")

        locks.release(items, purpose: "writer")
        try locks.acquire([items[1234], ItemLock(path: "/sync/d3", mode: .subtreeWrite)], purpose: "other", deadline: soon)
        locks.release([items[1234], ItemLock(path: "/sync/d3", mode: .subtreeWrite)], purpose: "other")
    }
}
