// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import Ubiquity
@testable import UbiquitySync

/// Two devices that make the same item before either hears of the other's (the receiving side
/// of an initial sync makes a file's folder before the folder's record comes) send two records
/// for one path. Every device keeps the record with the smaller ID and deletes the other; the
/// devices must converge on it: one live record per path on the server, the same record in
/// both journals, nothing lost. Real server on loopback (``SyncBatchTests/Harness``), passes
/// run by hand in the order that makes the duplicates.
@Suite struct SyncDuplicateRecordTests {
    typealias Harness = SyncBatchTests.Harness

    static func text(_ string: String) -> Data { Data(string.utf8) }

    /// The zone's live records: path → record names.
    static func liveRecords(_ engine: SyncEngine) async throws -> [String: [String]] {
        var paths: [String: [String]] = [:]
        for record in try await SyncRig.liveRecords(engine.database) {
            guard let item = SyncRecord.item(from: record) else { continue }
            paths[item.path, default: []].append(item.id)
        }
        return paths
    }

    /// The journal's items: path → record name.
    static func journaled(_ engine: SyncEngine) async throws -> [String: String] {
        Dictionary(uniqueKeysWithValues: try await engine.journal.entries().map { ($0.path, $0.id) })
    }

    /// Expects every one of `contents` on `device`: as a file's, or as one of its other versions'.
    static func expectKept(_ contents: [Data], on device: SyncBatchTests.Device, sourceLocation: SourceLocation = #_sourceLocation) {
        let files = SyncBatchTests.files(in: device.folder)
        let kept = files.flatMap { path in
            [device.read(path)] + (FileVersion.otherVersionsOfItem(at: device.folder.appendingPathComponent(path)) ?? []).map {
                FileManager.default.contents(atPath: $0.url.path)
            }
        }
        for content in contents {
            #expect(kept.contains(content), "\(device.folder.lastPathComponent): \(String(decoding: content, as: UTF8.self)) in \(files)",
                    sourceLocation: sourceLocation)
        }
    }

    @Test func twoDevicesMakingTheSameFoldersConvergeOnOneRecordEach() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try await a.engine.pass()
            try await b.engine.pass()
            // both make the same folders, each with a file of its own, and send them before
            // either fetches: two records for each folder. Which of a pair wins depends on the
            // random record names, so eight pairs make both outcomes all but certain.
            let folders = (0..<8).map { "shared\($0)" }
            for folder in folders {
                try a.write("\(folder)/from-a.txt", Self.text("A's file in \(folder)"))
                try b.write("\(folder)/from-b.txt", Self.text("B's file in \(folder)"))
            }
            try await a.engine.pushLocal()
            try await b.engine.pushLocal()
            #expect(try await Self.liveRecords(a.engine).filter { $0.value.count == 2 }.count == folders.count)
            // B fetches first: A's records come with B's own coming back, which change nothing
            // on B and must not keep B from judging the pairs as A will
            for _ in 0..<3 {
                try await b.engine.pass()
                try await a.engine.pass()
            }
            let live = try await Self.liveRecords(a.engine)
            #expect(live.count == 3 * folders.count)
            #expect(live.filter { $0.value.count != 1 }.isEmpty, "duplicates left: \(live.filter { $0.value.count != 1 })")
            let journalA = try await Self.journaled(a.engine), journalB = try await Self.journaled(b.engine)
            #expect(journalA == journalB)
            #expect(journalA == live.compactMapValues(\.first))
            for folder in folders {
                for device in [a, b] {
                    #expect(device.read("\(folder)/from-a.txt") == Self.text("A's file in \(folder)"))
                    #expect(device.read("\(folder)/from-b.txt") == Self.text("B's file in \(folder)"))
                }
            }
        }
    }

    /// A new file on A and a file B renamed to the same name, sent before either fetches: two
    /// records for one path. When A's loses, B deletes it; A, applying B's rename first, moves
    /// its own file aside for it, and the delete then takes that copy, unchanged since it was
    /// synced: the content would be nowhere. The device that deletes the losing record keeps its
    /// content first, as a conflict version of the winner's file (sync simulator seed 117).
    /// Which record of a pair wins depends on the random record names: eight pairs make both
    /// outcomes all but certain. Every content ends on both devices.
    @Test func theContentOfADroppedRecordIsKept() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            let names = (0..<8).map { "doc\($0).txt" }
            for name in names { try a.write("old-" + name, Self.text("old \(name)")) }
            try await a.engine.pass()
            try await b.engine.pass()
            for name in names {
                try FileManager.default.moveItem(at: b.folder.appendingPathComponent("old-" + name), to: b.folder.appendingPathComponent(name))
                try a.write(name, Self.text("A's \(name)"))
            }
            try await a.engine.pushLocal()
            try await b.engine.pushLocal()
            #expect(try await Self.liveRecords(a.engine).filter { $0.value.count == 2 }.count == names.count)
            for _ in 0..<3 {
                try await b.engine.pass()
                try await a.engine.pass()
            }
            let live = try await Self.liveRecords(a.engine)
            #expect(live.filter { $0.value.count != 1 }.isEmpty, "duplicates left: \(live.filter { $0.value.count != 1 })")
            for name in names {
                for device in [a, b] { Self.expectKept([Self.text("A's \(name)"), Self.text("old \(name)")], on: device) }
            }
        }
    }

    /// A's file, sent and then evicted (its content on the server only), and a new file of B's
    /// at the same name, sent before B fetches: two records for one path, and A fetches B's first.
    /// When A's record loses, A deletes it; without its bytes here, nothing kept them (sync
    /// simulator seed 19). A downloads its evicted file before its record goes, and B's version
    /// takes the name with A's kept as a conflict version. Which record of a pair wins depends
    /// on the random record names: eight pairs make both outcomes all but certain. Every
    /// content ends on both devices.
    @Test func anEvictedFileWhoseRecordLosesIsDownloadedBeforeItIsDropped() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try await b.engine.pass()
            let names = (0..<8).map { "doc\($0).txt" }
            for name in names { try a.write(name, Self.text("A's \(name)")) }
            try await a.engine.pass()
            for name in names {
                let file = a.folder.appendingPathComponent(name).path
                #expect(try await a.engine.evict(file) == [file])
                try b.write(name, Self.text("B's \(name)"))
            }
            try await b.engine.pushLocal()
            #expect(try await Self.liveRecords(a.engine).filter { $0.value.count == 2 }.count == names.count)
            for _ in 0..<3 {  // a change applied after another may fail a pass; the next one applies it
                _ = try? await a.engine.pass()
                _ = try? await b.engine.pass()
            }
            try await a.engine.pass()
            try await b.engine.pass()
            _ = try? await a.engine.startDownloading(a.folder.path)
            let live = try await Self.liveRecords(a.engine)
            #expect(live.filter { $0.value.count != 1 }.isEmpty, "duplicates left: \(live.filter { $0.value.count != 1 })")
            for name in names {
                for device in [a, b] { Self.expectKept([Self.text("A's \(name)"), Self.text("B's \(name)")], on: device) }
            }
        }
    }

    /// B moves `docs` into `media` and makes a new `docs/old` (with a file, and without): A
    /// fetches both in one batch. Applied in depth order, the new folder landed in A's `docs`
    /// and the move carried it along, journaled at `media/docs/old` while its record stayed at
    /// `docs/old`; nothing sent it, and with a file in it the folder was made again at its
    /// name, sent as new, and dropped as a duplicate, forever (sync simulator seeds 346, 366).
    @Test(arguments: [false, true]) func aFolderMadeAtAMovedFoldersOldPathStaysThere(withFile: Bool) async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A"), b = try await harness.device("B")
            try b.write("docs/keep.txt", Self.text("kept"))
            try await b.engine.pass()
            try await a.engine.pass()
            let root = b.folder
            try FileManager.default.createDirectory(at: root.appendingPathComponent("media"), withIntermediateDirectories: true)
            try FileManager.default.moveItem(at: root.appendingPathComponent("docs"), to: root.appendingPathComponent("media/docs"))
            try FileManager.default.createDirectory(at: root.appendingPathComponent("docs/old"), withIntermediateDirectories: true)
            if withFile { try b.write("docs/old/c.bin", Self.text("new")) }
            try await b.engine.pass()
            for _ in 0..<4 {
                try await a.engine.pass()
                try await b.engine.pass()
            }
            let live = try await Self.liveRecords(a.engine)
            #expect(live.filter { $0.value.count != 1 }.isEmpty, "duplicates left: \(live.filter { $0.value.count != 1 })")
            #expect(live["docs/old"] != nil && live["media/docs/old"] == nil)
            #expect(!FileManager.default.fileExists(atPath: a.folder.appendingPathComponent("media/docs/old").path))
            #expect(a.read("media/docs/keep.txt") == Self.text("kept"))
            #expect(try await Self.journaled(a.engine) == live.compactMapValues(\.first))
        }
    }

    @Test func aFolderKeptBecauseItIsNotEmptyIsSentAgain() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            try a.write("project/notes.txt", Self.text("notes"))
            try await a.engine.pass()
            try await b.engine.pass()
            #expect(b.read("project/notes.txt") == Self.text("notes"))
            // A deletes the folder while B adds a file to it (not sent yet): B keeps the folder
            // and its new file, and sends the folder again as a new item
            try FileManager.default.removeItem(at: a.folder.appendingPathComponent("project"))
            try await a.engine.pass()
            try b.write("project/added-on-b.txt", Self.text("added on B"))
            try await b.engine.pass()
            try await a.engine.pass()
            #expect(a.read("project/added-on-b.txt") == Self.text("added on B"))
            #expect(a.read("project/notes.txt") == nil)
            let live = try await Self.liveRecords(a.engine)
            #expect(Set(live.keys) == ["project", "project/added-on-b.txt"])
            #expect(live.values.allSatisfy { $0.count == 1 })
            let journalA = try await Self.journaled(a.engine), journalB = try await Self.journaled(b.engine)
            #expect(journalA == journalB)
            #expect(Set(journalB.keys) == ["project", "project/added-on-b.txt"])
        }
    }
}

extension SyncDuplicateRecordTests {
    /// A and B with eight files `media/docN.txt` ("first docN.txt") synced; their names.
    static func eightFilesInMedia(_ harness: Harness) async throws -> (SyncBatchTests.Device, SyncBatchTests.Device, [String]) {
        let a = try await harness.device("A")
        let b = try await harness.device("B")
        let names = (0..<8).map { "doc\($0).txt" }
        for name in names { try a.write("media/" + name, text("first \(name)")) }
        try await a.engine.pass()
        try await b.engine.pass()
        return (a, b, names)
    }
}

extension SyncDuplicateRecordTests {
    /// B moves `media` into `old` while A edits the files in it: B's fetch writes A's versions
    /// back at their old names, and the files B moved become new records in `old/media`. A,
    /// moving the folder along, finds each at the name its own record moved to: two records for
    /// one path, one dropped. B saves the files at their old names again after A's fetch and
    /// before A's deletes. Before, a record that lost was deleted whatever its version, and B's
    /// saves with it, everywhere (sync simulator seed 7013); now only the version A fetched is
    /// deleted, and a newer one comes back (since the fix for seed 9185 the moved files move
    /// aside instead: no record is dropped here). Which record of a pair wins depends on the
    /// random record names: eight pairs make both outcomes all but certain. Every content is kept.
    @Test func aDroppedRecordSavedElsewhereAfterTheFetchIsKept() async throws {
        try await Harness.with { harness in
            let (a, b, names) = try await Self.eightFilesInMedia(harness)
            try FileManager.default.createDirectory(at: b.folder.appendingPathComponent("old"), withIntermediateDirectories: false)
            try FileManager.default.moveItem(at: b.folder.appendingPathComponent("media"), to: b.folder.appendingPathComponent("old/media"))
            for name in names { try a.write("media/" + name, Self.text("A's \(name)")) }
            try await a.engine.pass()
            try await b.engine.pass()
            a.transport.before.withLock {
                $0["records/modify"] = {
                    for name in names { try b.write("media/" + name, Self.text("B's \(name)")) }
                    try await b.engine.pass()
                }
            }
            for _ in 0..<3 {
                try await a.engine.pass()
                try await b.engine.pass()
            }
            for device in [a, b] {
                Self.expectKept(names.flatMap { [Self.text("first \($0)"), Self.text("A's \($0)"), Self.text("B's \($0)")] }, on: device)
            }
            #expect(SyncBatchTests.files(in: a.folder) == SyncBatchTests.files(in: b.folder))
        }
    }
}

extension SyncDuplicateRecordTests {
    /// A renames `media` to `Media`, writes the files in it and makes a new `media`; its fetch
    /// writes B's versions of the files back at their old names in the new folder (the records
    /// stay there), and A's files in `Media` become new records. B, whose files are evicted,
    /// moves them along with the folder, onto the names A's new records then take. Not two
    /// records for one path: B's records are still at the old names on the server. Before, B
    /// dropped one record of each pair, and B's versions went with the records that lost,
    /// everywhere (sync simulator seed 9185). Now B's files move aside, and every version is
    /// kept. Which record of a pair would lose depends on the random record names: eight pairs.
    @Test func filesMovedAlongOntoNamesNewRecordsTakeMoveAside() async throws {
        try await Harness.with { harness in
            let (a, b, names) = try await Self.eightFilesInMedia(harness)
            for name in names { try b.write("media/" + name, Self.text("B's \(name)")) }
            try await b.engine.pass()
            for name in names { _ = try await b.engine.evict(b.folder.appendingPathComponent("media/" + name).path) }
            let records = Set(try await Self.journaled(b.engine).values)
            try FileManager.default.moveItem(at: a.folder.appendingPathComponent("media"), to: a.folder.appendingPathComponent("Media"))
            for name in names { try a.write("Media/" + name, Self.text("A's \(name)")) }
            try FileManager.default.createDirectory(at: a.folder.appendingPathComponent("media"), withIntermediateDirectories: false)
            try await a.engine.pass()
            for _ in 0..<3 {
                try await b.engine.pass()
                try await a.engine.pass()
            }
            for device in [a, b] {
                _ = try await device.engine.startDownloading(device.folder.path)
                Self.expectKept(names.flatMap { [Self.text("A's \($0)"), Self.text("B's \($0)")] }, on: device)
            }
            #expect(SyncBatchTests.files(in: a.folder) == SyncBatchTests.files(in: b.folder))
            let live = Set(try await Self.liveRecords(a.engine).values.joined())
            #expect(records.subtracting(live).isEmpty, "records deleted as duplicates: \(records.subtracting(live).count) of \(records.count)")
        }
    }
}
