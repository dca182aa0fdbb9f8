// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// A conflict whose download failed part-way, after the local content was kept as a conflict
/// version (sync simulator seed 3814).
extension ConflictRenameTests {
    /// The download fails after its rename (the folder's fsync: the disk): the version kept
    /// first is journaled before the download, so the device knows the file is in conflict.
    /// The file then saved by an editor and renamed here, and renamed the same way elsewhere,
    /// before the next pass, is a file gone from its name here and a new one: the version
    /// becomes a file beside it, on both devices. Before, it stayed linked to the old name
    /// only, where nothing was any more, and was lost.
    @Test func aConflictVersionKeptBeforeAFailedDownloadOutlivesASaveAndARename() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a"), b = try await harness.device("b")
            try await Self.shared(a, b, "c.bin")
            try b.write("c.bin", Data("from B".utf8))
            try await b.engine.pass()
            try a.write("c.bin", Data("from A".utf8))
            let root = a.folder.path
            let failed = Mutex(false)
            let watch = Durability.watch(root) { call in
                guard call == .folder(root) else { return nil }
                return failed.withLock { done in
                    defer { done = true }
                    return done ? nil : EIO
                }
            }
            try? await a.engine.pass()
            Durability.stop(watch)
            #expect(failed.withLock { $0 })
            #expect(a.read("c.bin") == Data("from B".utf8), "the download's rename was made before its fsync failed")
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("c.bin"), to: b.folder.appendingPathComponent("C.bin"))
            try? await b.engine.pass()  // A's version, for the name B's file just left, waits for the next one
            try Self.editorSave(a, "c.bin", Data("saved on A".utf8))
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("c.bin"), to: a.folder.appendingPathComponent("C.bin"))
            try await a.engine.pass()
            try await a.engine.pass()
            try await b.engine.pass()
            try await b.engine.pass()
            for device in [a, b] {
                let names = SyncBatchTests.files(in: device.folder)
                let contents = names.compactMap(device.read)
                #expect(contents.contains(Data("from A".utf8)), "\(device.folder.lastPathComponent): \(names)")
                #expect(contents.contains(Data("saved on A".utf8)), "\(device.folder.lastPathComponent): \(names)")
            }
        }
    }

    /// A file in conflict, renamed after a restart (a case-only rename of it and of its folder),
    /// then saved by an editor (its identity attribute dropped) and deleted with its folder: its
    /// conflict version, this device's write nobody chose to delete, is kept as a file. The
    /// items in conflict are followed from the first pass after a start; before, the version
    /// store kept the old path, nothing led to the version, and it was lost (sync simulator seed
    /// 5548).
    @Test func aConflictVersionOfAFileRenamedAfterARestartThenSavedAndDeletedIsKeptAsAFile() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("a")
            try await Self.conflicted(a, try await harness.device("b"), folder: "docs")
            let b = try await harness.device("b")  // restarted: a new engine over its journal
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("docs"), to: b.folder.appendingPathComponent("Docs"))
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("Docs/doc.txt"), to: b.folder.appendingPathComponent("Docs/Doc.txt"))
            try await b.engine.pass()
            try Self.editorSave(b, "Docs/Doc.txt", Data("saved on B".utf8))
            try FileManager.default.removeItem(at: b.folder.appendingPathComponent("Docs"))
            try await b.engine.pass()
            try await b.engine.pass()
            try await a.engine.pass()
            for device in [a, b] {
                let names = SyncBatchTests.files(in: device.folder)
                #expect(names.compactMap(device.read).contains(Data("from B".utf8)), "\(device.folder.lastPathComponent): \(names)")
            }
        }
    }
}
