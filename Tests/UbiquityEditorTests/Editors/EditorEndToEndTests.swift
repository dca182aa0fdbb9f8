// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// The editor plugins end to end: real vim / nvim / emacs -nw in tmux on two devices, each with
/// a real `ubiq daemon` syncing a folder under /var/tmp through one real `ubiq serve`. The
/// bounded default is one vim round trip; UBIQUITY_EDITOR_TESTS=1 runs the rest (slow).
/// Every wait is a hang guard, never a timing assertion.
@Suite(.serialized) struct EditorEndToEndTests {
    /// The server, two devices with daemons, and `notes.txt` on both.
    final class Rig: Sendable {
        let scratch = EditorRig.scratch()
        let cloud: SyncRig.Cloud
        let a: EditorDevice
        let b: EditorDevice

        init(text: String = "one\n") throws {
            cloud = try SyncRig.Cloud()
            a = EditorDevice("alpha", cloud, scratch: scratch)
            b = EditorDevice("beta", cloud, scratch: scratch)
            try a.startDaemon()
            try b.startDaemon()
            try a.write("notes.txt", text)
            _ = EditorRig.eventually("B has notes.txt") { b.read("notes.txt") == text && a.syncStatus("notes.txt") == "uploaded" }
        }

        deinit {
            a.closeEditor()
            b.closeEditor()
            a.stopDaemon()
            b.stopDaemon()
            try? FileManager.default.removeItem(at: scratch)
        }
    }

    static func isState(_ state: String) -> ([String: Any]) -> Bool { { $0["state"] as? String == state } }
    static func isReload(of text: String) -> ([String: Any]) -> Bool {
        { $0["event"] as? String == "reloaded" && $0["text"] as? String == text }
    }

    /// Opens notes.txt in both editors and waits until both plugins show it uploaded.
    static func openBoth(_ rig: Rig, _ editorA: EditorDevice.Editor, _ editorB: EditorDevice.Editor, extraVimrcA: String = "") throws {
        try rig.a.open(editorA, "notes.txt", extraVimrc: extraVimrcA)
        try rig.b.open(editorB, "notes.txt")
        #expect(rig.a.waitForDump("A's plugin shows uploaded", isState("uploaded")) != nil, "\(rig.a.screen())")
        #expect(rig.b.waitForDump("B's plugin shows uploaded", isState("uploaded")) != nil, "\(rig.b.screen())")
    }

    /// Adds a first line on A (vim/nvim or emacs keys) and saves.
    /// Opens notes.txt in `editorA` on A and `editorB` on B, and with the server away saves a
    /// new first line in each (both saves stay local); the server comes back and one device loses.
    static func editBothWhileTheServerIsAway(_ rig: Rig, _ editorA: EditorDevice.Editor, _ lineA: String,
                                            _ editorB: EditorDevice.Editor, _ lineB: String) throws {
        try openBoth(rig, editorA, editorB)
        rig.cloud.stop()
        addFirstLine(rig.a, editorA, lineA)
        #expect(EditorRig.eventually("A saved") { rig.a.read("notes.txt") == lineA + "\none\n" })
        addFirstLine(rig.b, editorB, lineB)
        #expect(EditorRig.eventually("B saved") { rig.b.read("notes.txt") == lineB + "\none\n" })
        try rig.cloud.restart()
    }

    static func addFirstLine(_ device: EditorDevice, _ editor: EditorDevice.Editor, _ line: String) {
        if editor == .emacs {
            device.keys("M-<")
            device.type(line)
            device.keys("Enter")
        } else {
            device.keys("Escape")
            device.type("gg")
            device.type("O" + line)
            device.keys("Escape")
        }
        device.save()
    }

    @Test(.enabled(if: EditorRig.available("vim"), "needs vim and tmux\(EditorRig.missing("vim"))"))
    func vimSaveOnAReloadsTheBufferOnB() async throws {
        let rig = try Rig()
        let inode = FileStamp.of(rig.a.url("notes.txt").path)?.inode
        try Self.openBoth(rig, .vim, .vim)
        let before = rig.b.dumps().count
        Self.addFirstLine(rig.a, .vim, "two")
        #expect(rig.b.waitForDump("B's buffer reloads", after: before, Self.isReload(of: "two\none")) != nil, "\(rig.b.screen())")
        #expect(rig.a.read("notes.txt") == "two\none\n")
        #expect(FileStamp.of(rig.a.url("notes.txt").path)?.inode != inode, "vim saved by rename (not under /tmp)")
        #expect(EditorRig.eventually("B's status line shows it") { rig.b.screen().contains("[ubiq: uploaded]") }, "\(rig.b.screen())")
        // vim's probe file, backup and swap file never reach the server
        let items = try await rig.cloud.items()
        #expect(Set(items.keys) == ["notes.txt"], "\(items.keys)")
        #expect(!FileManager.default.fileExists(atPath: rig.b.url("4913").path))
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("vim"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("vim"))"))
    func unsavedChangesAreWarnedAboutNotReloaded() throws {
        let rig = try Rig()
        try Self.openBoth(rig, .vim, .vim)
        rig.b.keys("Escape")
        rig.b.type("Gomine")
        rig.b.keys("Escape")
        let before = rig.b.dumps().count
        Self.addFirstLine(rig.a, .vim, "theirs")
        let warned = rig.b.waitForDump("B warns", after: before) { $0["event"] as? String == "changedRemotely" }
        #expect(warned?["text"] as? String == "one\nmine" && warned?["modified"] as? Int == 1, "\(String(describing: warned))")
        #expect(rig.b.read("notes.txt") == "theirs\none\n", "the file has A's version")
        #expect(EditorRig.eventually("B's status line says so") { rig.b.screen().contains("changed remotely: :UbiquityDiff") }, "\(rig.b.screen())")
        #expect(rig.b.probe()?["text"] as? String == "one\nmine", "B's unsaved text is kept")
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("vim"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("vim"))"))
    func bothEditTheConflictSurfacesAndResolves() throws {
        let rig = try Rig()
        try Self.editBothWhileTheServerIsAway(rig, .vim, "from A", .vim, "from B")
        // both devices end up showing the conflict, so the loser is told by the content: the
        // server's version (the winner's) is on both disks once they converge
        var winnerOnDisk: String?
        #expect(EditorRig.eventually("the devices converge") {
            let text = rig.a.read("notes.txt")
            winnerOnDisk = text
            return text != nil && text == rig.b.read("notes.txt")
        })
        guard let winnerOnDisk else { return }
        let loser = winnerOnDisk == "from A\none\n" ? rig.b : rig.a
        let winner = loser === rig.a ? rig.b : rig.a
        #expect(EditorRig.eventually("the loser shows the conflict") { loser.dumps().contains(where: Self.isState("conflict")) })
        let winnerText = winner === rig.a ? "from A\none" : "from B\none"
        // the loser's buffer shows the server's version; its own is a conflict version
        #expect(loser.waitForDump("the loser reloads", Self.isReload(of: winnerText)) != nil, "\(loser.screen())")
        #expect(EditorRig.eventually("the loser's status line says conflict") { loser.screen().contains("[ubiq: conflict]") }, "\(loser.screen())")
        #expect(loser.syncStatus("notes.txt") == "in conflict")
        // the conflict version reaches the winner too: its buffer's status line says conflict
        #expect(winner.waitForDump("the winner shows the conflict", Self.isState("conflict")) != nil, "\(winner.screen())")
        #expect(EditorRig.eventually("the winner's status line says conflict") { winner.screen().contains("[ubiq: conflict]") }, "\(winner.screen())")
        #expect(EditorRig.eventually("the winner's daemon says in conflict") { winner.syncStatus("notes.txt") == "in conflict" })
        // the winner's :UbiquityVersions lists the loser's version (made on the loser's device)
        let loserName = loser === rig.a ? "alpha" : "beta"
        winner.command("UbiquityVersions")
        #expect(EditorRig.eventually("the winner lists the conflict version") {
            let screen = winner.screen()
            return screen.contains("versions of") && screen.contains("conflict") && screen.contains(loserName)
        }, "\(winner.screen())")
        // resolved from that list in the winner's editor (the device that did not make the version): settled on both
        let loserCount = loser.dumps().count, winnerCount = winner.dumps().count
        winner.command("UbiquityResolve")
        #expect(winner.waitForDump("resolved on the winner", after: winnerCount, Self.isState("uploaded")) != nil, "\(winner.screen())")
        #expect(loser.waitForDump("resolved on the loser", after: loserCount, Self.isState("uploaded")) != nil, "\(loser.screen())")
        #expect(EditorRig.eventually("the loser's status line says uploaded") { loser.screen().contains("[ubiq: uploaded]") }, "\(loser.screen())")
        #expect(EditorRig.eventually("both daemons say uploaded") {
            loser.syncStatus("notes.txt") == "uploaded" && winner.syncStatus("notes.txt") == "uploaded"
        })
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("nvim", "emacs"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("nvim", "emacs"))"))
    func aConflictSurfacesInNeovimAndEmacsAndResolvesFromEmacs() throws {
        let rig = try Rig()
        try Self.editBothWhileTheServerIsAway(rig, .nvim, "from neovim", .emacs, "from emacs")
        // whichever device lost, both editors show the conflict
        #expect(rig.a.waitForDump("neovim shows the conflict", Self.isState("conflict")) != nil, "\(rig.a.screen())")
        #expect(rig.b.waitForDump("emacs shows the conflict", Self.isState("conflict")) != nil, "\(rig.b.screen())")
        #expect(EditorRig.eventually("neovim's status line") { rig.a.screen().contains("[ubiq: conflict]") }, "\(rig.a.screen())")
        #expect(EditorRig.eventually("emacs's mode line") { rig.b.screen().contains("[ubiq: conflict]") }, "\(rig.b.screen())")
        // M-x ubiquity-resolve (keeping the current content) in emacs settles both
        let countA = rig.a.dumps().count, countB = rig.b.dumps().count
        rig.b.command("ubiquity-resolve")
        rig.b.keys("Enter")  // the prompt's default: current
        #expect(rig.b.waitForDump("resolved in emacs", after: countB, Self.isState("uploaded")) != nil, "\(rig.b.screen())")
        #expect(rig.a.waitForDump("resolved in neovim too", after: countA, Self.isState("uploaded")) != nil, "\(rig.a.screen())")
        #expect(EditorRig.eventually("both daemons say uploaded") {
            rig.a.syncStatus("notes.txt") == "uploaded" && rig.b.syncStatus("notes.txt") == "uploaded"
        })
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("vim"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("vim"))"))
    func aSkipBackupFileSavedInVimIsNeverUploaded() async throws {
        let rig = try Rig()
        try rig.a.write("secret.txt", "private\n")
        let exclude = try rig.a.device.run(["exclude", rig.a.url("secret.txt").path])
        #expect(exclude.status == 0, "\(exclude)")
        #expect(EditorRig.eventually("A's daemon knows it is excluded") { rig.a.syncStatus("secret.txt") == "excluded" })
        try rig.a.open(.vim, "secret.txt")
        #expect(rig.a.waitForDump("the plugin shows excluded", Self.isState("excluded")) != nil, "\(rig.a.screen())")
        rig.a.keys("Escape")
        rig.a.type("Gostill private")
        rig.a.keys("Escape")
        rig.a.save()
        #expect(EditorRig.eventually("saved") { rig.a.read("secret.txt") == "private\nstill private\n" })
        #expect(try BackupExclusion.isExcluded(rig.a.url("secret.txt").path), "the attribute is kept")
        // a later change syncs: by then the save was looked at, and not uploaded
        try rig.a.write("marker.txt", "m")
        #expect(EditorRig.eventually("the marker reaches B") { rig.b.read("marker.txt") == "m" })
        let items = try await rig.cloud.items()
        #expect(items["secret.txt"] == nil && rig.b.read("secret.txt") == nil, "\(items.keys)")
        #expect(rig.a.syncStatus("secret.txt") == "excluded")
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("vim"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("vim"))"))
    func vimKilledMidSaveUploadsNoPartialFile() async throws {
        let rig = try Rig()
        let flag = rig.a.base.appendingPathComponent("in-save")
        // after the plugin's BufWritePre (registered later, at VimEnter): write half the file and
        // stall, as a save cut short by a kill
        let slowSave = """
            autocmd VimEnter * autocmd BufWritePre * call writefile(['tw'], expand('<afile>:p')) | call writefile([], '\(flag.path)') | sleep 120
            """
        try Self.openBoth(rig, .vim, .vim, extraVimrcA: slowSave)
        let hash = try await rig.cloud.items()["notes.txt"]?.hash
        Self.addFirstLine(rig.a, .vim, "two")
        #expect(EditorRig.eventually("A is mid-save") { FileManager.default.fileExists(atPath: flag.path) })
        #expect(rig.a.read("notes.txt") == "tw\n")
        let pid = try #require(rig.a.editorPID())
        #expect(kill(pid, SIGKILL) == 0)
        #expect(EditorRig.eventually("the last saved content is back") { rig.a.read("notes.txt") == "one\n" })
        #expect(rig.a.read("notes.txt.interrupted~") == "tw\n", "what the save left is kept aside, never uploaded")
        try rig.a.write("marker.txt", "m")
        #expect(EditorRig.eventually("the marker reaches B") { rig.b.read("marker.txt") == "m" })
        let items = try await rig.cloud.items()
        #expect(items["notes.txt"]?.hash == hash, "no partial content was uploaded")
        #expect(items["notes.txt.interrupted~"] == nil && rig.b.read("notes.txt") == "one\n")
        let names = (try? FileManager.default.contentsOfDirectory(atPath: rig.a.folder.path)) ?? []
        #expect(!names.contains { $0.hasPrefix(".ubiq-tmp-editor-") }, "\(names)")
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("nvim", "vim"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("nvim", "vim"))"))
    func neovimSaveReloadsVimOnTheOtherDevice() throws {
        let rig = try Rig()
        try Self.openBoth(rig, .nvim, .vim)
        let before = rig.b.dumps().count
        Self.addFirstLine(rig.a, .nvim, "from neovim")
        #expect(rig.b.waitForDump("B's vim reloads", after: before, Self.isReload(of: "from neovim\none")) != nil, "\(rig.b.screen())")
        // and back: vim's save reloads neovim
        let count = rig.a.dumps().count
        Self.addFirstLine(rig.b, .vim, "from vim")
        #expect(rig.a.waitForDump("A's neovim reloads", after: count, Self.isReload(of: "from vim\nfrom neovim\none")) != nil, "\(rig.a.screen())")
        #expect(EditorRig.eventually("neovim's status line") { rig.a.screen().contains("[ubiq: uploaded]") }, "\(rig.a.screen())")
    }

    @Test(.enabled(if: EditorRig.fullSuite && EditorRig.available("emacs"), "UBIQUITY_EDITOR_TESTS=1 runs it\(EditorRig.missing("emacs"))"))
    func emacsSaveRevertsEmacsOnTheOtherDevice() async throws {
        let rig = try Rig()
        try Self.openBoth(rig, .emacs, .emacs)
        let before = rig.b.dumps().count
        Self.addFirstLine(rig.a, .emacs, "from emacs")
        #expect(rig.b.waitForDump("B's emacs reverts", after: before, Self.isReload(of: "from emacs\none")) != nil, "\(rig.b.screen())")
        #expect(EditorRig.eventually("the mode line shows it") { rig.b.screen().contains("[ubiq: uploaded]") }, "\(rig.b.screen())")
        // emacs's lock link, auto-save and backup files never reach the server
        let items = try await rig.cloud.items()
        #expect(Set(items.keys) == ["notes.txt"], "\(items.keys)")
        // unsaved changes on B: a warning, no revert
        rig.b.type("mine ")
        let count = rig.b.dumps().count
        Self.addFirstLine(rig.a, .emacs, "again")
        let warned = rig.b.waitForDump("B warns", after: count) { $0["event"] as? String == "changedRemotely" }
        #expect(warned?["modified"] as? Int == 1 && (warned?["text"] as? String)?.contains("mine") == true, "\(String(describing: warned))")
    }
}
