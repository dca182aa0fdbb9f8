// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityStore
@testable import UbiquitySync

/// The app-container sync hears of containers from the index's deltas (the kernel tells, issue
/// 25): only a folder directly in the containers folder coming, going or moving counts, and a
/// container's info file (its display name).
@Suite struct ContainersFolderChangesTests {
    static func record(_ path: String, folder: Bool) -> IndexRecord {
        IndexRecord(path: path, name: (path as NSString).lastPathComponent, size: 0, creationDate: nil, contentChangeDate: Date(),
                    contentType: folder ? "public.folder" : "public.data", isDirectory: folder, inode: 1, mtimeNanoseconds: 0, ctimeNanoseconds: 0)
    }

    @Test func onlyFoldersDirectlyInTheContainersFolderCount() {
        let parent = "/home/mei/.local/share/ubiquity/containers"
        func counts(_ delta: IndexDelta) -> Bool { IndexService.changesChildFolders(of: parent, infoFile: ".ubiquity-container.json", delta) }
        #expect(counts(IndexDelta(added: [Self.record(parent + "/iCloud~org~example~Notes", folder: true)])))
        #expect(counts(IndexDelta(removed: [parent + "/iCloud~org~example~Notes"])))
        #expect(counts(IndexDelta(moved: [MovedRecord(from: parent + "/iCloud~a~b", record: Self.record("/elsewhere/x", folder: true))])))
        #expect(counts(IndexDelta(moved: [MovedRecord(from: "/elsewhere/x", record: Self.record(parent + "/iCloud~a~b", folder: true))])))
        #expect(!counts(IndexDelta(added: [Self.record(parent + "/iCloud~org~example~Notes/Documents", folder: true)])))
        #expect(!counts(IndexDelta(added: [Self.record(parent + "/stray.txt", folder: false)])))
        #expect(!counts(IndexDelta(changed: [Self.record(parent + "/iCloud~org~example~Notes", folder: true)])))
        #expect(!counts(IndexDelta(added: [Self.record(parent + "-other/iCloud~x~y", folder: true)])))
        #expect(!counts(IndexDelta(removed: [parent + "/iCloud~org~example~Notes/Documents/a.txt"])))
        // a display name declared in a container's info file
        #expect(counts(IndexDelta(changed: [Self.record(parent + "/iCloud~a~b/.ubiquity-container.json", folder: false)])))
        #expect(counts(IndexDelta(moved: [MovedRecord(from: parent + "/iCloud~a~b/.ubiq-tmp-1", record: Self.record(parent + "/iCloud~a~b/.ubiquity-container.json", folder: false))])))
        #expect(!counts(IndexDelta(changed: [Self.record(parent + "/iCloud~a~b/Documents/.ubiquity-container.json", folder: false)])))
    }
}
