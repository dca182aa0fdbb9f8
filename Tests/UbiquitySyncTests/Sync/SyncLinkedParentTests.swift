// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
import UbiquityCore
@testable import UbiquitySync

/// Remote items are never written through a synced symbolic link on the way (issue 6): a record
/// at `out/…` where `out` is a synced link pointing outside the folder is refused, by the
/// batched new-file writer (which hands it on) and by the one-by-one path alike; nothing is
/// written outside the folder, the rest syncs, and the passes do not fail. Engine-level, against
/// a real `RecordsServer` (``SyncBatchTests/Harness``); nothing is timed.
@Suite struct SyncLinkedParentTests {
    typealias Harness = SyncBatchTests.Harness

    /// Saves a record for `path` straight to the server (as another, careless client would).
    static func saveRaw(_ device: SyncBatchTests.Device, path: String, kind: SyncItemKind, content: Data = Data()) async throws {
        var record = try SyncRecord.record(id: UUID().uuidString, changeTag: nil)
        record[SyncRecord.Field.path] = .string(path)
        record[SyncRecord.Field.kind] = .string(kind.rawValue)
        record[SyncRecord.Field.size] = .int64(Int64(content.count))
        record[SyncRecord.Field.modified] = .int64(1_700_000_000_000)
        record[SyncRecord.Field.contentHash] = .string(kind == .file ? SyncFiles.hash(content) : "")
        record[SyncRecord.Field.mode] = .int64(kind == .folder ? 0o755 : 0o644)
        if kind == .file, !content.isEmpty { record[SyncRecord.Field.inline] = .bytes(content) }
        _ = try await device.engine.database.save(record)
    }

    @Test func aRemoteItemUnderASyncedLinkIsRefusedAndNothingIsWrittenOutside() async throws {
        try await Harness.with { harness in
            let outside = harness.directory.appendingPathComponent("outside")
            try FileManager.default.createDirectory(at: outside, withIntermediateDirectories: true)
            let a = try await harness.device("a")
            try FileManager.default.createDirectory(at: a.folder, withIntermediateDirectories: true)
            try FileManager.default.createSymbolicLink(atPath: a.folder.appendingPathComponent("out").path, withDestinationPath: outside.path)
            try a.write("ok.txt", Data("fine".utf8))
            try await a.engine.pass()

            // records under the link, made by another client: a new file (the batched writer's
            // kind), a folder and a file in it (the one-by-one path)
            try await Self.saveRaw(a, path: "out/evil.txt", kind: .file, content: Data("escaped".utf8))
            try await Self.saveRaw(a, path: "out/sub", kind: .folder)
            try await Self.saveRaw(a, path: "out/sub/deeper.txt", kind: .file, content: Data("escaped too".utf8))
            try await Self.saveRaw(a, path: "inside/good.txt", kind: .file, content: Data("synced".utf8))

            // the device that has the link, and a new one that gets it from the server
            let b = try await harness.device("b")
            for device in [a, b] {
                try await device.engine.pass()
                try await device.engine.pass()  // again: still refused, and the pass does not fail
                #expect(device.read("inside/good.txt") == Data("synced".utf8), "the rest syncs")
                #expect(device.read("ok.txt") == Data("fine".utf8))
                let link = try FileManager.default.destinationOfSymbolicLink(atPath: device.folder.appendingPathComponent("out").path)
                #expect(link == outside.path)
                #expect(await device.engine.memory.refusedDownloads.count == 3)
            }
            let written = try FileManager.default.contentsOfDirectory(atPath: outside.path)
            #expect(written.isEmpty, "written outside the folder: \(written)")
        }
    }

    @Test func theCheckFindsLinksAndOtherNonFoldersOnTheWay() throws {
        let root = NSTemporaryDirectory() + "ubq-linked-" + UUID().uuidString.prefix(8)
        defer { try? FileManager.default.removeItem(atPath: root) }
        try FileManager.default.createDirectory(atPath: root + "/real/inner", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root + "/real/link", withDestinationPath: "/tmp")
        #expect(FileManager.default.createFile(atPath: root + "/file", contents: Data()))
        #expect(SyncFiles.notAFolderOnTheWay(root: root, relative: "real/inner/x.txt") == nil)
        #expect(SyncFiles.notAFolderOnTheWay(root: root, relative: "missing/deeper/x.txt") == nil)
        #expect(SyncFiles.notAFolderOnTheWay(root: root, relative: "real/link") == nil)  // the item itself may be a link
        let link = SyncFiles.notAFolderOnTheWay(root: root, relative: "real/link/x/y.txt")
        #expect(link?.path == "real/link" && link?.isLink == true)
        let file = SyncFiles.notAFolderOnTheWay(root: root, relative: "file/x.txt")
        #expect(file?.path == "file" && file?.isLink == false)
    }
}
