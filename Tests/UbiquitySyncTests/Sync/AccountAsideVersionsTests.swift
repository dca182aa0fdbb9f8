// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import Ubiquity
@testable import UbiquitySync

/// A switch of account keeps the folder's documents aside (``AccountSync/moveAside(_:to:)``),
/// and their versions with them: an item an editor saved by renaming a new file over it has lost
/// its identity attribute, and only the version store's path index leads to its versions. Found
/// by the sync simulator (seeds 186 and 309: a conflict version kept on one device only was out
/// of reach in the kept-aside folder, and stayed tied to a path of the new account's folder).
@Suite struct AccountAsideVersionsTests {
    typealias Harness = SyncBatchTests.Harness

    static func text(_ string: String) -> Data { Data(string.utf8) }

    /// Device A with `m/a.txt` in conflict: B's edit took the name, A's is a conflict version.
    static func conflicted(_ harness: Harness) async throws -> SyncBatchTests.Device {
        let a = try await harness.device("A"), b = try await harness.device("B")
        try a.write("m/a.txt", text("v1"))
        try await a.engine.pass()
        try await b.engine.pass()
        try a.write("m/a.txt", text("A's edit"))
        try b.write("m/a.txt", text("B's edit"))
        try await b.engine.pass()
        try await a.engine.pass()
        return a
    }

    @Test func aVersionFoundOnlyByItsPathGoesAsideWithTheFolder() async throws {
        try await Harness.with { harness in
            let a = try await Self.conflicted(harness)
            let versions = { (url: URL) in (FileVersion.otherVersionsOfItem(at: url) ?? []).compactMap { FileManager.default.contents(atPath: $0.url.path) } }
            #expect(versions(a.folder.appendingPathComponent("m/a.txt")).contains(Self.text("A's edit")))
            // an editor's save: a new file renamed over it, without the identity attribute
            try a.write("m/.a.txt.saving", Self.text("saved"))
            #expect(rename(a.folder.path + "/m/.a.txt.saving", a.folder.path + "/m/a.txt") == 0)
            await a.engine.stopAndRelease()
            let aside = AccountSync.asideFolder(for: a.folder.path, user: "mei", host: "test")
            try AccountSync.moveAside(a.folder.path, to: aside)
            #expect(versions(URL(fileURLWithPath: aside + "/m/a.txt")).contains(Self.text("A's edit")), "the version went aside with its file")
            try a.write("m/a.txt", Self.text("the new account's"))
            #expect(versions(a.folder.appendingPathComponent("m/a.txt")).isEmpty, "nothing of the old account's is tied to the new one's file")
        }
    }

    /// Renamed, then saved by an editor, no pass before the switch: nothing on the disk leads to
    /// the conflict version any more, which the old account's next pass would have kept as a
    /// conflicted copy; the switch keeps it as one in the folder kept aside (seed 1086).
    @Test func aConflictVersionNothingLeadsToIsKeptAsAFileAside() async throws {
        try await Harness.with { harness in
            let a = try await Self.conflicted(harness)
            #expect(rename(a.folder.path + "/m/a.txt", a.folder.path + "/m/b.txt") == 0)
            try a.write("m/.b.txt.saving", Self.text("saved"))
            #expect(rename(a.folder.path + "/m/.b.txt.saving", a.folder.path + "/m/b.txt") == 0)
            await a.engine.stopAndRelease()
            let aside = AccountSync.asideFolder(for: a.folder.path, user: "mei", host: "test")
            try AccountSync.moveAside(a.folder.path, to: aside)
            let files = try FileManager.default.contentsOfDirectory(atPath: aside + "/m").sorted()
            let copies = files.filter { $0.hasPrefix("a (conflicted copy ") }
            #expect(copies.count == 1, "\(files)")
            #expect(copies.first.flatMap { FileManager.default.contents(atPath: aside + "/m/" + $0) } == Self.text("A's edit"))
            #expect(FileManager.default.contents(atPath: aside + "/m/b.txt") == Self.text("saved"))
        }
    }
}
