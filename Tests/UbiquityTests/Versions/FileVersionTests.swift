// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

@Suite("FileVersion: adding, listing, replacing, removing")
struct FileVersionTests {
    @Test func theCurrentVersionIsTheItemItself() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("hello\n", to: "a.txt")
        try sandbox.run {
            let current = try #require(FileVersion.currentVersionOfItem(at: url))
            #expect(current.persistentIdentifier == "current")
            #expect(current.url.path == url.path)
            #expect(current.localizedName == "a.txt")
            #expect(current.size == 6)
            #expect(!current.isConflict && current.isResolved && !current.isDiscardable && current.hasLocalContents)
            #expect(current.modificationDate != nil)
            #expect(FileVersion.otherVersionsOfItem(at: url) == [])
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url) == [])
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: "current") == current)
            let missing = sandbox.folder.appendingPathComponent("missing.txt")
            #expect(FileVersion.currentVersionOfItem(at: missing) == nil)
            #expect(FileVersion.otherVersionsOfItem(at: missing) == nil)
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: missing) == nil)
        }
    }

    @Test func aSnapshotIsStoredOutsideTheFolderAndListed() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("abc", to: "notes.txt")
        try sandbox.run {
            let added = try FileVersion.addOfItem(at: url, withContentsOf: url)
            try Data("changed".utf8).write(to: url)

            let others = try #require(FileVersion.otherVersionsOfItem(at: url))
            #expect(others == [added])
            let version = others[0]
            #expect(version.persistentIdentifier != "current")
            #expect(UUID(uuidString: version.persistentIdentifier) != nil)
            #expect(version.url.path.hasPrefix(sandbox.store.path + "/"))
            #expect(version.url.pathExtension == "txt")
            #expect(sandbox.read(version.url) == "abc")
            #expect(version.localizedName == "notes.txt")
            #expect(version.localizedNameOfSavingComputer?.isEmpty == false)
            #expect(version.size == 3)
            #expect(!version.isConflict && version.isResolved && version.isDiscardable && version.hasLocalContents)
            #expect(version.modificationDate != nil)
            #expect(version.hashValue == added.hashValue)
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: version.persistentIdentifier) == version)
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: UUID().uuidString) == nil)
            #expect(FileVersion.currentVersionOfItem(at: url) != version)
            #expect(sandbox.read(url) == "changed")  // the item itself is untouched

            // The manifest records the SHA-256 of the content ("abc" is the FIPS 180-2 example).
            let manifest = try #require(try sandbox.manifests().first)
            let records = try #require(manifest["versions"] as? [[String: Any]])
            #expect(records.first?["sha256"] as? String == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
            #expect(records.first?["id"] as? String == version.persistentIdentifier)
            #expect(manifest["path"] as? String == url.path)
            #expect(sandbox.leftoverTemporaryFiles() == [])
        }
    }

    @Test func largeContentIsHashedAcrossBlocks() throws {
        let sandbox = try VersionSandbox()
        let url = sandbox.folder.appendingPathComponent("big.bin")
        try Data(repeating: UInt8(ascii: "a"), count: 1_000_000).write(to: url)
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: url)
            #expect(version.size == 1_000_000)
            let records = try #require(try sandbox.manifests().first?["versions"] as? [[String: Any]])
            #expect(records.first?["sha256"] as? String == "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0")
        }
    }

    @Test func versionsAreListedInTheOrderTheyWereAdded() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("v1", to: "a.txt")
        try sandbox.run {
            var added: [FileVersion] = []
            for text in ["v1", "v2", "v3"] {
                try Data(text.utf8).write(to: url)
                added.append(try FileVersion.addOfItem(at: url, withContentsOf: url))
            }
            let others = try #require(FileVersion.otherVersionsOfItem(at: url))
            #expect(others.map(\.persistentIdentifier) == added.map(\.persistentIdentifier))
            #expect(others.map { sandbox.read($0.url) } == ["v1", "v2", "v3"])
        }
    }

    @Test func replacingRestoresTheContentAndKeepsTheName() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("draft", to: "essay.md")
        let other = try sandbox.write("final text", to: "elsewhere/other.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: other)
            #expect(version.localizedName == "essay.md")
            let result = try version.replaceItem(at: url)
            #expect(result.path == url.path)
            #expect(sandbox.read(url) == "final text")
            #expect(FileManager.default.fileExists(atPath: other.path))
            #expect(FileVersion.otherVersionsOfItem(at: url)?.count == 1)  // copying keeps the version

            // Replacing where no item is creates it.
            let fresh = sandbox.folder.appendingPathComponent("restored.md")
            #expect(try version.replaceItem(at: fresh).path == fresh.path)
            #expect(sandbox.read(fresh) == "final text")

            // Moving out of the store removes the version.
            try Data("again".utf8).write(to: url)
            try version.replaceItem(at: url, options: .byMoving)
            #expect(sandbox.read(url) == "final text")
            #expect(FileVersion.otherVersionsOfItem(at: url) == [])
            #expect(!version.hasLocalContents)
        }
    }

    @Test func addingByMovingTakesTheContentsFile() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("item", to: "a.txt")
        let contents = try sandbox.write("incoming", to: "incoming.tmp")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: contents, options: .byMoving)
            #expect(!FileManager.default.fileExists(atPath: contents.path))
            #expect(sandbox.read(version.url) == "incoming")
            // Moving the item into its own store would delete it: refused, the item stays.
            VersionSandbox.expectError(.invalidArgument) { try FileVersion.addOfItem(at: url, withContentsOf: url, options: .byMoving) }
            #expect(sandbox.read(url) == "item")
        }
    }

    @Test func removingDeletesOneVersionAndRemoveOthersKeepsTheItem() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("now", to: "a.txt")
        try sandbox.run {
            let first = try FileVersion.addOfItem(at: url, withContentsOf: url)
            let second = try FileVersion.addOfItem(at: url, withContentsOf: url)
            let conflict = try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: url)
            try first.remove()
            #expect(!FileManager.default.fileExists(atPath: first.url.path))
            #expect(FileVersion.otherVersionsOfItem(at: url) == [second, conflict])
            VersionSandbox.expectError(.notFound) { try first.remove() }

            try FileVersion.removeOtherVersionsOfItem(at: url)
            #expect(FileVersion.otherVersionsOfItem(at: url) == [])
            #expect(FileVersion.unresolvedConflictVersionsOfItem(at: url) == [])
            #expect(sandbox.read(url) == "now")  // never the item itself (GNUstep deletes it)
            #expect(!second.hasLocalContents && !conflict.hasLocalContents)
            try FileVersion.removeOtherVersionsOfItem(at: url)  // nothing left: fine
            #expect(sandbox.leftoverTemporaryFiles() == [])
        }
    }

    @Test func theCurrentVersionCannotBeRemoved() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("keep me", to: "a.txt")
        try sandbox.run {
            let current = try #require(FileVersion.currentVersionOfItem(at: url))
            VersionSandbox.expectError(.invalidArgument) { try current.remove() }
            VersionSandbox.expectError(.invalidArgument) { try current.replaceItem(at: url, options: .byMoving) }
            #expect(sandbox.read(url) == "keep me")
            // Replacing with the current version copies the item.
            let copy = sandbox.folder.appendingPathComponent("copy.txt")
            try current.replaceItem(at: copy)
            #expect(sandbox.read(copy) == "keep me")
            #expect(try current.replaceItem(at: url).path == url.path)
        }
    }

    @Test func missingItemsAndUnknownVersionsAreNotFound() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("x", to: "a.txt")
        let missing = sandbox.folder.appendingPathComponent("missing.txt")
        try sandbox.run {
            let error = VersionSandbox.expectError(.notFound) { try FileVersion.addOfItem(at: missing, withContentsOf: url) }
            #expect(error?.message.contains(missing.path) == true)
            let noContents = VersionSandbox.expectError(.notFound) { try FileVersion.addOfItem(at: url, withContentsOf: missing) }
            #expect(noContents?.message.contains(missing.path) == true)
            VersionSandbox.expectError(.notFound) { try FileVersion.removeOtherVersionsOfItem(at: missing) }
            VersionSandbox.expectError(.unsupported) { try FileVersion.addOfItem(at: url, withContentsOf: sandbox.folder) }
            #expect(FileVersion.version(itemAt: url, forPersistentIdentifier: "no-such-version") == nil)
            let manifests = try sandbox.manifests()
            #expect(manifests.allSatisfy { ($0["versions"] as? [Any])?.isEmpty ?? true })
        }
    }

    @Test func relativePathsAreRefused() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("x", to: "a.txt")
        let relative = try #require(URL(string: "notes/a.txt"))
        try sandbox.run {
            VersionSandbox.expectError(.invalidArgument) { try FileVersion.addOfItem(at: relative, withContentsOf: url) }
            VersionSandbox.expectError(.invalidArgument) { try FileVersion.addOfItem(at: url, withContentsOf: relative) }
            VersionSandbox.expectError(.invalidArgument) { try FileVersion.addConflictVersion(ofItemAt: relative, withContentsOf: url) }
            VersionSandbox.expectError(.invalidArgument) { try FileVersion.removeOtherVersionsOfItem(at: relative) }
            let version = try FileVersion.addOfItem(at: url, withContentsOf: url)
            VersionSandbox.expectError(.invalidArgument) { try version.replaceItem(at: relative) }
            #expect(FileVersion.currentVersionOfItem(at: relative) == nil)
            #expect(FileVersion.otherVersionsOfItem(at: relative) == nil)
            #expect(FileVersion.version(itemAt: relative, forPersistentIdentifier: "current") == nil)
        }
    }

    @Test func damagedStoredContentChangesNothing() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("original", to: "a.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: url)
            try Data("tampered".utf8).write(to: version.url)
            try Data("current".utf8).write(to: url)
            VersionSandbox.expectError(.io) { try version.replaceItem(at: url) }
            #expect(sandbox.read(url) == "current")
            #expect(try FileManager.default.contentsOfDirectory(atPath: sandbox.folder.path) == ["a.txt"])
        }
    }

    @Test func concurrentAddsAreAllKept() async throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("shared", to: "a.txt")
        let ids = try await sandbox.run {
            try await withThrowingTaskGroup(of: String.self) { group in
                for _ in 0..<16 {
                    group.addTask { try FileVersion.addOfItem(at: url, withContentsOf: url).persistentIdentifier }
                }
                var ids: [String] = []
                for try await id in group { ids.append(id) }
                return ids
            }
        }
        try sandbox.run {
            let listed = Set(FileVersion.otherVersionsOfItem(at: url)?.map(\.persistentIdentifier) ?? [])
            #expect(listed == Set(ids))
            #expect(listed.count == 16)
            let manifests = try sandbox.manifests()
            #expect(manifests.count == 1)
        }
    }
}
