// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityCloudKit

extension SyncEngine {
    /// One upload to do. Kept small: a first pass over 100,000 new files holds 100,000 of them
    /// (the journal entry is boxed, and absent for a new item; the path is the item's).
    struct Upload {
        var id: String
        var local: LocalItem
        private var box: PreviousEntry?
        var content: Bool
        var hash: String?

        init(id: String, local: LocalItem, previous: JournalEntry?, content: Bool, hash: String?) {
            self.id = id
            self.local = local
            self.box = previous.map(PreviousEntry.init)
            self.content = content
            self.hash = hash
        }

        /// Where the item is now (the local item's path).
        var path: String { local.path }
        /// The item's journal entry; nil for a new item.
        var previous: JournalEntry? { box?.entry }
        /// Whether the item has no record yet (a new ID, not journaled until it is sent).
        var isNew: Bool { box == nil }
        /// The journal entry of a new item before its record is saved (no change tag).
        var newEntry: JournalEntry {
            JournalEntry(id: id, path: path, stat: local.stat, contentHash: "", target: local.target, changeTag: nil)
        }
    }

    /// An upload's journal entry, boxed (``Upload``).
    final class PreviousEntry: Sendable {
        let entry: JournalEntry
        init(_ entry: JournalEntry) { self.entry = entry }
    }

    /// Scans the folder against the journal and sends what changed: renames and moves (by inode,
    /// or by content for a delete and create pair) as path updates, edits as uploads, new items as
    /// records, deletes as record deletes; skip-backup items are never sent, and one marked after
    /// it was uploaded has its record deleted (the file stays).
    ///
    /// A pass started by the index's change feed looks only at the paths it named (and the
    /// subtrees of removed, moved and new folders), plus the queued ones; otherwise it looks at
    /// the whole folder. Either way it reads the index's rows (the device's one walker), while
    /// the index watches the folder; before that (at start) it walks the folder itself.
    /// `pulled`: the pass fetched the server's changes first (what waits under a folder marked
    /// skip-backup here is known only then).
    func pushLocal(pulled: Bool = true) async throws {
        let root = folder, rules = self.rules
        var scope = self.scope.withLock { $0.take() }
        // while the index's feed cannot be trusted for the folder, and while deletes are paused
        // (they are counted again), every pass is whole
        let paused = try journal.value(Self.massDeletePausedKey) != nil
        let indexed = followsChanges
        if !indexed || paused { scope.full = true }
        // paths queued for (at least) a metadata upload: a name the server does not have yet
        let queued = Set(try journal.pending())
        scope.paths.formUnion(queued)
        if scope.isEmpty { return }
        let previouslyExcluded = try journal.excluded()
        let synced = try journal.count()
        var scan: LocalScan
        let entries: [JournalEntry]
        if indexed && scope.full {
            // a whole pass compares the index with the journal in the database: only what differs
            let journal = self.journal
            let unindexable = scope.unindexable
            (scan, entries) = try await BlockingWork.run {
                var (scan, entries) = try SyncFiles.differences(journal: journal, root: root, rules: rules, excluded: previouslyExcluded, queued: queued)
                // the rows hold no name that is not UTF-8: those the feed named are read for
                scan.unsyncable = SyncFiles.unsyncableNames(near: unindexable, root: root, rules: rules, excluded: previouslyExcluded)
                return (scan, entries)
            }
        } else {
            if indexed {
                let scope = scope, journal = self.journal, index = localIndex.index
                scan = try await BlockingWork.run {
                    try SyncFiles.scan(index: index, root: root, rules: rules, scope: scope, excluded: previouslyExcluded,
                                       journaled: { (try? journal.contains(path: $0)) ?? false })
                }
            } else {
                scan = try await BlockingWork.run { SyncFiles.scan(root: root, rules: rules) }
            }
            // a narrowed pass reads only the entries in its scope (by path), not the whole journal
            entries = try journal.entries(in: scope)
        }
        reportUnsyncableNames(scan.unsyncable)  // SyncEngine+Names.swift
        var byPath: [String: JournalEntry] = [:]
        for entry in entries { byPath[entry.path] = entry }
        if indexed {
            try await confirmGone(entries, scan: &scan, scope: scope, excluded: previouslyExcluded)
            try await confirmChanged(&scan, journaled: byPath)
        }
        var items = scan.items
        // new plain files are created items from the start (a whole pass's list of them)
        var created = scan.fresh
        scan = LocalScan()  // one owner, let go of once the uploads are planned
        appLinks?.removeLinks(from: &items)  // the app containers' links are never synced (AppFolderLinks.swift)
        var uploads: [Upload] = []
        var unexclude: [String] = []
        var excludedNow: [(path: String, entry: JournalEntry?, inode: UInt64)] = []
        var missing: [JournalEntry] = []
        var replacedFolders: [(entry: JournalEntry, local: LocalItem)] = []
        let evicted = try journal.evicted()  // eviction: SyncEngine+Eviction.swift
        var failedSettles = 0

        for entry in entries {
            guard var local = items[entry.path] else {
                // gone, but the watcher has not named its removal yet: a rename's destination
                // comes with it in the next batch (LocalScope.namesRemoval(of:))
                if scope.namesRemoval(of: entry.path) { missing.append(entry) }
                continue
            }
            if evicted.contains(entry.id) {
                // never uploaded: its stub stays, or what was written at its name is settled (SyncEngine+Eviction.swift)
                if local.isStub && queued.contains(entry.path) {
                    uploads.append(Upload(id: entry.id, local: local, previous: entry, content: false, hash: entry.contentHash))
                    continue
                }
                do { try await settleEvicted(entry, local) } catch {
                    failedSettles += 1
                    logger.warning("could not settle what was written where an evicted file was; retried",
                                   metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.error": "\(error)"])
                }
                continue
            }
            if local.isStub { continue }  // a stub of an item not evicted here: never sent
            if local.excluded {
                excludedNow.append((entry.path, entry, local.stat.inode))
                continue
            }
            if local.stat.kind != entry.stat.kind && entry.changeTag != nil {
                // replaced by another kind of item: delete the old record, send a new one
                missing.append(entry)
                created.append(local)
                continue
            }
            var hash: String?
            // a large file is not read here: its upload reads it once and finds the same content
            // if only the stat moved (SyncEngine+Upload.swift); a small one is hashed with the
            // stat it had on the disk while it was read, which the decision (and an adopted
            // entry) then uses, not the row's: a row can be a moment behind the disk
            if local.stat.kind == .file && !local.excluded && entry.changeTag != nil && local.stat.differs(from: entry.stat)
                && local.stat.size <= SyncRecord.inlineLimit {
                // (changed while read: no hash, so the upload reads it again)
                let read = try await hashAndStat(of: local)
                if let stat = read.stat {
                    hash = read.hash
                    local.stat = stat
                }
            }
            switch SyncDecision.localChange(entry: entry, local: local.stat, localHash: hash, target: local.target, excluded: local.excluded) {
            case .adopt where local.stat.kind == .folder && local.stat.inode != entry.stat.inode:
                replacedFolders.append((entry, local))  // judged once the new items are known
            case .nothing where queued.contains(entry.path), .adopt where queued.contains(entry.path):
                uploads.append(Upload(id: entry.id, local: local, previous: entry, content: false, hash: hash))
            case .nothing:
                break
            case .adopt:
                var updated = entry
                updated.stat = local.stat
                try journalSynced([updated])
            case .upload(let content):
                uploads.append(Upload(id: entry.id, local: local, previous: entry, content: content, hash: hash))
            case .deleteRemoteKeepLocal:
                excludedNow.append((entry.path, entry, local.stat.inode))
            }
        }
        // an excluded file replaced by another (an editor's save by rename) lost the attribute
        // with the old file: put it back rather than upload it (`ubiq include` keeps the inode)
        let reexcluded = try reapplyDroppedExclusions(previouslyExcluded, items: items, scope: scope)
        for (path, local) in items where byPath[path] == nil && !reexcluded.contains(path) {
            if local.excluded {
                if !previouslyExcluded.contains(path) { excludedNow.append((path, nil, local.stat.inode)) }
                continue
            }
            created.append(local)
        }
        for (entry, local) in try adoptReplacedFolders(replacedFolders, missing: &missing, created: &created, queued: queued) {
            uploads.append(Upload(id: entry.id, local: local, previous: entry, content: false, hash: nil))
        }
        for path in previouslyExcluded where scope.contains(path) && !reexcluded.contains(path) && items[path].map({ !$0.excluded }) ?? true {
            unexclude.append(path)
        }
        // evicted files in a folder marked skip-backup are downloaded before their records go (SyncEngine+ExcludedStubs.swift)
        failedSettles += await downloadBeforeExcluding(&excludedNow, missing: &missing, evicted: evicted, keptBack: previouslyExcluded)

        // moves: a vanished entry and a new item with its inode (or, for files, its content)
        // (a new file that has a vanished file's inode pairs by inode: no need to read it here —
        // a rename of 1 GiB reads nothing; it is hashed below only if its size or time moved)
        var createdHashes: [String: String] = [:]
        if !missing.isEmpty {
            let vanishedFiles = Set(missing.lazy.filter { $0.stat.kind == .file }.map(\.stat.inode))
            for local in created where local.stat.kind == .file && !local.isStub && !vanishedFiles.contains(local.stat.inode) {
                createdHashes[local.path] = try? await hashOf(local, like: SyncFiles.hashKind(forSize: local.stat.size, among: missing))  // checksum kinds: SyncFiles+ChecksumKinds.swift
            }
        }
        var moves = missing.isEmpty ? [:]
            : SyncDecision.matchMoves(missing: missing, created: created.map { ($0.path, $0.stat, createdHashes[$0.path]) })
        // a folder under one marked skip-backup in this pass, records held back in it: it waits
        // with them, not deleted, not moved away from them (SyncEngine+HeldBack.swift)
        let keptBackNow = excludedNow.compactMap { $0.entry?.stat.kind == .folder ? $0.path : nil }
        let waiting = try waitingUnderKeptBack(missing, keptBack: keptBackNow, pulled: pulled, moves: &moves)
        try moveAsideStubsMovedAlong(missing, evicted: evicted, moves: &moves, items: &items)  // SyncEngine+OrphanStubs.swift
        if !moves.isEmpty {  // fresh files moves went to, looked up by path below
            let targets = Set(moves.values)
            for local in created where targets.contains(local.path) && items[local.path] == nil { items[local.path] = local }
        }
        // an evicted file's stub renamed to a name of its own (not a stub's): the file stays
        // evicted (its stub is written again) and what is there now is a new item
        var restored = Set<String>()
        for entry in missing where evicted.contains(entry.id) {
            guard let path = moves[entry.id], items[path]?.isStub == false else { continue }
            moves[entry.id] = nil
            if try await restoreStub(entry) { restored.insert(entry.id) }
        }
        try await unpairReusedInodes(missing, evicted: evicted, items: items, moves: &moves, hashes: &createdHashes)  // SyncEngine+ReusedInodes.swift
        let movedPaths = Set(moves.values)
        for entry in missing {
            guard let path = moves[entry.id], let local = items[path] else { continue }
            if local.isStub && !evicted.contains(entry.id) { continue }  // a stub never takes a file's place
            if isMovedPlaceholder(entry, local, evicted: evicted) {  // only its path (SyncEngine+Eviction.swift)
                uploads.append(Upload(id: entry.id, local: local, previous: entry, content: false, hash: entry.contentHash))
                continue
            }
            var hash = createdHashes[path]
            if hash == nil && local.stat.kind == .file && local.stat.differs(from: entry.stat) { hash = try await hashOf(local, like: entry.contentHash) }
            let content = local.stat.kind == .symlink ? local.target != entry.target
                : local.stat.kind == .file && (hash.map { $0 != entry.contentHash } ?? false)
            uploads.append(Upload(id: entry.id, local: local, previous: entry, content: content || entry.changeTag == nil, hash: hash))
        }
        // new items are journaled window by window, each just before it is read and sent
        // (``sendAll(_:)``): the first of 10,000 new files goes up without waiting for the rest
        // (a stub is never one: its bytes are never a document's; one no journaled item moved
        // to is settled by the record it names)
        let new = created.lazy.filter { !movedPaths.contains($0.path) && !$0.isStub }
        let orphans = created.filter { $0.isStub && !movedPaths.contains($0.path) }
        if !orphans.isEmpty { failedSettles += await settleOrphanStubs(orphans).count }  // SyncEngine+OrphanStubs.swift
        // (behind files marked skip-backup too, which no scan lists as new: an evicted file's
        // stub moved with its folder, its record deleted elsewhere; sync simulator seed 7364)
        let newlyExcludedFiles = excludedNow.compactMap { $0.entry == nil ? items[$0.path] : nil }
        failedSettles += try await settleHiddenStubs(behind: (created + newlyExcludedFiles).filter { $0.stat.kind == .file && !$0.isStub }, evicted: evicted)
        let newCount = new.count
        uploads.reserveCapacity(uploads.count + newCount)
        for (local, id) in zip(new, RandomUUIDs.make(newCount, using: randomness)) {  // their records' IDs, made together
            uploads.append(Upload(id: id, local: local, previous: nil, content: true, hash: createdHashes[local.path]))
        }
        try deferNewItemsAtVacatedNames(&uploads)
        for path in unexclude { try journal.setExcluded(path, false) }
        if !unexclude.isEmpty, try !heldBack().isEmpty { wakeLater() }  // a name free again: the next pull applies what waited for it

        if !uploads.isEmpty || !missing.isEmpty {
            logger.debug("local changes", metadata: [
                "ubiquity.uploads": "\(uploads.map { "\($0.previous?.path ?? "new") → \($0.path)" })",
                "ubiquity.missing": "\(missing.map { "\($0.path)@\($0.stat.inode)" })",
                "ubiquity.created": "\(created.map { "\($0.path)@\($0.stat.inode)" })",
            ])
        }
        // the plan is made: what the scan found is let go of before the uploads are sorted and
        // sent (a first pass over 100,000 new files holds only its uploads from here on)
        items = [:]
        created = []
        // folders before what they hold, sorted in place
        uploads.sort { a, b in
            let depthA = Self.depth(a.path), depthB = Self.depth(b.path)
            return depthA != depthB ? depthA < depthB : a.path < b.path
        }
        let refused = Set(uploads.lazy.filter { upload in self.memory.refusedUploads[upload.path].map { $0 == upload.local.stat } ?? false }.map(\.id))
        if !refused.isEmpty {
            // kept, not sent until it changes
            try journal.putAll(uploads.filter { refused.contains($0.id) && $0.isNew }.map(\.newEntry), enqueue: true) { _ in .uploading }
            uploads.removeAll { refused.contains($0.id) }
        }
        await noteVersionCandidates(uploads.lazy.filter { $0.previous == nil && $0.local.stat.kind == .file }.map(\.local.path))
        var failed = try await sendAll(uploads)

        let deletes = missing.filter { moves[$0.id] == nil && !restored.contains($0.id) && !waiting.contains($0.id) }
            .sorted { Self.depth($0.path) > Self.depth($1.path) }
        if try deletesAllowed(deletes.count, total: synced) {
            try await restoreVersionsOfDeletedHere(deletes)  // SyncEngine+DeletedInConflict.swift
            failed += try await deleteAll(deletes)
            if !deletes.isEmpty { try clearMassDeleteConfirmation() }
        }
        let held = excludedNow.isEmpty ? [:] : try heldBack()
        let heldBehind = try heldBehindEntries(held)
        for (path, entry, inode) in excludedNow {
            if let entry, entry.stat.kind == .folder, held.values.contains(where: { $0.hasPrefix(path + "/") }) {
                // records from elsewhere wait under it here (SyncEngine+HeldBack.swift): deleted,
                // their folder would be gone on the server under them (sync simulator seed 1841);
                // its record waits with them, adopted when the folder is included again. It
                // waits for the path the server has, looked up at the next pull: the journal's
                // is this device's, and a rename elsewhere not applied here (the folder was kept
                // back) left it at another; waiting for this one, it never came back, and the
                // folder its moved items went to was sent again and again (seed 1813)
                try holdBack(entry.id, path: "")
                try journal.forget(ids: [entry.id])
            } else if let entry, entry.stat.kind == .folder, !pulled {
                // no fetch in this pass (it failed, or the pass sends local changes only): records
                // another device made under the folder are not held back here yet, and deleted now
                // the folder would leave them under no folder on the server, for good when that
                // device stops syncing this account (sync simulator seed 2456). Judged by the next
                // pass that fetches (a failed pass's retry fetches; wakeLater asks for one).
                try journal.enqueue([path])
                wakeLater()
                continue
            } else if let entry, entry.changeTag == nil {
                // never confirmed: its upload may have reached the server all the same (an answer
                // lost, or a request that landed late), so it goes as a local delete does: deleted
                // there when it is this device's own upload, else forgotten; kept and tried again
                // while the server cannot be asked. Let go of at once, the record that landed
                // stayed on the server, held back here for good (sync simulator seed 3877).
                let left = try await deleteAll([entry])
                if left > 0 {
                    failed += left
                    continue
                }
            } else if let entry {
                try await deleteRemote(entry)
            }
            try journal.setExcluded(path, true, inode: inode)  // excluded in the index too
            logger.info("not uploaded: the item is excluded from backup", metadata: ["ubiquity.path": "\(path)"])
        }
        failed += await applyHeldBackForgotten(heldBehind, pulled: pulled)  // SyncEngine+HeldBack.swift
        // the pass counts as failed, so retries back off instead of spinning
        failed += failedSettles
        if failed > 0 { throw UbiquityError(.io, "\(failed) upload(s) or delete(s) failed; they are retried") }
    }

    /// A new item at a name a move of this pass leaves waits for the next pass, queued: the
    /// journal holds one item per path, and journaling the new one first (before its window
    /// is sent, while the move's is still out) took the moved item's row, so a move that then
    /// failed left its record behind at the old name on the server, a second record there once
    /// the new item was sent (sync simulator seed 234: a folder renamed and one made again at
    /// its old name, the network down). What is new inside a waiting folder waits with it
    /// (found again under the queued folder, read whole as a new one): sent now, its record
    /// named a folder the server did not have (seed 1775).
    func deferNewItemsAtVacatedNames(_ uploads: inout [Upload]) throws {
        let vacated = Set(uploads.lazy.compactMap { upload in upload.previous.flatMap { $0.path != upload.path ? $0.path : nil } })
        guard !vacated.isEmpty else { return }
        let waiting = Set(uploads.lazy.filter { $0.isNew && vacated.contains($0.path) }.map(\.path))
        guard !waiting.isEmpty else { return }
        try journal.enqueue(waiting.sorted())
        uploads.removeAll { upload in upload.isNew && (waiting.contains(upload.path) || waiting.contains { upload.path.hasPrefix($0 + "/") }) }
        wakeLater()
    }

    /// Folders found at their journaled path with another inode: most are the same folder made
    /// again (adopted), but one whose inode is now a new folder's elsewhere was renamed, and the
    /// remote part of the pass made a folder at its old name again for a change inside it (sync
    /// simulator seed 110: a case-only rename of a folder while another device saved a file in
    /// it). That one is a move, paired by inode, and the folder at its name is a new item
    /// (unless it is a move cycle: ``movesIntoWhatGoesAlong(_:to:)``).
    /// Returns the adopted ones whose path is queued: their name is still to be sent.
    func adoptReplacedFolders(_ folders: [(entry: JournalEntry, local: LocalItem)], missing: inout [JournalEntry],
                              created: inout [LocalItem], queued: Set<String>) throws -> [(entry: JournalEntry, local: LocalItem)] {
        guard !folders.isEmpty else { return [] }
        let movedAway = Dictionary(created.lazy.filter { $0.stat.kind == .folder }.map { ($0.stat.inode, $0.path) }, uniquingKeysWith: { first, _ in first })
        var adopted: [JournalEntry] = []
        var toSend: [(entry: JournalEntry, local: LocalItem)] = []
        for (entry, local) in folders {
            if let to = movedAway[entry.stat.inode], try !movesIntoWhatGoesAlong(entry.path, to: to) {
                missing.append(entry)
                created.append(local)
            } else if queued.contains(entry.path) {
                toSend.append((entry, local))
            } else {
                var updated = entry
                updated.stat = local.stat
                adopted.append(updated)
            }
        }
        if !adopted.isEmpty { try journalSynced(adopted) }
        return toSend
    }

    /// Whether the folder journaled at `path`, found at `destination` inside the folder made
    /// again at its name, would be sent into a synced folder under its old path: every other
    /// device moves that folder along with it, into itself. A move cycle: `Docs` moved into
    /// `docs` here while another device moved `docs` into `Docs`, whose move the remote part
    /// applied into a `Docs` made again, left `Docs` at `Docs/docs/old/Docs`; sent so, the other
    /// devices moved their `Docs` into themselves and sent it back one level deeper, each round,
    /// without end (sync simulator seed 2112). The folder at the name keeps the record then
    /// (adopted) and the moved one is a new folder: what is in it moves into it item by item,
    /// and what the other device moved in stays. A folder moved into a new folder at its own
    /// name (`docs` → `docs/old`, seed 800) is no cycle: nothing synced is on its way.
    func movesIntoWhatGoesAlong(_ path: String, to destination: String) throws -> Bool {
        guard destination.hasPrefix(path + "/") else { return false }
        return try SyncFiles.foldersOnTheWay(to: [destination]).contains { folder in
            try folder.hasPrefix(path + "/") && journal.entry(path: folder)?.changeTag != nil
        }
    }

    /// Journaled items the index has no row for, though the scan would have looked at them (no
    /// folder above them left out), are looked for on the disk before the pass takes them for
    /// deleted: the index may not have caught up (a file made a moment ago), and a delete is
    /// never sent for what is there. Those found join the scan's items.
    func confirmGone(_ entries: [JournalEntry], scan: inout LocalScan, scope: LocalScope, excluded: Set<String>) async throws {
        var reachable = ReachableFolders(excluded: excluded, rules: rules)
        let absent = entries.filter { entry in
            scan.items[entry.path] == nil && scope.namesRemoval(of: entry.path)
                && (scan.leftOut.isEmpty || !SyncFiles.isInside(entry.path, anyOf: scan.leftOut)) && reachable.isReachable(parentOf: entry.path)
        }
        guard !absent.isEmpty else { return }
        let root = folder
        let there = try await BlockingWork.run {
            absent.compactMap { entry in SyncFiles.item(path: entry.path, absolute: root + "/" + entry.path) }
        }
        for item in there {
            logger.debug("on the disk but not in the index yet: not taken for deleted", metadata: ["ubiquity.path": "\(item.path)"])
            scan.items[item.path] = item
        }
        recheckUnindexed(there.map(\.path))
    }

    /// Looks again, a moment later, at items found on the disk though the index had no row for
    /// them: the index names the removal only of rows it has, so a file that came and went
    /// between two of its batches (downloaded, then deleted at once) is never named removed, and
    /// its delete would wait for the next whole scan. A backstop timer (1 s, doubling, at most
    /// six times per path): each re-check is a pass scoped to those paths.
    func recheckUnindexed(_ paths: [String]) {
        if memory.unindexedRechecks.count > 10_000 { memory.unindexedRechecks.removeAll() }
        var due: [String] = []
        var attempt = 0
        for path in paths {
            let tries = memory.unindexedRechecks[path, default: 0]
            guard tries < 6 else { continue }
            memory.unindexedRechecks[path] = tries + 1
            attempt = max(attempt, tries)
            due.append(path)
        }
        guard !due.isEmpty else { return }
        let delay = Duration.seconds(1 << attempt)
        Task { [self] in
            try? await Task.sleep(for: delay)
            scope.withLock { scope in for path in due { scope.subtrees.insert(path) } }
            wakeContinuation.yield()
        }
    }

    /// Folders, links and stubs whose rows differ from what the journal has (new, or changed),
    /// and items whose kind changed, are read again from the disk before anything is decided or
    /// sent for them: a row can be a moment behind (a link an app folder's rename moved, a
    /// folder replaced by a file), and what is sent of a folder or a link (its kind, mode,
    /// target) comes from the item, not from a later read. A file's upload reads the file itself
    /// (and one gone meanwhile is no failure: ``uploadFailed(_:_:)``), so files are not read
    /// again here: 10,000 new files cost no 10,000 more `lstat`s. An item gone from the disk is
    /// left out (the feed names its removal next). Unchanged items are not looked at.
    func confirmChanged(_ scan: inout LocalScan, journaled: [String: JournalEntry]) async throws {
        let candidates = scan.items.values.filter { item in
            let entry = journaled[item.path]
            guard item.stat.kind != .file || item.isStub || (entry.map { $0.stat.kind != item.stat.kind } ?? false) else { return false }
            guard let entry else { return true }
            return item.stat.differs(from: entry.stat) || item.stat.mode != entry.stat.mode || item.target != entry.target
        }
        guard !candidates.isEmpty else { return }
        let root = folder
        let now = try await BlockingWork.run {
            candidates.map { ($0.path, SyncFiles.item(path: $0.path, absolute: root + "/" + $0.path)) }
        }
        for (path, item) in now { scan.items[path] = item }
    }

    /// A local file's content hash and its stat on the disk while it was read (nil when it
    /// changed meanwhile): a hash and a stat that belong together.
    func hashAndStat(of local: LocalItem) async throws -> (hash: String, stat: SyncStat?) {
        let path = absolute(local.path)
        return try await BlockingWork.run {
            let before = FileStamp.of(path)
            let hash = try SyncFiles.contentHash(of: local, absolute: path, like: nil)
            guard let before, !before.isDirectory, !before.isSymbolicLink, let after = FileStamp.of(path),
                  !before.contentDiffers(from: after) else { return (hash, nil) }
            return (hash, SyncStat(before))
        }
    }

    /// The local item's content hash, of the kind of `expected` when given (SyncFiles+ChecksumKinds.swift).
    func hashOf(_ local: LocalItem, like expected: String? = nil) async throws -> String {
        let path = absolute(local.path)
        return try await BlockingWork.run { try SyncFiles.contentHash(of: local, absolute: path, like: expected) }
    }

    func wakeLater() {
        Task { [self, wakeContinuation] in
            try? await Task.sleep(for: .seconds(1))
            remoteDirty.store(true, ordering: .relaxed)
            wakeContinuation.yield()
        }
    }


    /// Puts the skip-backup attribute back on excluded paths whose file was replaced by another
    /// without it (vim, and other editors saving by rename, drop extended attributes); returns
    /// those paths. A file that kept its inode and lost the attribute was included on purpose
    /// (`ubiq include`), and is uploaded.
    func reapplyDroppedExclusions(_ excluded: Set<String>, items: [String: LocalItem], scope: LocalScope) throws -> Set<String> {
        guard !excluded.isEmpty else { return [] }
        let inodes = try journal.excludedInodes()
        var reapplied: Set<String> = []
        for path in excluded where scope.contains(path) {
            guard let local = items[path], !local.excluded, local.stat.kind == .file,
                  let inode = inodes[path], inode != local.stat.inode else { continue }
            do {
                try BackupExclusion.setExcluded(true, absolute(path))
            } catch {
                logger.warning("cannot put the skip-backup attribute back; the file is uploaded",
                               metadata: ["ubiquity.path": "\(path)", "ubiquity.error": "\(error)"])
                continue
            }
            try journal.setExcluded(path, true, inode: local.stat.inode)
            reapplied.insert(path)
            logger.info("the skip-backup attribute was dropped by a save that replaced the file; put back",
                        metadata: ["ubiquity.path": "\(path)"])
        }
        return reapplied
    }
}
