// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Synchronization
import Testing
import UbiquityTestSupport
import Ubiquity
@testable import UbiquitySync

/// The new-file writer's folder of temporaries (``NewFilesFolder``): a page's temporaries are
/// written there (not next to their targets, where both watchers would hear each one), nothing
/// is left in it after a batch or a failure between the stages, what a killed engine left is
/// removed when an engine starts and by a full scan, and nothing in it is ever uploaded.
@Suite struct NewFilesFolderTests {
    typealias Harness = SyncBatchTests.Harness

    /// The names in `folder` (nil when it does not exist).
    static func names(in folder: String) -> [String]? {
        try? FileManager.default.contentsOfDirectory(atPath: folder).sorted()
    }

    /// The files under `folder`, at any depth (nil when it does not exist).
    static func files(in folder: String) -> [String]? {
        guard FileManager.default.fileExists(atPath: folder) else { return nil }
        let enumerator = FileManager.default.enumerator(atPath: folder)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            var isDirectory: ObjCBool = false
            if FileManager.default.fileExists(atPath: folder + "/" + path, isDirectory: &isDirectory), !isDirectory.boolValue { found.append(path) }
        }
        return found.sorted()
    }

    /// The engine's temporaries anywhere under `root` outside the folder of temporaries.
    static func temporariesBesideTargets(_ root: URL) -> [String] {
        let enumerator = FileManager.default.enumerator(atPath: root.path)
        var found: [String] = []
        while let path = enumerator?.nextObject() as? String {
            let name = (path as NSString).lastPathComponent
            if path.hasPrefix(NewFilesFolder.name) { continue }
            if SyncFiles.isOwnTemporary(name) { found.append(path) }
        }
        return found
    }

    @Test func aPagesTemporariesAreWrittenInTheFolderOfTemporariesAndGoAfterwards() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            for index in 0..<60 { try a.write("docs/d\(index % 3)/file\(index).txt", SyncBatchTests.content(index)) }
            try await a.engine.pass()

            let bRoot = b.folder
            let seen = SeenBox<(inFolder: [String]?, beside: [String])>((nil, []))
            await b.engine.setNewFilesFault { stage in
                guard stage == "written" else { return }
                seen.set((Self.files(in: NewFilesFolder.path(root: bRoot.path)), Self.temporariesBesideTargets(bRoot)))
            }
            try await b.engine.pass()
            let (inFolder, beside) = seen.get()
            #expect(inFolder?.count == 60)
            #expect(inFolder?.allSatisfy { SyncFiles.isOwnTemporary(($0 as NSString).lastPathComponent) } == true)
            #expect(Set(inFolder?.map { ($0 as NSString).deletingLastPathComponent } ?? []).count == NewFilesFolder.spread)
            #expect(beside == [])
            // every file in place, the folder of temporaries gone, nothing of it listed or uploaded
            #expect(Self.names(in: NewFilesFolder.path(root: bRoot.path)) == nil)
            #expect(SyncBatchTests.files(in: b.folder).filter { !$0.hasPrefix(NewFilesFolder.name) } == SyncBatchTests.files(in: a.folder))
            for index in 0..<60 { #expect(b.read("docs/d\(index % 3)/file\(index).txt") == SyncBatchTests.content(index)) }
            b.transport.reset()
            try await b.engine.pass()
            #expect(b.transport.count("records/modify") == 0)
        }
    }

    @Test func aFailureBetweenTheStagesLeavesTheFolderEmpty() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            let b = try await harness.device("B")
            for index in 0..<40 { try a.write("file\(index).txt", SyncBatchTests.content(index)) }
            try await a.engine.pass()

            struct Injected: Error {}
            await b.engine.setNewFilesFault { stage in if stage == "written" { throw Injected() } }
            await #expect(throws: (any Error).self) { try await b.engine.pass() }
            #expect(Self.names(in: NewFilesFolder.path(root: b.folder.path)) == nil)
            #expect(SyncBatchTests.files(in: b.folder).filter { !$0.hasPrefix(NewFilesFolder.name) } == [])
        }
    }

    @Test func temporariesLeftByAKilledEngineAreRemovedAtStartAndNeverUploaded() async throws {
        try await Harness.with { harness in
            let a = try await harness.device("A")
            for index in 0..<20 { try a.write("file\(index).txt", SyncBatchTests.content(index)) }
            try await a.engine.pass()
            // B was killed in the middle of a batch: a whole temporary and a partial one
            let bFolder = harness.directory.appendingPathComponent("B")
            let leftovers = NewFilesFolder.path(root: bFolder.path)
            try FileManager.default.createDirectory(atPath: leftovers, withIntermediateDirectories: true)
            try SyncBatchTests.content(1).write(to: URL(fileURLWithPath: leftovers + "/" + SyncFiles.temporaryPrefix + "k1-0"))
            try FileManager.default.createDirectory(atPath: leftovers + "/3", withIntermediateDirectories: true)
            try Data(SyncBatchTests.content(2).prefix(100)).write(to: URL(fileURLWithPath: leftovers + "/3/" + SyncFiles.temporaryPrefix + "k1-1"))

            let b = try await harness.device("B")
            #expect(Self.names(in: leftovers) == nil)
            try await b.engine.pass()
            #expect(SyncBatchTests.files(in: b.folder).filter { !$0.hasPrefix(NewFilesFolder.name) } == SyncBatchTests.files(in: a.folder))
            #expect(b.transport.count("records/modify") == 0)

            // one left while the engine runs (by hand): the next full scan removes it, unsent
            try FileManager.default.createDirectory(atPath: leftovers, withIntermediateDirectories: true)
            try SyncBatchTests.content(3).write(to: URL(fileURLWithPath: leftovers + "/" + SyncFiles.temporaryPrefix + "k2-0"))
            b.engine.scope.withLock { $0.full = true }
            b.transport.reset()
            try await b.engine.pass()
            #expect(Self.names(in: leftovers) == nil)
            #expect(b.transport.count("records/modify") == 0)
            try await a.engine.pass()
            #expect(SyncBatchTests.files(in: a.folder).filter { !$0.hasPrefix(NewFilesFolder.name) }.count == 20)
        }
    }

    @Test func theFolderIsMadeOnlyWhereItCanBe() throws {
        let root = URL(fileURLWithPath: NSTemporaryDirectory()).appendingPathComponent("ubq-newfolder-\(UUID().uuidString.prefix(8))").path
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        #expect(NewFilesFolder.clear(root: root) == 0)  // missing: nothing to do
        #expect(NewFilesFolder.prepare(root: root) == NewFilesFolder.path(root: root))
        #expect(NewFilesFolder.prepare(root: root) == NewFilesFolder.path(root: root))  // again: there already
        let first = NewFilesFolder.temporaryPath(in: NewFilesFolder.path(root: root), tag: "t", index: 0)
        let second = NewFilesFolder.temporaryPath(in: NewFilesFolder.path(root: root), tag: "t", index: 1)
        #expect(first != second)
        #expect(SyncFiles.isOwnTemporary((first as NSString).lastPathComponent))
        #expect(Self.names(in: NewFilesFolder.path(root: root))?.count == NewFilesFolder.spread)
        NewFilesFolder.removeIfEmpty(root: root)
        #expect(Self.names(in: NewFilesFolder.path(root: root)) == nil)
        #expect(NewFilesFolder.prepare(root: root) != nil)
        try Data("x".utf8).write(to: URL(fileURLWithPath: first))
        NewFilesFolder.removeIfEmpty(root: root)  // not empty: kept
        #expect(Self.files(in: NewFilesFolder.path(root: root)) == ["0/" + (first as NSString).lastPathComponent])
        #expect(NewFilesFolder.clear(root: root) == 1)
        #expect(Self.names(in: NewFilesFolder.path(root: root)) == nil)
        // a file (or a link) with the folder's name: no folder of temporaries (written beside the targets)
        try Data().write(to: URL(fileURLWithPath: NewFilesFolder.path(root: root)))
        #expect(NewFilesFolder.prepare(root: root) == nil)
        #expect(NewFilesFolder.clear(root: root) == 0)
        // the ignore rules skip it: neither watcher nor the index looks inside
        #expect(IgnoreRules.defaults.isIgnored(name: NewFilesFolder.name, relativePath: NewFilesFolder.name, isDirectory: true))
    }
}

/// A value set from a `@Sendable` closure and read by the test.
private final class SeenBox<T: Sendable>: Sendable {
    private let value: Mutex<T>
    init(_ value: T) { self.value = Mutex(value) }
    func set(_ new: T) { value.withLock { $0 = new } }
    func get() -> T { value.withLock { $0 } }
}
