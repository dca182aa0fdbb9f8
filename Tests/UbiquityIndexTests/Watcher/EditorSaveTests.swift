import Foundation
import Glibc
import Testing
import UbiquityCore
@testable import UbiquityIndex

/// Editor save patterns replayed with real system calls: each is one change of the document.
@Suite struct EditorSaveTests {
    /// A fixture with `doc.txt` in place and everything before settled.
    func prepared() async throws -> (WatchFixture, Int) {
        let fixture = try WatchFixture()
        try WatcherFS.writeFile(fixture.path("doc.txt"), "original")
        try await fixture.quiesce()
        return (fixture, fixture.log.changes.count)
    }

    @Test func vimDefaultSave() async throws {
        let (fixture, mark) = try await prepared()
        defer { fixture.finish() }
        let doc = fixture.path("doc.txt")
        try WatcherFS.writeFile(fixture.path(".doc.txt.swp"), "swap")
        try WatcherFS.touch(fixture.path("4913"))
        try WatcherFS.remove(fixture.path("4913"))
        try WatcherFS.move(doc, doc + "~")
        try WatcherFS.writeFile(doc, "edited by vim")
        guard chmod(doc, 0o644) == 0 else { throw UbiquityError.posix("chmod") }
        try WatcherFS.remove(doc + "~")
        try WatcherFS.writeFile(fixture.path(".doc.txt.swp"), "swap 2")
        try WatcherFS.remove(fixture.path(".doc.txt.swp"))
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark) == [.changed(doc)])
    }

    @Test func temporaryThenRenameSave() async throws {
        let (fixture, mark) = try await prepared()
        defer { fixture.finish() }
        let doc = fixture.path("doc.txt")
        let temporary = fixture.path(SafeSave.temporaryPrefix + "doc.txt-1234")
        try WatcherFS.writeFile(temporary, "new content")
        try WatcherFS.move(temporary, doc)
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark) == [.changed(doc)])

        let mark2 = fixture.log.changes.count
        try WatcherFS.writeFile(doc + ".new", "newer content")
        try WatcherFS.move(doc + ".new", doc)
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark2) == [.changed(doc)])
    }

    @Test func emacsSave() async throws {
        let (fixture, mark) = try await prepared()
        defer { fixture.finish() }
        let doc = fixture.path("doc.txt")
        guard symlink("user@host.1234:5678", fixture.path(".#doc.txt")) == 0 else { throw UbiquityError.posix("symlink") }
        try WatcherFS.writeFile(fixture.path("#doc.txt#"), "auto-save")
        try WatcherFS.move(doc, doc + "~")
        try WatcherFS.writeFile(doc, "edited by emacs")
        try WatcherFS.remove(fixture.path("#doc.txt#"))
        try WatcherFS.remove(fixture.path(".#doc.txt"))
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark) == [.changed(doc)])
    }

    @Test func renameToOrdinaryBackupThenWrite() async throws {
        let (fixture, mark) = try await prepared()
        defer { fixture.finish() }
        let doc = fixture.path("doc.txt")
        try WatcherFS.move(doc, fixture.path("doc.bak"))
        try WatcherFS.writeFile(doc, "rewritten")
        try await fixture.quiesce()
        #expect(fixture.changes(since: mark) == [.moved(from: doc, to: fixture.path("doc.bak")), .changed(doc)])
    }
}
