// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import UbiquityTestSupport
import UbiquityCore
@testable import UbiquitySync

/// The new-file writer's durability plan (one `syncfs` for a batch when little else is dirty,
/// an fsync each otherwise), the reading of `/proc/meminfo`, the per-folder decision of a
/// narrowed scan (``ReachableFolders``), and that a batch written either way lands whole.
@Suite struct NewFileDurabilityTests {
    @Test func aBatchIsFlushedOnceOnlyWhenLittleElseIsDirty() {
        #expect(NewFileDurability.plan(files: 500, dirtyBytes: 0) == .fileSystem)
        #expect(NewFileDurability.plan(files: 500, dirtyBytes: NewFileDurability.dirtyLimit) == .fileSystem)
        #expect(NewFileDurability.plan(files: 500, dirtyBytes: NewFileDurability.dirtyLimit + 1) == .eachFile)
        #expect(NewFileDurability.plan(files: 500, dirtyBytes: nil) == .eachFile)
        #expect(NewFileDurability.plan(files: NewFileDurability.minimumFiles - 1, dirtyBytes: 0) == .eachFile)
        #expect(NewFileDurability.plan(files: NewFileDurability.minimumFiles, dirtyBytes: 0) == .fileSystem)
    }

    @Test func dirtyBytesAreReadFromMeminfo() {
        let text = "MemTotal:       16384000 kB\nDirty:              1024 kB\nWriteback:            8 kB\nAnonPages: 1 kB\n"
        let dirty: Int64? = NewFileDurability.dirtyBytes(meminfo: Array(text.utf8))
        let expected: Int64 = (1024 + 8) * 1024
        #expect(dirty == expected)
        // a field missing or unreadable: unknown (the batch is fsynced file by file)
        #expect(NewFileDurability.dirtyBytes(meminfo: Array("Dirty: 12 kB\n".utf8)) == nil)
        #expect(NewFileDurability.dirtyBytes(meminfo: Array("Dirty: x kB\nWriteback: 0 kB\n".utf8)) == nil)
        #expect(NewFileDurability.dirtyBytes(meminfo: Array("Dirty: 1 MB\nWriteback: 0 kB\n".utf8)) == nil)
        #expect(NewFileDurability.dirtyBytes(meminfo: "/nonexistent/meminfo") == nil)
        #expect(NewFileDurability.dirtyBytes() != nil)  // this machine's
    }

    @Test func filesMadeDurableTogetherAreWholeAndOnlyTheirs() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-durable-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory + "/sub", withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        var paths: [String] = []
        for index in 0..<40 {
            let path = directory + (index % 2 == 0 ? "/sub" : "") + "/file\(index)"
            try SyncFiles.writeNew(path, Data("content \(index)".utf8))
            paths.append(path)
        }
        let failed = SyncFiles.makeDurable(paths + [directory + "/missing"], lanes: 4)  // a missing one is skipped
        #expect(failed.keys.allSatisfy { $0 == directory + "/missing" })
        for (index, path) in paths.enumerated() {
            #expect(FileManager.default.contents(atPath: path) == Data("content \(index)".utf8))
        }
        #expect(try FileManager.default.contentsOfDirectory(atPath: directory).count == 21)  // 20 files and `sub`
    }

    @Test func aFileTheDiskCannotMakeDurableIsReported() throws {
        let directory = FileManager.default.temporaryDirectory.appendingPathComponent("ubiq-durable-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: directory, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: directory) }
        let paths = try (0..<20).map { index in
            let path = directory + "/file\(index)"
            try SyncFiles.writeNew(path, Data("content \(index)".utf8))
            return path
        }
        // the disk fails the flush of the whole file system, and then the fsync of one file
        let watch = Durability.watch(directory) { call in
            switch call {
            case .fileSystem: EIO
            case .file(let path): path.hasSuffix("/file7") ? EIO : nil
            case .folder: nil
            }
        }
        defer { Durability.stop(watch) }
        let failed = SyncFiles.makeDurable(paths, lanes: 4)
        #expect(Array(failed.keys) == [directory + "/file7"])
        #expect(failed[directory + "/file7"]?.code == .io)
    }

    @Test func aFolderIsDecidedOnceAndAnIgnoredOrExcludedOneHidesItsSubtree() {
        var folders = ReachableFolders(excluded: ["kept/back"], rules: IgnoreRules(patterns: IgnoreRules.defaultPatterns + ["build"]))
        let answers = [
            "top.txt", "a/b/c.txt", "a/b/d.txt", "a/build/c.txt", "a/build/deeper/c.txt", "kept/back/file",
            "kept/back/more/file", "kept/other/file", "x/.ubiq-tmp-sync-1234/file", "x/file~/inside", "x/file~",
        ].map { ($0, folders.isReachable(parentOf: $0)) }
        let reachable = answers.filter(\.1).map(\.0)
        #expect(reachable == [
            "top.txt", "a/b/c.txt", "a/b/d.txt",
            "kept/other/file",  // only `kept/back` is excluded from backup
            "x/file~",  // the item itself is judged by the scan
        ])
        // asked again (from what it remembers): the same answers
        let again = answers.allSatisfy { folders.isReachable(parentOf: $0.0) == $0.1 }
        #expect(again)
    }
}
