// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// An engine killed between writing a temporary beside its target and renaming it into place
/// leaves `.ubiq-tmp-sync-…`, which the index never lists: the next engine on the folder
/// removes it at start (`SyncEngine+Temporaries.swift`; `ChaosTests` once left one, seed 370073).
@Suite(.serialized) struct LeftTemporariesTests {
    typealias Harness = SyncBatchTests.Harness

    @Test func aTemporaryLeftByAKilledEngineGoesAtTheNextStart() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            try a.write("docs/doc.txt", Data("synced".utf8))
            try await a.engine.pass()
            // a download killed before its rename: its temporary stays beside the target
            let target = a.folder.appendingPathComponent("docs/doc.txt").path
            let left = try await a.engine.temporaryPath(near: target)
            try Data("partial".utf8).write(to: URL(fileURLWithPath: left))
            let rootLeft = try await a.engine.temporaryPath(near: a.folder.appendingPathComponent("top.txt").path)
            try Data("partial".utf8).write(to: URL(fileURLWithPath: rootLeft))
            // an application's save in flight (SafeSave's temporary, not the engine's) and a
            // file of the user's stay
            let appSave = a.folder.appendingPathComponent("docs/\(SafeSave.temporaryPrefix)doc.txt-1234").path
            try Data("an app's save".utf8).write(to: URL(fileURLWithPath: appSave))
            await a.engine.stopAndRelease()
            let restarted = try await harness.device("a")
            #expect(!FileManager.default.fileExists(atPath: left), "the engine's temporary went")
            #expect(!FileManager.default.fileExists(atPath: rootLeft))
            #expect(FileManager.default.fileExists(atPath: appSave), "another writer's temporary stays")
            #expect(restarted.read("docs/doc.txt") == Data("synced".utf8))
            try await restarted.engine.pass()
            #expect(restarted.read("docs/doc.txt") == Data("synced".utf8))
            // the notes are forgotten: a later start has nothing to look at
            #expect(try restarted.openJournal().keys(withPrefix: SyncEngine.temporaryFoldersKey).isEmpty)
        }
    }
}
