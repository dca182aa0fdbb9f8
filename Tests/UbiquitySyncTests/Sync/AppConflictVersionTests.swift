// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// Conflict versions an app keeps by itself (a `Document` with unsaved edits meeting a change
/// from elsewhere: `FileVersion.addConflictVersion` in the app's process) are shared like sync's
/// own (issue 6): the daemon hears of the version (its coordination socket's `gained` event,
/// `versionSettled(at:)`) or finds it in the version store at its first pass, publishes it, the
/// other device shows it, and resolving it there settles it here. Engine-level, two devices
/// against a real `RecordsServer` (``SyncBatchTests/Harness``); nothing is timed.
@Suite(.serialized) struct AppConflictVersionTests {
    typealias Harness = SyncBatchTests.Harness

    static func unresolved(_ device: SyncBatchTests.Device, _ relative: String) -> [FileVersion] {
        FileVersion.unresolvedConflictVersionsOfItem(at: device.folder.appendingPathComponent(relative)) ?? []
    }

    /// What an app's `Document` does: its unsaved content becomes a conflict version of the item.
    static func keepAsApp(_ item: URL, _ text: String, app: String) throws -> FileVersion {
        let copy = FileManager.default.temporaryDirectory.appendingPathComponent("app-version-" + UUID().uuidString)
        try Data(text.utf8).write(to: copy)
        defer { try? FileManager.default.removeItem(at: copy) }
        return try FileVersion.addConflictVersion(ofItemAt: item, withContentsOf: copy, savingComputerName: app)
    }

    @Test func aConflictVersionKeptByAnAppIsSharedAndResolvesEverywhere() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            var b: SyncBatchTests.Device? = try await harness.device("b")
            try a.write("doc.txt", Data("base".utf8))
            try await a.engine.pass()
            try await b!.engine.pass()
            #expect(b!.read("doc.txt") == Data("base".utf8))

            // an app on B keeps a conflict version; B's daemon hears of it (the `gained` event)
            let itemB = b!.folder.appendingPathComponent("doc.txt")
            _ = try Self.keepAsApp(itemB, "B's unsaved edits", app: "b-editor")
            b!.engine.versionSettled(at: b!.folder.appendingPathComponent("doc.txt").path)
            try await b!.engine.pass()
            #expect(try await b!.engine.journalConflicts().map(\.published) == [true])
            try await b!.engine.pass()  // nothing more: not published twice
            #expect(try await b!.engine.journalConflicts().count == 1)
            try await a.engine.pass()
            let shared = Self.unresolved(a, "doc.txt")
            #expect(shared.count == 1)
            #expect(shared.first?.localizedNameOfSavingComputer == "b-editor")
            #expect(shared.first.flatMap { try? Data(contentsOf: $0.url) } == Data("B's unsaved edits".utf8))
            #expect(Self.unresolved(b!, "doc.txt").count == 1, "B's own version is not added again")

            // resolved on A: settled on B
            for version in shared { try version.markResolved() }
            try await a.engine.pass()
            try await b!.engine.pass()
            #expect(Self.unresolved(b!, "doc.txt").isEmpty)
            #expect(try await b!.engine.journalConflicts().isEmpty)

            // kept while B's daemon is not running (no event): found at its first pass
            b = nil
            _ = try Self.keepAsApp(itemB, "edits while the daemon was away", app: "b-editor")
            b = try await harness.device("b")
            try await b!.engine.pass()
            #expect(try await b!.engine.journalConflicts().map(\.published) == [true])
            try await a.engine.pass()
            #expect(Self.unresolved(a, "doc.txt").count == 1)
            #expect(Self.unresolved(a, "doc.txt").first.flatMap { try? Data(contentsOf: $0.url) } == Data("edits while the daemon was away".utf8))
        }
    }
}
