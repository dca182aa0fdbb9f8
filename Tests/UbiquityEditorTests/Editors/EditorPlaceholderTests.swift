// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// Opening an evicted file (only its stub `.NAME.icloud` is there) in an editor downloads it
/// first: the buffer holds the content, not an empty new file. Real vim / nvim / emacs -nw in tmux with the plugin,
/// a real `ubiq daemon` and `ubiq serve`. The vim case runs by default; UBIQUITY_EDITOR_TESTS=1
/// runs the others. Every wait is a hang guard, never a timing assertion.
@Suite(.serialized) struct EditorPlaceholderTests {
    @Test(.enabled(if: EditorRig.available("vim"), "needs vim and tmux\(EditorRig.missing("vim"))"))
    func vimOpeningAnEvictedFileDownloadsItFirst() throws {
        try Self.openEvicted(.vim)
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("nvim"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("nvim"))"))
    func neovimOpeningAnEvictedFileDownloadsItFirst() throws {
        try Self.openEvicted(.nvim)
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("emacs"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("emacs"))"))
    func emacsVisitingAnEvictedFileDownloadsItFirst() throws {
        try Self.openEvicted(.emacs)
    }

    static func openEvicted(_ editor: EditorDevice.Editor) throws {
        let scratch = EditorRig.scratch()
        defer { try? FileManager.default.removeItem(at: scratch) }
        let cloud = try SyncRig.Cloud()
        let a = EditorDevice("alpha", cloud, scratch: scratch)
        try a.startDaemon()
        defer {
            a.closeEditor()
            a.stopDaemon()
        }
        let text = (1...300).map { "line \($0) of the evicted notes" }.joined(separator: "\n")
        try a.write("notes.txt", text + "\n")
        #expect(EditorRig.eventually("notes.txt is uploaded") { a.syncStatus("notes.txt") == "uploaded" })
        let path = a.url("notes.txt").path
        let evict = try a.device.run(["evict", path])
        #expect(evict.status == 0, "\(evict)")
        #expect(Placeholder.isEvicted(path), "only its stub is there")

        try a.open(editor, "notes.txt")
        #expect(a.waitForDump("the plugin shows uploaded", EditorEndToEndTests.isState("uploaded")) != nil, "\(a.screen())")
        let probe = a.probe()
        #expect(probe?["text"] as? String == text, "the buffer holds the content: \(a.screen())")
        #expect(probe?["modified"] as? Int == 0)
        #expect(!Placeholder.isEvicted(path) && a.read("notes.txt") == text + "\n", "downloaded in place")
    }
}
