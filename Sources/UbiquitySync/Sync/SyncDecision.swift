// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The per-item sync decision, from the journal, the local stat (and hash, when it was read)
/// and the server's record: pure, no I/O, tested alone. ``SyncEngine`` gathers the inputs and
/// carries out the result.
package enum SyncDecision {
    /// What to do about a record that changed on the server.
    package enum RemoteAction: Sendable, Hashable {
        /// Our own change coming back, or nothing new: do nothing.
        case nothing
        /// Write the server's item locally (create or replace the content).
        case download
        /// Move the local item to the record's path (content unchanged); then `download` too when
        /// `content` is true.
        case apply(move: Bool, content: Bool, mode: Bool)
        /// Both sides have the same content: record the server's version in the journal.
        case adopt
        /// Both sides changed: the server's version takes the name, the local content is kept as
        /// an unresolved conflict version.
        case conflict
        /// The local item was deleted and the server only renamed or re-tagged it: the local
        /// delete wins (delete the record).
        case deleteRemote
    }

    /// What to do about a record deleted on the server.
    package enum RemoteDeletion: Sendable, Hashable {
        /// Not known here, or already gone locally: forget it.
        case forget
        /// Unchanged locally: delete the local item.
        case deleteLocal
        /// Changed locally since it was synced: the edit wins; forget the ID so the item is
        /// uploaded again as a new record.
        case keepLocal
    }

    /// What to do about an item found locally at a journaled path.
    package enum LocalAction: Sendable, Hashable {
        /// Unchanged since it was synced.
        case nothing
        /// Only the stat changed (same content, kind and mode): record the new stat.
        case adopt
        /// Upload: content (and metadata) when `content`, else metadata only (mode).
        case upload(content: Bool)
        /// Marked skip-backup after it was uploaded: delete the record, keep the file.
        case deleteRemoteKeepLocal
    }

    /// Whether the local item changed since the journal's state: kind, size, mtime or inode.
    package static func localChanged(_ entry: JournalEntry, _ local: SyncStat?) -> Bool {
        guard let local else { return true }
        return local.differs(from: entry.stat)
    }

    /// The journal entry to judge a fetched record against: an entry the server confirmed (it has
    /// a change tag) as it is. An entry never confirmed (the device stopped between a save and the
    /// journal write of its answer) when the record is a file or link with the size and the
    /// modification time (to the millisecond) journaled here: the record is this device's own
    /// upload of what it journaled, so the entry is judged with the record's content hash (a
    /// local edit or delete since then wins, as for any synced item). Any other unconfirmed entry:
    /// nil, judged as unknown (the same content is adopted, another one is a conflict).
    package static func judgedEntry(_ entry: JournalEntry?, remote: RemoteItem) -> JournalEntry? {
        guard var entry, entry.changeTag == nil else { return entry }
        guard remote.kind != .folder, remote.kind == entry.stat.kind, remote.size == entry.stat.size,
              remote.modifiedMilliseconds == entry.stat.modifiedNanoseconds / 1_000_000 else { return nil }
        entry.contentHash = remote.contentHash
        return entry
    }

    /// Decides about a record that changed on the server.
    /// - Parameters:
    ///   - entry: the journal's entry for the record's ID, if any.
    ///   - local: the local stat at the entry's path (or at the record's path when there is no
    ///     entry); nil when nothing is there.
    ///   - localHash: the local content's hash, when the engine read it (needed only when the
    ///     local item changed or is not journaled; nil means not read).
    ///   - remote: the record.
    package static func remoteChange(entry: JournalEntry?, local: SyncStat?, localHash: String?, remote: RemoteItem) -> RemoteAction {
        guard let entry else {
            guard let local else { return .download }
            if local.kind == remote.kind && (local.kind == .folder || localHash == remote.contentHash) { return .adopt }
            return .conflict
        }
        if entry.changeTag != nil && entry.changeTag == remote.changeTag { return .nothing }
        let contentChanged = remote.kind != entry.stat.kind || remote.contentHash != entry.contentHash
        guard let local else {
            // deleted here: an edit there wins over the delete; a mere rename there does not
            return contentChanged ? .download : .deleteRemote
        }
        let moved = remote.path != entry.path
        let modeChanged = remote.mode != entry.stat.mode && remote.kind != .symlink
        if !localChanged(entry, local) {
            return .apply(move: moved, content: contentChanged, mode: modeChanged)
        }
        // only the stat moved here (the content is the journaled one: a touch, the same bytes
        // saved again, a stat recorded a moment off): no local change, nothing to keep aside
        if local.kind == .file && entry.stat.kind == .file, let localHash, !entry.contentHash.isEmpty, localHash == entry.contentHash {
            return .apply(move: moved, content: contentChanged, mode: modeChanged)
        }
        if local.kind == .folder && remote.kind == .folder { return .apply(move: moved, content: false, mode: modeChanged) }
        if local.kind == remote.kind && localHash == remote.contentHash { return moved ? .apply(move: true, content: false, mode: false) : .adopt }
        // changed here; if the server changed only the name, move and upload the edit later
        if !contentChanged { return .apply(move: moved, content: false, mode: false) }
        return .conflict
    }

    /// Whether a fetched record is the version this device journaled for it already (its own
    /// upload coming back through the zone's changes, or a version an earlier pass applied):
    /// ``remoteChange(entry:local:localHash:remote:)`` decides `.nothing` for it whatever the
    /// local item is, so the engine drops it without looking at the file (a local change is the
    /// local pass's). A record without a tag, or an entry never confirmed by the server (no
    /// tag), is judged as usual.
    package static func isAlreadyApplied(_ remote: RemoteItem, journaledTag: String?) -> Bool {
        guard let tag = remote.changeTag, let journaledTag else { return false }
        return tag == journaledTag
    }

    /// Splits fetched records into those to judge (in the order given) and those already
    /// applied here (``isAlreadyApplied(_:journaledTag:)``), given the journal's change tag by
    /// record ID.
    package static func splitAlreadyApplied<Payload>(_ items: [(RemoteItem, Payload)], journaledTags: [String: String])
        -> (judge: [(RemoteItem, Payload)], applied: [RemoteItem]) {
        var judge: [(RemoteItem, Payload)] = []
        var applied: [RemoteItem] = []
        judge.reserveCapacity(items.count)
        for element in items {
            if isAlreadyApplied(element.0, journaledTag: journaledTags[element.0.id]) {
                applied.append(element.0)
            } else {
                judge.append(element)
            }
        }
        return (judge, applied)
    }

    /// Decides about a record deleted on the server.
    package static func remoteDeletion(entry: JournalEntry?, local: SyncStat?) -> RemoteDeletion {
        guard let entry, let local else { return .forget }
        if local.kind == .folder && entry.stat.kind == .folder { return .deleteLocal }  // removed if empty
        return localChanged(entry, local) ? .keepLocal : .deleteLocal
    }

    /// Decides about an item found locally at a journaled path.
    /// - Parameters:
    ///   - localHash: the content hash, read by the engine when the stat changed (nil: not read).
    ///   - target: a symbolic link's target now.
    ///   - excluded: whether the item carries the skip-backup attribute.
    package static func localChange(entry: JournalEntry, local: SyncStat, localHash: String?, target: String? = nil, excluded: Bool) -> LocalAction {
        if excluded { return entry.changeTag == nil ? .nothing : .deleteRemoteKeepLocal }
        if entry.changeTag == nil { return .upload(content: true) }
        let modeChanged = local.mode != entry.stat.mode && local.kind != .symlink
        if local.kind != entry.stat.kind { return .upload(content: true) }
        switch local.kind {
        case .folder:
            if local.inode != entry.stat.inode { return .adopt }
            return modeChanged ? .upload(content: false) : .nothing
        case .symlink:
            if target != entry.target { return .upload(content: true) }
            return local.differs(from: entry.stat) ? .adopt : .nothing
        case .file:
            guard local.differs(from: entry.stat) else { return modeChanged ? .upload(content: false) : .nothing }
            guard let localHash else { return .upload(content: true) }
            if localHash != entry.contentHash { return .upload(content: true) }
            return modeChanged ? .upload(content: false) : .adopt
        }
    }

    /// Pairs journal entries whose path vanished with new local items: the same inode (and kind)
    /// first — never an entry whose inode had another birth time (a freed inode handed out
    /// again), and among several entries journaled on one inode the one with the same birth
    /// time before one whose birth time is not known (an evicted file's stub that took a
    /// deleted file's inode is the evicted file's; sync simulator seed 10625) — then, for
    /// files, the same content hash; last, a file left unpaired inside a folder
    /// that moved pairs with a new file at its name in the folder's new place (an editor's save
    /// by rename after the folder's rename, no pass between: at an unmoved path that is an edit
    /// of the same item, and so it is here; sync simulator seed 302). The result maps each moved
    /// entry's ID to the new path.
    /// - Parameters:
    ///   - missing: entries whose path has no item now.
    ///   - created: new local items (path, stat, content hash when read).
    package static func matchMoves(missing: [JournalEntry], created: [(path: String, stat: SyncStat, hash: String?)]) -> [String: String] {
        var moves: [String: String] = [:]
        var taken = Set<String>()
        var byInode: [UInt64: [JournalEntry]] = [:]
        for entry in missing { byInode[entry.stat.inode, default: []].append(entry) }
        for item in created.sorted(by: { $0.path < $1.path }) {
            let candidates = byInode[item.stat.inode]?.filter { $0.stat.kind == item.stat.kind && moves[$0.id] == nil } ?? []
            if let entry = candidates.first(where: { item.stat.sameBirth(as: $0.stat) == true })
                ?? candidates.first(where: { item.stat.sameBirth(as: $0.stat) == nil }) {
                moves[entry.id] = item.path
                taken.insert(item.path)
            }
        }
        var byHash: [String: [JournalEntry]] = [:]
        for entry in missing where moves[entry.id] == nil && entry.stat.kind == .file && entry.changeTag != nil {
            byHash[entry.contentHash, default: []].append(entry)
        }
        for item in created.sorted(by: { $0.path < $1.path }) where !taken.contains(item.path) && item.stat.kind == .file {
            guard let hash = item.hash, let entry = byHash[hash]?.first(where: { moves[$0.id] == nil }) else { continue }
            moves[entry.id] = item.path
            taken.insert(item.path)
        }
        let movedFolders = missing.compactMap { entry in
            entry.stat.kind == .folder ? moves[entry.id].map { (from: entry.path, to: $0) } : nil
        }.sorted { $0.from.count > $1.from.count }  // the deepest first
        guard !movedFolders.isEmpty else { return moves }
        let newFiles = Set(created.lazy.filter { $0.stat.kind == .file }.map(\.path))
        for entry in missing where moves[entry.id] == nil && entry.stat.kind == .file {
            guard let folder = movedFolders.first(where: { entry.path.hasPrefix($0.from + "/") }) else { continue }
            let path = folder.to + entry.path.dropFirst(folder.from.count)
            guard newFiles.contains(path), !taken.contains(path) else { continue }
            moves[entry.id] = path
            taken.insert(path)
        }
        return moves
    }

    /// What to do after the server refused a save because its record changed.
    package enum RefusedSave: Sendable, Hashable {
        /// The server has this content already (kind and hash): adopt its version.
        case adopt
        /// The server's version is this device's own earlier upload whose answer never came (a
        /// crash, a dropped connection): take its change tag and send the local version again.
        case resend
        /// Another device's version: it takes the name, the local one is kept as a conflict version.
        case conflict
    }

    /// After the server refused a save because its record changed: the same content (kind and
    /// hash) means adopt the server's version; content this device sent and never had
    /// confirmed (`sent`: ``SyncJournal/sentHashes(id:)``, and an unconfirmed entry's hash)
    /// is its own lost upload, sent again; anything else is a conflict.
    package static func refusedSave(localKind: SyncItemKind, localHash: String, server: RemoteItem, sent: Set<String> = []) -> RefusedSave {
        guard localKind == server.kind else { return .conflict }
        if localKind == .folder || localHash == server.contentHash { return .adopt }
        return sent.contains(server.contentHash) ? .resend : .conflict
    }

    /// The journal's entry for a fetched record that is this device's own upload whose answer
    /// never came (a crash, a dropped connection): its content is one the device sent and never
    /// had confirmed (`sent`, and an unconfirmed entry's own hash). The entry takes the record's
    /// tag and content and keeps its stat, so that what changed here since (an edit, a delete)
    /// is still sent, over that tag, instead of the record being judged another device's
    /// change (a conflict, or a delete undone). Nil when the record is not that.
    package static func ownUnconfirmedUpload(_ entry: JournalEntry, remote: RemoteItem, sent: Set<String>) -> JournalEntry? {
        guard remote.kind == entry.stat.kind, let tag = remote.changeTag, tag != entry.changeTag else { return nil }
        if entry.changeTag == nil {
            guard remote.contentHash == entry.contentHash || sent.contains(remote.contentHash) else { return nil }
        } else {
            // a content change (a rename or a mode change keeps the content: the usual rules judge it)
            guard remote.contentHash != entry.contentHash, sent.contains(remote.contentHash) else { return nil }
        }
        var seen = entry
        seen.changeTag = tag
        seen.contentHash = remote.contentHash
        return seen
    }
}
