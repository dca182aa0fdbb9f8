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
}
