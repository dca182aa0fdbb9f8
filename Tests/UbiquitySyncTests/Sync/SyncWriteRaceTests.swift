// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
@testable import UbiquitySync

/// An edit made right after the engine wrote a remote change — between its rename and its
/// journal entry — is still uploaded: the journal keeps the stamp of the file as written, not a
/// stat taken after the edit (which made the edit look synced: it was never sent, and a later
/// remote change would have overwritten it). Both writers: the batched one for new files and
/// the one-by-one one for edits.
@Suite struct SyncWriteRaceTests {
    typealias Harness = SyncBatchTests.Harness

    @Test func anEditRightAfterARemoteWriteIsUploaded() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            let edits = Mutex<[String: String]>([:])  // path → what B's user writes right after the engine
            let folder = b.folder
            await b.engine.setAfterWrite { path in
                guard let text = edits.withLock({ $0.removeValue(forKey: path) }) else { return }
                try? Data(text.utf8).write(to: folder.appendingPathComponent(path))
            }

            // a new file (the batched writer)
            try a.write("doc.txt", Data("one".utf8))
            try await a.engine.pass()
            edits.withLock { $0["doc.txt"] = "B's edit, right after" }
            try await b.engine.pass()
            try await b.engine.pass()
            try await a.engine.pass()
            #expect(a.read("doc.txt") == Data("B's edit, right after".utf8))
            #expect(b.read("doc.txt") == Data("B's edit, right after".utf8))

            // an edit of a synced file (written one by one)
            try a.write("doc.txt", Data("two, from A".utf8))
            try await a.engine.pass()
            edits.withLock { $0["doc.txt"] = "B's second edit, right after" }
            try await b.engine.pass()
            try await b.engine.pass()
            try await a.engine.pass()
            #expect(edits.withLock { $0.isEmpty }, "the hook ran")
            #expect(a.read("doc.txt") == Data("B's second edit, right after".utf8))
            #expect(b.read("doc.txt") == Data("B's second edit, right after".utf8))
        }
    }
}
