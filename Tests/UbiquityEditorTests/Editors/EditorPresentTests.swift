// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
import UbiquityCore

/// `ubiq present --editor`, the editor plugins' job protocol, driven as a plugin would (no
/// editor): coordinated saves, save requests, the sync state, a save cut short, bad input.
/// Real `ubiq daemon` and `ubiq present` processes; files under /var/tmp.
@Suite(.serialized) struct EditorPresentTests {
    /// A daemon, a scratch folder and a file in it.
    final class Rig: Sendable {
        let device = Device()
        let daemon: Subprocess
        let scratch = EditorRig.scratch()
        var file: URL { scratch.appendingPathComponent("notes.txt") }

        init() throws {
            daemon = try device.startDaemon()
            try Data("one\n".utf8).write(to: file)
        }

        /// `ubiq present --editor FILE`, after its ready line.
        func editorJob(_ extra: [String] = []) throws -> Subprocess {
            let job = try device.start(Binaries.ubiq, ["present", "--editor", file.path] + extra)
            #expect(job.waitForLine(containing: "\"ready\"") != nil, "\(job.output)")
            return job
        }

        func read(_ url: URL) -> String? { (try? Data(contentsOf: url)).map { String(decoding: $0, as: UTF8.self) } }

        /// Names in the scratch folder.
        func names() -> [String] { (try? FileManager.default.contentsOfDirectory(atPath: scratch.path)) ?? [] }

        /// vim's default save: rename to a backup, write a new file, delete the backup.
        func saveByRename(_ text: String) throws {
            let backup = file.path + "~"
            #expect(rename(file.path, backup) == 0)
            try Data(text.utf8).write(to: file)
            unlink(backup)
        }

        deinit {
            daemon.kill(SIGTERM)
            try? FileManager.default.removeItem(at: scratch)
        }
    }

    static func json(_ line: String?) -> [String: Any] {
        guard let line, let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { return [:] }
        return object
    }

    @Test func aSaveIsACoordinatedWriteOtherPresentersHearOf() throws {
        let rig = try Rig()
        let job = try rig.editorJob()
        defer { job.kill() }
        let other = try rig.device.present(rig.file)
        defer { other.kill() }

        job.send(#"{"cmd":"begin-write","id":1,"timeout":30}"#)
        let granted = Self.json(job.waitForLine(containing: #""event":"granted""#))
        #expect(granted["id"] as? Int == 1 && granted["excluded"] as? Bool == false, "\(job.output)")
        #expect(other.waitForLine(containing: "relinquishToWriter") != nil, "\(other.output)")
        #expect(rig.names().contains { $0.hasPrefix(".ubiq-tmp-editor-notes.txt-") }, "the last saved content is kept while saving")
        try rig.saveByRename("two\n")
        job.send(#"{"cmd":"end-write","id":1}"#)
        #expect(job.waitForLine(containing: #""event":"ended""#) != nil, "\(job.output)")
        #expect(other.waitForLine(containing: "\"didChange\"") != nil, "\(other.output)")
        #expect(rig.read(rig.file) == "two\n")
        #expect(rig.names().sorted() == ["notes.txt"], "no snapshot or backup left")
        // the editor's own presenter is the writer's: it is not told of its own save
        job.send(#"{"cmd":"state"}"#)
        #expect(job.waitForLine(containing: #""event":"state""#) != nil)
        #expect(!job.output.contains { $0.contains("didChange") || $0.contains("relinquish") }, "\(job.output)")
    }

    @Test func anotherReadAsksTheEditorToSaveFirst() throws {
        let rig = try Rig()
        let job = try rig.editorJob()
        defer { job.kill() }
        let reader = try rig.device.start(Binaries.ubiq, ["coordinate", "read", rig.file.path, "--", "cat", rig.file.path])
        let request = Self.json(job.waitForLine(containing: "savePresentedItemChanges"))
        let id = try #require(request["id"] as? Int, "\(job.output)")
        // relinquish messages are answered by the job itself and carry no id
        #expect(job.output.filter { $0.contains("relinquishToReader") }.allSatisfy { Self.json($0)["id"] == nil })
        try Data("saved first\n".utf8).write(to: rig.file)  // the editor saves its buffer
        job.send(#"{"ack":\#(id)}"#)
        #expect(reader.wait(seconds: 60) == 0)
        #expect(reader.output == ["saved first"])
    }

    @Test func anEditorGoneMidSaveLeavesTheLastSavedContent() throws {
        let rig = try Rig()
        let job = try rig.editorJob()
        job.send(#"{"cmd":"begin-write","id":1}"#)
        #expect(job.waitForLine(containing: #""event":"granted""#) != nil, "\(job.output)")
        // the editor truncated the file and wrote half of it, then died
        try Data("tw".utf8).write(to: rig.file)
        job.closeInput()
        #expect(job.wait(seconds: 60) == 0)
        #expect(rig.read(rig.file) == "one\n")
        #expect(rig.read(URL(fileURLWithPath: rig.file.path + ".interrupted~")) == "tw", "what the save left is kept aside")
        #expect(!rig.names().contains { $0.hasPrefix(".ubiq-tmp-") }, "\(rig.names())")
    }

    @Test func aFailedSaveIsUndone() throws {
        let rig = try Rig()
        let job = try rig.editorJob()
        defer { job.kill() }
        job.send(#"{"cmd":"begin-write","id":4}"#)
        #expect(job.waitForLine(containing: #""event":"granted""#) != nil)
        try Data("half".utf8).write(to: rig.file)
        job.send(#"{"cmd":"abort-write","id":4,"reason":"disk full"}"#)
        let restored = Self.json(job.waitForLine(containing: #""event":"restored""#))
        #expect(restored["reason"] as? String == "disk full", "\(job.output)")
        #expect(rig.read(rig.file) == "one\n")
    }

    @Test func aSaveByRenameKeepsTheSkipBackupAttribute() throws {
        let rig = try Rig()
        try BackupExclusion.setExcluded(true, rig.file.path)
        let job = try rig.editorJob()
        defer { job.kill() }
        job.send(#"{"cmd":"begin-write","id":2}"#)
        let granted = Self.json(job.waitForLine(containing: #""event":"granted""#))
        #expect(granted["excluded"] as? Bool == true, "the plugin saves in place when it knows")
        let inode = FileStamp.of(rig.file.path)?.inode
        try rig.saveByRename("secret\n")
        #expect(FileStamp.of(rig.file.path)?.inode != inode)
        #expect(try BackupExclusion.isExcluded(rig.file.path) == false, "a save by rename drops the attribute")
        job.send(#"{"cmd":"end-write","id":2}"#)
        let ended = Self.json(job.waitForLine(containing: #""event":"ended""#))
        #expect(ended["restoredSkipBackup"] as? Bool == true, "\(job.output)")
        #expect(try BackupExclusion.isExcluded(rig.file.path) == true)
    }

    @Test func stateAndBadInput() throws {
        let rig = try Rig()
        let job = try rig.editorJob()
        defer { job.kill() }
        #expect(Self.json(job.output.first)["synced"] as? Bool == false)
        job.send(#"{"cmd":"state"}"#)
        let state = Self.json(job.waitForLine(containing: #""event":"state""#))
        #expect(state["exists"] as? Bool == true && state["conflicts"] as? Int == 0 && state.keys.contains("sync"), "\(state)")
        job.send(#"{"cmd":"fly"}"#)
        let unknown = Self.json(job.waitForLine(containing: "unknown command"))
        #expect((unknown["error"] as? String)?.contains("begin-write") == true, "the error names what is expected")
        job.send(#"{"cmd":"end-write","id":9}"#)
        #expect(job.waitForLine(containing: "no write 9 in progress") != nil)
        job.send("not json")
        job.send(#"{"cmd":"begin-write","id":3}"#)
        #expect(job.waitForLine(containing: #""event":"granted""#) != nil, "bad lines lose nothing")
        job.send(#"{"cmd":"begin-write","id":5}"#)
        #expect(job.waitForLine(containing: "write 3 is still in progress") != nil)
        job.send(#"{"cmd":"end-write","id":3}"#)
        #expect(job.waitForLine(containing: #""event":"ended""#) != nil)

        // outside a synced folder, --only-synced says so and exits
        let only = try rig.device.run(["present", "--editor", "--only-synced", rig.file.path])
        #expect(only.status == 0 && Self.json(only.stdout.trimmingCharacters(in: .whitespacesAndNewlines))["synced"] as? Bool == false, "\(only)")
        let both = try rig.device.run(["present", "--editor", "--auto-ack", rig.file.path])
        #expect(both.status == 64 && both.stderr.contains("--editor and --auto-ack"), "\(both)")
        let interval = try rig.device.run(["present", "--editor", "--state-interval", "0", rig.file.path])
        #expect(interval.status == 64 && interval.stderr.contains("--state-interval"), "\(interval)")
    }
}
