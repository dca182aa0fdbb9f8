// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

@Suite("FileVersion: versions follow their item")
struct FileVersionIdentityTests {
    private static let identityAttribute = "user.ubiquity.item-id"

    @Test func versionsFollowAPlainRename() throws {
        let sandbox = try VersionSandbox()
        let old = try sandbox.write("v1", to: "a.txt")
        let new = sandbox.folder.appendingPathComponent("b.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: old, withContentsOf: old)
            try FileManager.default.moveItem(at: old, to: new)  // not coordinated: the attribute follows
            #expect(FileVersion.otherVersionsOfItem(at: new) == [version])
            #expect(FileVersion.otherVersionsOfItem(at: old) == nil)
            // A new file at the old path does not inherit them once the item has been seen moved.
            _ = try FileVersion.addOfItem(at: new, withContentsOf: new)
            try sandbox.write("new file", to: "a.txt")
            #expect(FileVersion.otherVersionsOfItem(at: old) == [])
        }
    }

    @Test func versionsFollowACoordinatedRenameWithoutTheAttribute() throws {
        let sandbox = try VersionSandbox()
        let old = try sandbox.write("v1", to: "a.txt")
        let new = sandbox.folder.appendingPathComponent("renamed.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: old, withContentsOf: old)
            #expect(try ExtendedAttributes.value(Self.identityAttribute, at: old.path) != nil)
            // As on a file system without user attributes: only the path index links the item.
            try ExtendedAttributes.removeValue(for: Self.identityAttribute, at: old.path)
            #expect(FileVersion.otherVersionsOfItem(at: old) == [version])

            let coordinator = FileCoordinator()
            try coordinator.coordinate(writingItemAt: old, options: .forMoving, writingItemAt: new, options: .forReplacing) { from, to in
                try FileManager.default.moveItem(at: from, to: to)
                coordinator.item(at: from, didMoveTo: to)
            }
            #expect(FileVersion.otherVersionsOfItem(at: new) == [version])
            #expect(try sandbox.manifests().first?["path"] as? String == new.path)
        }
    }

    @Test func versionsFollowTheirFolderWhenItMoves() throws {
        let sandbox = try VersionSandbox()
        let old = try sandbox.write("v1", to: "Project/notes.txt")
        let folder = sandbox.folder.appendingPathComponent("Project")
        let movedFolder = sandbox.folder.appendingPathComponent("Archive")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: old, withContentsOf: old)
            try ExtendedAttributes.removeValue(for: Self.identityAttribute, at: old.path)
            try FileManager.default.moveItem(at: folder, to: movedFolder)
            let new = movedFolder.appendingPathComponent("notes.txt")
            #expect(FileVersion.otherVersionsOfItem(at: new) == [])  // nothing links it yet
            FileCoordinator().item(at: folder, didMoveTo: movedFolder)
            #expect(FileVersion.otherVersionsOfItem(at: new) == [version])
        }
    }

    @Test func versionsSurviveASafeSaveOfTheItem() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("v1", to: "a.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: url)
            let before = FileStamp.of(url.path)
            try SafeSave.write(Data("v2".utf8), to: url.path)
            #expect(FileStamp.of(url.path)?.inode != before?.inode)  // a new file took its place
            #expect(try ExtendedAttributes.value(Self.identityAttribute, at: url.path) != nil)
            #expect(FileVersion.otherVersionsOfItem(at: url) == [version])
            #expect(sandbox.read(version.url) == "v1")
        }
    }

    @Test func replacingKeepsTheSkipBackupAttributeAndTheIdentity() throws {
        let sandbox = try VersionSandbox()
        let url = try sandbox.write("v1", to: "a.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: url, withContentsOf: url)
            try Data("v2".utf8).write(to: url)
            try BackupExclusion.setExcluded(true, url.path)
            try version.replaceItem(at: url)
            #expect(sandbox.read(url) == "v1")
            #expect(try BackupExclusion.isExcluded(url.path))
            #expect(FileVersion.otherVersionsOfItem(at: url) == [version])
        }
    }

    @Test func aCopyDoesNotShareTheOriginalsVersions() throws {
        let sandbox = try VersionSandbox()
        let original = try sandbox.write("v1", to: "a.txt")
        let copy = sandbox.folder.appendingPathComponent("a copy.txt")
        try sandbox.run {
            let version = try FileVersion.addOfItem(at: original, withContentsOf: original)
            try FileManager.default.copyItem(at: original, to: copy)
            try ExtendedAttributes.copyUserAttributes(from: original.path, to: copy.path)  // like `cp -a`
            #expect(FileVersion.otherVersionsOfItem(at: copy) == [])
            let copyVersion = try FileVersion.addOfItem(at: copy, withContentsOf: copy)
            #expect(FileVersion.otherVersionsOfItem(at: copy) == [copyVersion])
            #expect(FileVersion.otherVersionsOfItem(at: original) == [version])
            #expect(try ExtendedAttributes.value(Self.identityAttribute, at: copy.path)
                    != ExtendedAttributes.value(Self.identityAttribute, at: original.path))
        }
    }
}
