// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
@testable import UbiquitySync

/// The per-item sync decision as a pure function: journal state + local stat (+ hash) + remote
/// record → upload, download, conflict, rename or nothing.
@Suite struct SyncDecisionTests {
    static func stat(_ kind: SyncItemKind = .file, size: Int64 = 5, mtime: Int64 = 1_000, inode: UInt64 = 7, mode: UInt32 = 0o644) -> SyncStat {
        SyncStat(kind: kind, size: size, modifiedNanoseconds: mtime, inode: inode, mode: mode)
    }

    static func entry(path: String = "a.txt", hash: String = "h1", tag: String? = "t1", stat: SyncStat = stat()) -> JournalEntry {
        JournalEntry(id: "ID", path: path, stat: stat, contentHash: hash, changeTag: tag)
    }

    static func remote(path: String = "a.txt", hash: String = "h2", tag: String = "t2", kind: SyncItemKind = .file, mode: UInt32 = 0o644) -> RemoteItem {
        RemoteItem(id: "ID", changeTag: tag, path: path, kind: kind, size: 5, contentHash: hash, mode: mode)
    }

    @Test func ownChangeComingBackIsNothing() {
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: Self.stat(), localHash: nil, remote: Self.remote(hash: "h1", tag: "t1")) == .nothing)
    }

    @Test func versionsJournaledAlreadyAreNotJudged() {
        // its own upload coming back: the journal has the fetched tag
        #expect(SyncDecision.isAlreadyApplied(Self.remote(tag: "t1"), journaledTag: "t1"))
        // another device's later version, an unknown record, an entry never confirmed, a record without a tag: judged
        #expect(!SyncDecision.isAlreadyApplied(Self.remote(tag: "t2"), journaledTag: "t1"))
        #expect(!SyncDecision.isAlreadyApplied(Self.remote(tag: "t1"), journaledTag: nil))
        #expect(!SyncDecision.isAlreadyApplied(RemoteItem(id: "ID", changeTag: nil, path: "a.txt", kind: .file), journaledTag: "t1"))
        // whenever it is dropped, judging it would have done nothing, whatever the local item is now
        for local in [Self.stat(), Self.stat(size: 9), Self.stat(.folder), nil] as [SyncStat?] {
            for entry in [Self.entry(tag: "t1"), Self.entry(path: "old.txt", hash: "h9", tag: "t1")] {
                let remote = Self.remote(tag: "t1")
                #expect(SyncDecision.isAlreadyApplied(remote, journaledTag: entry.changeTag))
                #expect(SyncDecision.remoteChange(entry: entry, local: local, localHash: "hx", remote: remote) == .nothing)
            }
        }
    }

    @Test func splitKeepsTheOrderOfTheRecordsToJudge() {
        func item(_ id: String, _ tag: String?) -> (RemoteItem, Int) {
            (RemoteItem(id: id, changeTag: tag, path: id + ".txt", kind: .file), Int(id.dropFirst()) ?? 0)
        }
        let items = [item("r1", "a"), item("r2", "b"), item("r3", "c"), item("r4", nil), item("r5", "e")]
        let split = SyncDecision.splitAlreadyApplied(items, journaledTags: ["r1": "a", "r2": "x", "r4": "d", "r5": "e", "r9": "z"])
        #expect(split.judge.map(\.0.id) == ["r2", "r3", "r4"])
        #expect(split.judge.map(\.1) == [2, 3, 4])
        #expect(split.applied.map(\.id) == ["r1", "r5"])
        #expect(SyncDecision.splitAlreadyApplied(items, journaledTags: [:]).judge.count == 5)
    }

    /// Killed between a save and the journal write of its answer: the record that comes back is
    /// this device's own upload when it carries the journaled size and modification time.
    @Test func anUnconfirmedEntrysOwnUploadIsJudgedAsSynced() {
        let pending = Self.entry(hash: "", tag: nil, stat: Self.stat(size: 5, mtime: 3_000_000_000))
        let own = RemoteItem(id: "ID", changeTag: "t1", path: "a.txt", kind: .file, size: 5, modifiedMilliseconds: 3_000, contentHash: "h1")
        let judged = SyncDecision.judgedEntry(pending, remote: own)
        #expect(judged?.contentHash == "h1" && judged?.changeTag == nil)
        // deleted here since: the delete wins (before: downloaded again)
        #expect(SyncDecision.remoteChange(entry: judged, local: nil, localHash: nil, remote: own) == .deleteRemote)
        // edited here since: the edit is uploaded later (before: a conflict)
        #expect(SyncDecision.remoteChange(entry: judged, local: Self.stat(size: 9, mtime: 4_000_000_000), localHash: "h9", remote: own)
                == .apply(move: false, content: false, mode: false))
        // unchanged: the version is recorded, nothing is downloaded
        #expect(SyncDecision.remoteChange(entry: judged, local: pending.stat, localHash: nil, remote: own) == .apply(move: false, content: false, mode: false))
        // another device's version (other size or time), a folder: judged as unknown, as before
        var other = own
        other.modifiedMilliseconds = 3_001
        #expect(SyncDecision.judgedEntry(pending, remote: other) == nil)
        other = own
        other.size = 6
        #expect(SyncDecision.judgedEntry(pending, remote: other) == nil)
        #expect(SyncDecision.judgedEntry(Self.entry(hash: "", tag: nil, stat: Self.stat(.folder)), remote: Self.remote(kind: .folder)) == nil)
        // a confirmed entry is itself
        #expect(SyncDecision.judgedEntry(Self.entry(), remote: own) == Self.entry())
    }

    @Test func newRemoteItemIsDownloaded() {
        #expect(SyncDecision.remoteChange(entry: nil, local: nil, localHash: nil, remote: Self.remote()) == .download)
    }

    @Test func newRemoteItemOverAnUnsyncedLocalFile() {
        // the same content: adopt; other content: a conflict (nothing is overwritten)
        #expect(SyncDecision.remoteChange(entry: nil, local: Self.stat(), localHash: "h2", remote: Self.remote()) == .adopt)
        #expect(SyncDecision.remoteChange(entry: nil, local: Self.stat(), localHash: "other", remote: Self.remote()) == .conflict)
        #expect(SyncDecision.remoteChange(entry: nil, local: Self.stat(.folder), localHash: nil, remote: Self.remote(hash: "", kind: .folder)) == .adopt)
    }

    @Test func remoteEditOfAnUnchangedFileReplacesIt() {
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: Self.stat(), localHash: nil, remote: Self.remote())
                == .apply(move: false, content: true, mode: false))
    }

    @Test func remoteRenameMovesWithoutDownloading() {
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: Self.stat(), localHash: nil, remote: Self.remote(path: "b.txt", hash: "h1"))
                == .apply(move: true, content: false, mode: false))
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: Self.stat(), localHash: nil, remote: Self.remote(hash: "h1", mode: 0o600))
                == .apply(move: false, content: false, mode: true))
    }

    @Test func bothEditedIsAConflictUnlessTheContentIsTheSame() {
        let edited = Self.stat(size: 9, mtime: 2_000)
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: edited, localHash: "mine", remote: Self.remote()) == .conflict)
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: edited, localHash: "h2", remote: Self.remote()) == .adopt)
    }

    /// A file whose stat moved but whose content is the journaled one (touched, saved again with
    /// the same bytes, or journaled with a stat a moment off) is not changed here: a remote edit
    /// replaces it, with no conflict version of content the server already had.
    @Test func aStatOnlyChangeIsNoConflict() {
        let touched = Self.stat(size: 5, mtime: 3_000)
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: touched, localHash: "h1", remote: Self.remote())
                == .apply(move: false, content: true, mode: false))
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: touched, localHash: "h1", remote: Self.remote(path: "b.txt"))
                == .apply(move: true, content: true, mode: false))
        // other content is still a conflict
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: touched, localHash: "mine", remote: Self.remote()) == .conflict)
    }

    @Test func localEditAndRemoteRenameKeepsTheEdit() {
        let edited = Self.stat(size: 9, mtime: 2_000)
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: edited, localHash: "mine", remote: Self.remote(path: "b.txt", hash: "h1"))
                == .apply(move: true, content: false, mode: false))
    }

    @Test func deleteVersusEditKeepsTheEdit() {
        // deleted here, edited there: download the edit; deleted here, only renamed there: delete
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: nil, localHash: nil, remote: Self.remote()) == .download)
        #expect(SyncDecision.remoteChange(entry: Self.entry(), local: nil, localHash: nil, remote: Self.remote(path: "b.txt", hash: "h1")) == .deleteRemote)
        // deleted there, edited here: keep; deleted there, unchanged here: delete here
        #expect(SyncDecision.remoteDeletion(entry: Self.entry(), local: Self.stat(size: 9)) == .keepLocal)
        #expect(SyncDecision.remoteDeletion(entry: Self.entry(), local: Self.stat()) == .deleteLocal)
        #expect(SyncDecision.remoteDeletion(entry: Self.entry(), local: nil) == .forget)
        #expect(SyncDecision.remoteDeletion(entry: nil, local: Self.stat()) == .forget)
    }

    @Test func localChanges() {
        let entry = Self.entry(hash: "h1")
        #expect(SyncDecision.localChange(entry: entry, local: Self.stat(), localHash: nil, excluded: false) == .nothing)
        #expect(SyncDecision.localChange(entry: entry, local: Self.stat(size: 9), localHash: "h9", excluded: false) == .upload(content: true))
        // touched but the same content: only the stat is recorded
        #expect(SyncDecision.localChange(entry: entry, local: Self.stat(mtime: 5_000), localHash: "h1", excluded: false) == .adopt)
        #expect(SyncDecision.localChange(entry: entry, local: Self.stat(mode: 0o600), localHash: nil, excluded: false) == .upload(content: false))
        // never uploaded: upload; skip-backup after upload: delete the record only
        #expect(SyncDecision.localChange(entry: Self.entry(tag: nil), local: Self.stat(), localHash: nil, excluded: false) == .upload(content: true))
        #expect(SyncDecision.localChange(entry: entry, local: Self.stat(), localHash: nil, excluded: true) == .deleteRemoteKeepLocal)
        #expect(SyncDecision.localChange(entry: Self.entry(tag: nil), local: Self.stat(), localHash: nil, excluded: true) == .nothing)
        // folders: their times change with their children, which is not a change of the folder
        let folder = Self.entry(hash: "", stat: Self.stat(.folder, size: 0, mtime: 0))
        #expect(SyncDecision.localChange(entry: folder, local: Self.stat(.folder, size: 0, mtime: 0), localHash: nil, excluded: false) == .nothing)
        // symlinks: a new target is a new content
        let link = JournalEntry(id: "L", path: "l", stat: Self.stat(.symlink), contentHash: "x", target: "a", changeTag: "t")
        #expect(SyncDecision.localChange(entry: link, local: Self.stat(.symlink), localHash: nil, target: "b", excluded: false) == .upload(content: true))
    }

    @Test func movesAreFoundByInodeThenByContent() {
        let byInode = JournalEntry(id: "A", path: "old/a", stat: Self.stat(inode: 10), contentHash: "ha", changeTag: "t")
        let byHash = JournalEntry(id: "B", path: "b", stat: Self.stat(inode: 11), contentHash: "hb", changeTag: "t")
        let gone = JournalEntry(id: "C", path: "c", stat: Self.stat(inode: 12), contentHash: "hc", changeTag: "t")
        let moves = SyncDecision.matchMoves(missing: [byInode, byHash, gone], created: [
            (path: "new/a", stat: Self.stat(inode: 10), hash: nil),
            (path: "b2", stat: Self.stat(inode: 99), hash: "hb"),
            (path: "d", stat: Self.stat(inode: 98), hash: "other"),
        ])
        #expect(moves == ["A": "new/a", "B": "b2"])
        // a folder and a file with one inode number are not paired
        let folder = JournalEntry(id: "F", path: "f", stat: Self.stat(.folder, inode: 20), contentHash: "", changeTag: "t")
        #expect(SyncDecision.matchMoves(missing: [folder], created: [(path: "g", stat: Self.stat(inode: 20), hash: nil)]).isEmpty)
    }

    /// An editor's save by rename inside a folder renamed before it, with no pass between: the
    /// file's inode is new and its content too, but its name in the folder's new place is its
    /// own, as for a save at an unmoved path (sync simulator seed 302).
    @Test func aFileSavedInAMovedFolderFollowsTheFolder() {
        let folder = JournalEntry(id: "F", path: "media", stat: Self.stat(.folder, inode: 20), contentHash: "", changeTag: "t")
        let saved = JournalEntry(id: "A", path: "media/a.txt", stat: Self.stat(inode: 21), contentHash: "ha", changeTag: "t")
        let inner = JournalEntry(id: "I", path: "media/sub", stat: Self.stat(.folder, inode: 22), contentHash: "", changeTag: "t")
        let deep = JournalEntry(id: "D", path: "media/sub/d.txt", stat: Self.stat(inode: 23), contentHash: "hd", changeTag: "t")
        let deleted = JournalEntry(id: "X", path: "media/x.txt", stat: Self.stat(inode: 24), contentHash: "hx", changeTag: "t")
        let moves = SyncDecision.matchMoves(missing: [folder, saved, inner, deep, deleted], created: [
            (path: "Media", stat: Self.stat(.folder, inode: 20), hash: nil),
            (path: "Media/a.txt", stat: Self.stat(inode: 31), hash: "new"),
            (path: "Media/Sub", stat: Self.stat(.folder, inode: 22), hash: nil),  // renamed again inside
            (path: "Media/Sub/d.txt", stat: Self.stat(inode: 33), hash: "new too"),
            (path: "Media/y.txt", stat: Self.stat(inode: 34), hash: "hy"),  // another name: a new item
        ])
        #expect(moves == ["F": "Media", "A": "Media/a.txt", "I": "Media/Sub", "D": "Media/Sub/d.txt"])
        // a file the folder's move does not explain stays unpaired (deleted, as before)
        #expect(SyncDecision.matchMoves(missing: [saved], created: [(path: "Media/a.txt", stat: Self.stat(inode: 31), hash: "new")]).isEmpty)
    }

    @Test func refusedSave() {
        #expect(SyncDecision.refusedSave(localKind: .file, localHash: "h2", server: Self.remote()) == .adopt)
        #expect(SyncDecision.refusedSave(localKind: .file, localHash: "h1", server: Self.remote()) == .conflict)
        // the server's version is one this device sent and never had confirmed: its own, sent over
        #expect(SyncDecision.refusedSave(localKind: .file, localHash: "h3", server: Self.remote(), sent: ["h2", "h3"]) == .resend)
        #expect(SyncDecision.refusedSave(localKind: .file, localHash: "h3", server: Self.remote(), sent: ["h9"]) == .conflict)
    }

    @Test func aRecordThatIsThisDevicesOwnLostUploadIsTakenAsSynced() {
        let remote = Self.remote()  // h2, tag t2
        let entry = JournalEntry(id: "A", path: "a.txt", stat: Self.stat(inode: 1), contentHash: "h1", changeTag: "t1")
        // content this device sent: the entry takes the record's tag and content, keeps its stat
        let own = SyncDecision.ownUnconfirmedUpload(entry, remote: remote, sent: ["h2"])
        #expect(own?.changeTag == remote.changeTag && own?.contentHash == "h2" && own?.stat == entry.stat)
        // another device's content, or no content change at all: judged as usual
        #expect(SyncDecision.ownUnconfirmedUpload(entry, remote: remote, sent: ["h9"]) == nil)
        var renamed = entry
        renamed.contentHash = "h2"
        #expect(SyncDecision.ownUnconfirmedUpload(renamed, remote: remote, sent: ["h2"]) == nil)
        // an entry never confirmed: its own hash is what it sent
        let unconfirmed = JournalEntry(id: "A", path: "a.txt", stat: Self.stat(inode: 1), contentHash: "h2", changeTag: nil)
        #expect(SyncDecision.ownUnconfirmedUpload(unconfirmed, remote: remote, sent: [])?.changeTag == remote.changeTag)
        // the version journaled already is nothing new
        var current = entry
        current.changeTag = remote.changeTag
        #expect(SyncDecision.ownUnconfirmedUpload(current, remote: remote, sent: ["h2"]) == nil)
    }

    @Test func temporaryAndEditorFilesAreNeverSynced() {
        for name in ["..ubiq-tmp-sync-AB12CD34.download-0F0F0F0F", ".ubiq-tmp-sync-AB12CD34", ".ubiquity-sync.lock", ".notes.txt.swp", "notes.txt~",
                     ".#notes.txt", "4913", ".ubiq-tmp-1234"] {
            #expect(SyncFiles.isIgnored(name: name, relativePath: name, isDirectory: false, rules: .defaults), "\(name)")
        }
        #expect(SyncFiles.isOwnTemporary("..ubiq-tmp-sync-AB12CD34.download-0F0F0F0F"))
        #expect(!SyncFiles.isOwnTemporary(".ubiq-tmp-1234"))  // another process's safe-save: not ours to delete
        #expect(!SyncFiles.isIgnored(name: "notes.txt", relativePath: "notes.txt", isDirectory: false, rules: .defaults))
    }

    @Test func recordPathsAreChecked() {
        #expect(SyncFiles.isValid(relativePath: "a/b c.txt"))
        for bad in ["", "/etc/passwd", "../x", "a/../../x", "a//b", "a/./b", "a/"] { #expect(!SyncFiles.isValid(relativePath: bad), "\(bad)") }
    }
}
