// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityCloudKit

extension SyncEngine {
    static let tokenKey = "zoneChangeToken"

    /// The local item changed between the decision and the write: decided again next pass.
    struct ChangedLocally: Error, CustomStringConvertible {
        let path: String
        var description: String { "'\(path)' changed locally while it was being replaced; it is looked at again" }
    }

    /// Fetches the zone's changes since the saved token (everything when there is none, or
    /// when it expired) and applies them; the token is saved only when every change applied.
    func pullRemote() async throws {
        var token = try journal.value(Self.tokenKey).map(ServerChangeToken.init(rawValue:))
        var full = token == nil
        var records: [String: Record] = [:]
        var deleted: [String] = []
        var listed = Set<String>()
        var early = Set<String>()  // applied while the listing went on (``applyNewItemsEarly(_:)``)
        var earlyFailed = false
        var sinceEarly = 0
        // the next pages are fetched while the ones at hand are applied (ZoneChangePages.swift)
        var pages = ZoneChangePages(database: database, zoneID: SyncRecord.zoneID, since: token, ahead: Self.pagesAhead)
        defer { pages.cancel() }
        while true {
            let page: ZoneChangePages.Page
            do {
                guard let next = try await pages.next() else { throw UbiquityError(.io, "the listing of the zone's changes ended early") }
                page = next
            } catch let error as CloudKitError where error.code == .changeTokenExpired && token != nil {
                logger.notice("the zone's change token expired: listing every item")
                token = nil
                full = true
                records = [:]
                deleted = []
                listed = []
                pages.cancel()
                pages = ZoneChangePages(database: database, zoneID: SyncRecord.zoneID, since: nil, ahead: Self.pagesAhead)
                continue
            }
            for (id, result) in page.modificationResultsByID {
                listed.insert(id.recordName)
                if case .success(let modification) = result {
                    records[id.recordName] = modification.record
                    deleted.removeAll { $0 == id.recordName }
                }
            }
            for deletion in page.deletions {
                records[deletion.recordID.recordName] = nil
                deleted.append(deletion.recordID.recordName)
            }
            token = page.changeToken
            if !page.moreComing { break }
            sinceEarly += page.modificationResultsByID.count
            if sinceEarly >= Self.recordsBeforeEarlyApply {
                sinceEarly = 0
                let done = try await applyNewItemsEarly(records)
                for id in done.applied { records[id] = nil }
                early.formUnion(done.applied)
                if done.failed { earlyFailed = true }
            }
        }
        if full {
            // a full listing: journaled items the server no longer has were deleted there
            for entry in try journal.entries() where entry.changeTag != nil && !listed.contains(entry.id) { deleted.append(entry.id) }
        }
        var failed = earlyFailed
        let fetched = records.values.compactMap { record in SyncRecord.item(from: record).map { ($0, record) } }
        // the versions journaled here already (this device's own uploads coming back) are not
        // judged: the decision would be "nothing" whatever the file is (one journal read)
        let (unapplied, applied) = SyncDecision.splitAlreadyApplied(fetched, journaledTags: try journal.changeTags(ids: fetched.map(\.0.id)))
        for item in applied { appLinks?.makeRoom(for: item.path) }  // as ``applyRemote(_:_:changing:)`` does first
        if !applied.isEmpty { logger.debug("fetched records already applied here", metadata: ["ubiquity.count": "\(applied.count)"]) }
        let items = unapplied.map { (Self.depth($0.0.path), $0) }.sorted { ($0.0, $0.1.0.path) < ($1.0, $1.1.0.path) }.map(\.1)
        // the records changing here in this batch: one of them is never a duplicate of another (a
        // path freed by a delete or a rename and taken by a new record). This device's own
        // records coming back change nothing here: the journal has them where they are, so a
        // record for the same path is a duplicate, judged by the rule every device applies; so
        // are two records of this batch at one path (neither frees it for the other: before, the
        // second one journaled took the first one's place and nobody deleted the first; found by
        // the sync simulator, seed 130)
        var landing: [String: Int] = [:]
        for (item, _) in unapplied { landing[item.path, default: 0] += 1 }
        let changing = Set(unapplied.lazy.filter { landing[$0.0.path] == 1 }.map(\.0.id)).union(deleted).union(early)
        try await prefetch(items)
        defer { dropPrefetched() }
        // new files with their content at hand are written together (SyncEngine+NewFiles.swift),
        // after the rest (folders first, moves, edits) is applied one by one
        let (newFiles, rest) = try await splitNewFiles(items)
        for (item, record) in try movesFirst(rest) {
            try Task.checkCancellation()
            do { try await applyRemote(item, record, changing: changing) } catch {
                failed = true
                noteDownloadFailed(item.path, error)  // status (SyncEngine+Progress.swift)
                logger.warning("could not apply a remote change", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.error": "\(error)"])
            }
        }
        let written = try await applyNewFiles(newFiles)
        if written.failed { failed = true }
        for item in written.alone {
            // a name taken since the page was fetched: judged alone, as any change
            guard let record = records[item.id] else { continue }
            try Task.checkCancellation()
            do { try await applyRemote(item, record, changing: changing) } catch {
                failed = true
                noteDownloadFailed(item.path, error)
                logger.warning("could not apply a remote change", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.error": "\(error)"])
            }
        }
        // conflict versions kept on other devices, and resolved ones (SyncEngine+ConflictVersions.swift)
        if await applyRemoteConflictVersions(records.values, deleted: deleted, listed: full ? listed : nil) { failed = true }
        let deletions = try deleted.compactMap { try journal.entry(id: $0) }.sorted { Self.depth($0.path) > Self.depth($1.path) }
        for entry in deletions {
            do { try await applyRemoteDeletion(entry) } catch {
                failed = true
                logger.warning("could not apply a remote delete", metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.error": "\(error)"])
            }
        }
        try sendWhatMovedAlong(changing: changing)
        // records held back by a skip-backup item here, after this fetch's folders moved (SyncEngine+HeldBack.swift)
        do { try await applyHeldBack() } catch {
            failed = true
            logger.warning("could not apply the records held back by skip-backup items", metadata: ["ubiquity.error": "\(error)"])
        }
        if failed { throw UbiquityError(.io, "some remote changes were not applied; they are fetched again") }
        if let token { try journal.setValue(token.rawValue, Self.tokenKey) }
    }

    /// Pages of a listing fetched beyond the one being applied (200 records each): about as
    /// many as come between two early applies, so the server lists the next ones meanwhile.
    static let pagesAhead = 5

    /// Records fetched (while more are coming) before the new items among them are applied
    /// without waiting for the rest of the listing (``applyNewItemsEarly(_:)``).
    static let recordsBeforeEarlyApply = 1_000

    /// While a long listing is still coming, the items that are new here are applied at once
    /// instead of after its last page, so the first files of a large upload elsewhere appear
    /// while the rest still arrives (and this device's writes overlap the other's upload): a
    /// folder or a file with no journal entry by ID or by path, the only record fetched at its
    /// path, a file's content inline or empty. Folders go first (by depth), then the files
    /// together (``applyNewFiles(_:)``). Everything else — edits, moves, deletes, a name taken,
    /// two records at one path — waits for the whole listing, judged as before with the items
    /// applied here counted among the ones changing. Returns the IDs applied and whether some
    /// failed (then the change token is not saved, and the listing is fetched again).
    func applyNewItemsEarly(_ records: [String: Record]) async throws -> (applied: [String], failed: Bool) {
        let fetched = records.values.compactMap { record in SyncRecord.item(from: record).map { ($0, record) } }
        var perPath: [String: Int] = [:]
        for (item, _) in fetched { perPath[item.path, default: 0] += 1 }
        let candidates = fetched.filter { item, _ in
            perPath[item.path] == 1 && item.kind != .symlink && SyncFiles.isValid(relativePath: item.path)
        }
        let known = try journal.known(ids: candidates.map(\.0.id), paths: candidates.map(\.0.path))  // one read
        let unknown = candidates.filter { item, _ in !known.ids.contains(item.id) && !known.paths.contains(item.path) }
        // not into a folder that is neither here nor new in this batch: it may be a folder
        // renamed there whose record comes later, and a folder made for it early would take that
        // name first (found by the sync simulator, seed 234)
        // (one stat per folder looked for, not per item: a page of 10,000 new files in a few folders)
        let newFolders = Set(unknown.lazy.filter { $0.0.kind == .folder }.map(\.0.path))
        let parents = Set(unknown.lazy.map { SyncFiles.relativeParent(of: $0.0.path) }).subtracting(newFolders).subtracting([""])
        let root = folder
        let present = parents.isEmpty ? [] : try await BlockingWork.run { parents.filter { FileStamp.of(root + "/" + $0)?.isDirectory == true } }
        let placed = unknown.filter { item, _ in
            let parent = SyncFiles.relativeParent(of: item.path)
            return parent.isEmpty || newFolders.contains(parent) || present.contains(parent)
        }
        let new = placed
            .map { (Self.depth($0.0.path), $0) }.sorted { ($0.0, $0.1.0.path) < ($1.0, $1.1.0.path) }.map(\.1)
        guard !new.isEmpty else { return ([], false) }
        let changing = Set(new.map(\.0.id))
        let (files, rest) = try await splitNewFiles(new)
        var applied: [String] = []
        var failed = false
        for (item, record) in rest where item.kind == .folder {
            try Task.checkCancellation()
            do {
                try await applyRemote(item, record, changing: changing)
                applied.append(item.id)
            } catch {
                failed = true
                noteDownloadFailed(item.path, error)
                logger.warning("could not apply a remote change", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.error": "\(error)"])
            }
        }
        let written = try await applyNewFiles(files)
        let alone = Set(written.alone.map(\.id))  // judged with the whole listing
        applied += files.lazy.map(\.item.id).filter { !alone.contains($0) }
        if !applied.isEmpty { logger.debug("applied new items while the listing goes on", metadata: ["ubiquity.count": "\(applied.count)"]) }
        return (applied, failed || written.failed)
    }

    /// `items` (in depth order) with the folders moving away from a path here, and what goes
    /// with them, before the records at or under those old paths (made there elsewhere after
    /// the move); each group keeps its order, so parents still come first. Applied first, a
    /// record made at `docs/old` after `docs` moved to `media/docs` elsewhere lands in this
    /// device's `docs`, and the move then carries it along: journaled at `media/docs/old` while
    /// its record stays at `docs/old`, and nothing sends it (sync simulator seeds 346, 366).
    /// A folder moving under its own old path (`docs` → `docs/old`) is itself among the records
    /// under an old path: the moving folders go first there, or a record sorted before it
    /// (`docs/B.txt`) lands in the folder about to move and goes along (seed 1836); the move
    /// makes the parents it needs.
    func movesFirst(_ items: [(RemoteItem, Record)]) throws -> [(RemoteItem, Record)] {
        let folders = items.lazy.filter { $0.0.kind == .folder }.map(\.0)
        let journaled = try journal.paths(ids: folders.map(\.id))  // one read for the page
        let moving = Dictionary(folders.compactMap { item in journaled[item.id].flatMap { $0 != item.path ? (item.id, $0) : nil } },
                                uniquingKeysWith: { first, _ in first })
        guard !moving.isEmpty else { return items }
        let movingAway = Array(moving.values)
        let underOld = { (path: String) in movingAway.contains { path == $0 || path.hasPrefix($0 + "/") } }
        let later = items.filter { underOld($0.0.path) }
        return items.filter { !underOld($0.0.path) } + later.filter { moving[$0.0.id] != nil } + later.filter { moving[$0.0.id] == nil }
    }

    /// Applies one record that changed on the server.
    func applyRemote(_ item: RemoteItem, _ record: Record, changing: Set<String> = []) async throws {
        guard SyncFiles.isValid(relativePath: item.path) else {
            logger.warning("ignoring a record with an unusable path", metadata: ["ubiquity.path": "\(item.path)"])
            return
        }
        appLinks?.makeRoom(for: item.path)  // an app's folder link of that name moves aside (AppFolderLinks.swift)
        if refusesLinkOnTheWay(item) { return }  // never written through a link (SyncEngine+LinkedParents.swift)
        let journaled = try journal.entry(id: item.id)
        if journaled == nil, try await dropsDuplicate(item, record, changing: changing) { return }
        // an entry never confirmed by the server (killed before its upload was journaled): its
        // own upload coming back is judged as synced, anything else as unknown (judgedEntry)
        let entry = SyncDecision.judgedEntry(journaled, remote: item)
        let localPath = journaled?.path ?? item.path
        let localAbsolute = absolute(localPath)
        let root = folder, known = journaled != nil
        let (local, intoKeptBack) = try await BlockingWork.run {
            (SyncFiles.item(path: localPath, absolute: localAbsolute),
             SyncFiles.isInsideExcludedFolder(item.path, root: root) && (!known || !SyncFiles.isInsideExcludedFolder(localPath, root: root)))
        }
        // gone from its journaled path, already at the record's: this device's own move (SyncEngine+OwnMoves.swift)
        if let journaled, local == nil, try await movedHereAlready(journaled, to: item) { return try await applyRemote(item, record, changing: changing) }
        if local?.excluded == true {
            // kept back here: never replaced. Unknown here, the record waits for the name
            // (SyncEngine+HeldBack.swift); journaled, the local pass deletes its record (marked
            // skip-backup) and a newer version there comes back as new, then waits the same way.
            // (Replacing it here failed at every pass: seed 191.)
            if entry == nil { try holdBack(item.id, path: item.path) }
            return
        }
        if intoKeptBack {
            // inside a folder kept back here (from outside one, when journaled): nothing is
            // written there, the record waits (SyncEngine+HeldBack.swift; seed 838)
            if let journaled { try await leaveForKeptBack(journaled, to: item) } else { try holdBack(item.id, path: item.path) }
            return
        }
        if journaled == nil, local?.isStub == true {
            // another item's evicted file holds the name (its stub; it moves or goes in this fetch,
            // or is another record at one path): never judged as this record's content
            throw UbiquityError(.alreadyExists, "'\(item.path)' is held by another item's evicted file; applied after it")
        }
        if let journaled, let local, try await placeholderWasTouched(journaled, local) { return try await applyRemote(item, record, changing: changing) }  // eviction
        if let journaled, journaled.changeTag != item.changeTag,
           var own = SyncDecision.ownUnconfirmedUpload(journaled, remote: item, sent: try journal.sentHashes(id: item.id)) {
            // this device's own upload, its answer lost: what changed here since goes over its tag
            logger.notice("the server holds this device's own upload whose answer was lost; it is taken as synced",
                          metadata: ["ubiquity.path": "\(item.path)"])
            if local != nil, item.path != localPath {
                // renamed on another device since it was sent (it is still at the name sent
                // here): renamed here too. Taken as synced at the old name, the rename was undone
                // or, with another item made at the old name there, never came (sim seed 4164).
                try await moveLocal(from: localPath, to: item.path)
                own.path = item.path
            } else if local == nil, item.path != localPath, try journal.entry(path: item.path) == nil {
                // gone from the name sent (moved here since, not sent yet, or deleted): journaled
                // at the server's name, the old one left free. Held there, the row went to a record
                // made at the old name elsewhere, and the moved item was sent again as new while
                // this record was forgotten (sim seed 19). The local pass finds it by its inode (a
                // move, sent over the tag) or not at all (a delete).
                own.path = item.path
            }
            try journalSynced([own], status: local == nil ? .uploaded : .uploading, forgettingSent: [item.id])
            if local != nil { try journal.enqueue([own.path]) }
            return
        }
        var localHash: String?
        if let local, local.stat.kind != .folder, entry.map({ SyncDecision.localChanged($0, local.stat) }) ?? true {
            localHash = try await BlockingWork.run { try SyncFiles.contentHash(of: local, absolute: localAbsolute, like: item.contentHash) }
        }
        let action = SyncDecision.remoteChange(entry: entry, local: local?.stat, localHash: localHash, remote: item)
        logger.debug("remote change", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.action": "\(action)"])
        switch action {
        case .nothing:
            return
        case .download:
            let destination = absolute(item.path)
            // gone from its name here (seed 102: a new file, not yet sent, was replaced)
            if let entry { try await makeRoom(for: item, from: entry.path) }
            let expected = entry == nil ? local?.stat : try await BlockingWork.run { SyncFiles.item(path: item.path, absolute: destination) }?.stat
            try await download(item, record, expected: expected)
        case .adopt:
            guard let local else { return }
            if local.stat.kind == .file, !local.isStub { try await makeDurable(file: localPath) }  // SyncEngine+Durability.swift
            if local.stat.kind == .folder, let error = try await makeNamesDurable([localPath])[localPath] { throw error }  // (seed 1755)
            try journalSynced([JournalEntry(id: item.id, path: localPath, stat: local.stat, contentHash: item.contentHash, target: item.target,
                                            changeTag: item.changeTag)])
            if localPath != item.path { try journal.enqueue([localPath]) }  // our name differs: the local pass sends it
        case .apply(let move, let content, let mode):
            guard var current = entry, let local else { return }
            if move {
                try await moveLocal(from: current.path, to: item.path)
                current.path = item.path
            }
            if content {
                if try await refreshesPlaceholder(item, local: local.stat) { return }  // evicted: no download (SyncEngine+Eviction.swift)
                try await download(item, record, expected: local.stat)
                return
            }
            let changedHere = SyncDecision.localChanged(current, local.stat)
            if mode && !changedHere { chmod(absolute(item.path), mode_t(item.mode & 0o7777)) }
            if !changedHere, let fresh = FileStamp.of(absolute(item.path)) { current.stat = SyncStat(fresh) }
            current.changeTag = item.changeTag
            current.baseHash = item.contentHash
            try journalSynced([current], status: changedHere ? .uploading : .uploaded)  // a local edit still waits
        case .conflict:
            try await keepConflict(item, record, localPath: localPath, local: local)
        case .deleteRemote:
            if let journaled, try journal.isEvicted(journaled.id) {
                // an evicted file gone from its name here and renamed there: its stub may have
                // moved with a rename here not scanned yet (a pass that failed before its local
                // part; sim seed 1497: case-only renames of its folders), and then the record is
                // all there is of its content, deleted everywhere. It is taken as new here
                // instead, downloaded at the record's path (a stub found elsewhere later is a
                // copy, SyncEngine+OrphanStubs.swift): both kept, nothing lost.
                try journal.remove(id: journaled.id)
                return try await applyRemote(item, record, changing: changing)
            }
            // only while the record is still this version (a newer one comes with the next fetch)
            guard let tag = item.changeTag else { return }
            if try await deleteRecord(item.id, ifTagIs: tag) == nil {
                // the file gone from its name here (a delete, or a rename after an editor's save
                // made it a new file): the conflict versions it kept here become files beside it,
                // as for a delete the local pass sends (sync simulator seed 3814, where they were
                // left linked to a name nothing had any more)
                if let journaled { try await restoreVersionsLeftHere(journaled) }
                try journal.remove(id: item.id)
            } else {
                remoteDirty.store(true, ordering: .relaxed)
            }
        }
    }

    /// Two records for one path (two devices created the same item): every device keeps the
    /// record with the smaller ID and deletes the other (never when the other record also
    /// changes in this batch: then the path was freed by a delete or a rename), so they converge on one; the content
    /// of the loser is then judged against the winner as usual (same content: adopted; other
    /// content: a conflict version; when `item` is the loser, its content is kept here first;
    /// when this device's record loses and its file is evicted, the file is downloaded first:
    /// SyncEngine+DuplicateContent.swift). Returns whether `item` is the one dropped.
    ///
    /// An entry that a folder renamed elsewhere moved along here (``isMovedAlongHere(_:)``) is
    /// not at `item`'s path on the server (its record is at the old one until its new path is
    /// sent): not a duplicate. It moves aside, as for a remote rename onto a taken name, and
    /// both records stay (sync simulator seed 9185: the record that lost was deleted with its
    /// content, where the device that renamed the folder had kept it at its old name).
    func dropsDuplicate(_ item: RemoteItem, _ record: Record, changing: Set<String>) async throws -> Bool {
        guard let other = try journal.entry(path: item.path), other.id != item.id, other.changeTag != nil,
              !changing.contains(other.id) else { return false }
        if try isMovedAlongHere(other.path) {
            try await moveAside(item.path)
            return false
        }
        let loser = min(item.id, other.id) == item.id ? other.id : item.id
        logger.notice("two records for one path: keeping one", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.dropped": "\(loser)"])
        if loser == item.id { try await keepDuplicateContent(item, record, winner: other) }
        if loser == other.id { try await bringBackEvictedLoser(other, winner: item) }
        // only the version this device knows: one saved elsewhere since stays, and comes back
        // with the next fetch (judged then against what holds its name; deleted whatever its
        // version, another device's save went with it everywhere: sync simulator seed 7013)
        if let tag = loser == item.id ? item.changeTag : other.changeTag, try await deleteRecord(loser, ifTagIs: tag) != nil {
            logger.notice("the dropped record changed elsewhere since: kept, applied again", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.dropped": "\(loser)"])
            remoteDirty.store(true, ordering: .relaxed)
        }
        if loser == other.id {
            try journal.remove(id: other.id)
            return false
        }
        return true
    }

    /// Both sides changed: the server's version takes the name; the local content becomes an
    /// unresolved conflict version of the item (a folder or link is moved aside instead).
    func keepConflict(_ item: RemoteItem, _ record: Record, localPath: String, local: LocalItem?) async throws {
        guard let local else { return try await download(item, record, expected: nil) }
        let localAbsolute = absolute(localPath)
        guard local.stat.kind == .file && item.kind == .file else {
            let aside = conflictName(localPath, device: deviceName)
            try await moveLocal(from: localPath, to: aside, updateJournal: false)
            try await download(item, record, expected: nil)
            logger.notice("conflict: the other version was moved aside", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.aside": "\(aside)"])
            return
        }
        let saved = stagingDirectory + "/conflict-" + UUID().uuidString
        let staged = try await coordinator.coordinate(readingItemAt: URL(fileURLWithPath: localAbsolute)) { url in
            try await BlockingWork.run { try SyncFiles.stage(url.path, to: saved) }
        }
        defer { unlink(saved) }
        guard !staged.before.contentDiffers(from: staged.after) else { throw ChangedLocally(path: localPath) }
        let expected = localPath == item.path ? SyncStat(staged.before) : nil
        try await makeRoom(for: item, from: localPath)  // seed 191: a skip-backup file there
        let device = deviceName
        let keep = { (url: URL) in
            try await BlockingWork.run {
                try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: URL(fileURLWithPath: saved), savingComputerName: device,
                                                   modificationDate: staged.before.modificationDate, options: .byMoving)
            }
        }
        // the local version is kept before the download replaces it (the version follows the item
        // across the rename: the download takes the replaced file's attributes): a stop between
        // the two left it only in the staging copy, lost (found by the sync simulator once a
        // stop could land there: seeds 92, 133, 174, 264). Kept twice at worst, never lost.
        let keptFirst = localPath == item.path ? try await keep(URL(fileURLWithPath: localAbsolute)) : nil
        if let keptFirst {
            // journaled before the download: one that fails after its rename (the folder's fsync)
            // left the version unknown to the journal, and the file's next saves, a rename and a
            // delete then lost it (sync simulator seed 3814)
            noteConflictKept(itemID: item.id, version: keptFirst)
            noteInConflict(itemID: item.id, path: item.path)
        }
        try await download(item, record, expected: expected)
        let target = URL(fileURLWithPath: absolute(item.path))
        if localPath != item.path {
            _ = try? await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: localAbsolute), options: .forDeleting) { (url: URL) async in
                if let now = FileStamp.of(url.path), !now.contentDiffers(from: staged.before) { unlink(url.path) }
            }
            // the item's earlier versions go to its new name with it (found by the sync
            // simulator, seed 101: left at the old name, they were taken for resolved)
            let from = localAbsolute, to = target.path
            try? await BlockingWork.run { FileVersion.itemDidMove(from: from, to: to) }
        }
        if keptFirst == nil {
            let version = try await keep(target)
            noteConflictKept(itemID: item.id, version: version)  // shared with the other devices (SyncEngine+ConflictVersions.swift)
            noteInConflict(itemID: item.id, path: item.path)
        }
        logger.notice("conflict: the server's version took the name; this device's is kept as a conflict version",
                      metadata: ["ubiquity.path": "\(item.path)"])
    }

    /// `name (conflicted copy DEVICE XXXX).ext` next to `path`, not yet taken (`XXXX` from the
    /// engine's ``randomness``).
    func conflictName(_ path: String, device: String) -> String {
        Self.conflictName(path, device: device, suffix: randomness.hexadecimal(4))
    }

    /// `name (conflicted copy DEVICE SUFFIX).ext` next to `path`.
    static func conflictName(_ path: String, device: String, suffix: String) -> String {
        let ns = path as NSString
        let ext = ns.pathExtension
        let stem = ext.isEmpty ? path : ns.deletingPathExtension
        return stem + " (conflicted copy \(device) \(suffix))" + (ext.isEmpty ? "" : "." + ext)
    }

    /// Writes the server's item at its path: downloaded to a temporary file in the target's
    /// folder, fsynced and renamed into place under a coordinated write, if the local item is
    /// still as `expected` (nil: nothing there); then journaled before the watcher's event is
    /// looked at, so it does not bounce back.
    func download(_ item: RemoteItem, _ record: Record, expected: SyncStat?) async throws {
        let target = absolute(item.path)
        try SyncFiles.makeParents(of: target)
        let url = URL(fileURLWithPath: target)
        // the file as written, stat'ed just before its rename: a stat taken after could be of an
        // edit made in between, which would then be journaled as synced and never uploaded
        var written: FileStamp?
        // an item new here is noted before it lands (SyncJournal+Landings.swift)
        let isNew = item.kind != .folder ? try journal.entry(id: item.id) == nil : false
        let landing = isNew ? SyncJournal.landingKey(item.id) : nil
        switch item.kind {
        case .folder:
            if let stamp = FileStamp.of(target), !stamp.isDirectory {
                throw UbiquityError(.alreadyExists, "'\(item.path)' is a file here and a folder on the server")
            }
            if FileStamp.of(target) == nil {
                try await coordinator.coordinate(writingItemAt: url) { (url: URL) async throws in
                    guard mkdir(url.path, mode_t(item.mode & 0o7777)) == 0 || errno == EEXIST else { throw UbiquityError.posix("mkdir", path: url.path) }
                }
                try SafeSave.syncDirectory(SyncFiles.parent(of: target))  // its name durable before it is journaled
            }
            chmod(target, mode_t(item.mode & 0o7777))
        case .symlink:
            let temporary = try temporaryPath(near: target)  // SyncEngine+Temporaries.swift
            guard symlink(item.target ?? "", temporary) == 0 else { throw UbiquityError.posix("symlink", path: temporary) }
            written = try await replace(url, with: temporary, expected: expected, item: item, mode: false, landing: landing)
        case .file:
            let temporary = try temporaryPath(near: target)  // SyncEngine+Temporaries.swift
            var downloaded: AssetDownloadResult?  // checked against the asset's checksum (SyncEngine+Delta.swift)
            var fetchedAhead = false
            if let data = record[SyncRecord.Field.inline]?.dataValue {
                do {
                    try await BlockingWork.run { try SyncFiles.writeNew(temporary, data) }
                } catch {
                    unlink(temporary)
                    throw error
                }
            } else if takePrefetched(item, to: temporary) {
                fetchedAhead = true  // the hash is checked below
            } else if let asset = record[SyncRecord.Field.content]?.assetValue {
                do {
                    // from the previous version's chunks when this device has it (SyncEngine+Delta.swift)
                    downloaded = try await downloadAsset(asset, to: URL(fileURLWithPath: temporary), basis: deltaBasis(for: item),
                                                         progress: downloadProgress(for: item.path))
                } catch {
                    unlink(temporary)
                    throw error
                }
            } else {
                let fd = open(temporary, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o600)
                guard fd >= 0 else { throw UbiquityError.posix("open", path: temporary) }
                close(fd)
            }
            // the file as written (not read again when the download checked the same SHA-256)
            let hash = Self.verified(downloaded, hash: item.contentHash) ? item.contentHash
                : try await BlockingWork.run { try SyncFiles.hashFile(temporary, like: item.contentHash) }
            guard hash == item.contentHash || item.contentHash.isEmpty else {
                unlink(temporary)
                throw UbiquityError(.io, "the downloaded content of '\(item.path)' does not match its hash")
            }
            written = try await replace(url, with: temporary, expected: expected, item: item, mode: true, landing: landing)
            if downloaded != nil || fetchedAhead, let asset = record[SyncRecord.Field.content]?.assetValue, let stamp = FileStamp.of(target),
               let written, !SyncStat(stamp).differs(from: SyncStat(written)) {
                keepChunkList(await chunkList(of: asset, after: downloaded), stamp: stamp, id: item.id)  // SyncEngine+Delta.swift
            }
        }
        hooks.afterWrite?(item.path)  // tests: the file may be edited here
        if landing != nil { try hooks.newFilesFault?("renamed") }  // tests: a failure before the journal write
        guard let stamp = written ?? FileStamp.of(target) else { throw UbiquityError(.notFound, "'\(item.path)' vanished after it was written") }
        // (where its stub was, when it was evicted: asked once, as before)
        let evictedAt = try journal.isEvicted(item.id) ? try journal.entry(id: item.id)?.path ?? item.path : nil
        if item.kind != .folder {
            try removeStubsDurably(at: [item.path] + (evictedAt.map { [$0] } ?? []))
            let parents = try parentsOfUnsyncedFolders(on: [item.path])  // (SyncEngine+Durability.swift)
            if !parents.isEmpty { try await BlockingWork.run { for parent in parents { try SafeSave.syncDirectory(parent) } } }
        }
        try journalSynced([JournalEntry(id: item.id, path: item.path, stat: SyncStat(stamp), contentHash: item.contentHash,
                                        target: item.target, changeTag: item.changeTag)], forgettingLanding: landing)
        try noteDownloaded(item, evictedAt: evictedAt)  // no longer evicted; progress over (SyncEngine+Progress.swift)
        onEvent?(.didDownload(path: item.path))
    }

    /// Renames `temporary` over `url` under a coordinated write, when the item there is still
    /// `expected`; returns the temporary's stamp taken just before the rename. With `landing`
    /// (an item new here), the entry it will have is noted under that key just before the
    /// rename (SyncJournal+Landings.swift).
    private func replace(_ url: URL, with temporary: String, expected: SyncStat?, item: RemoteItem, mode: Bool,
                         landing: String?) async throws -> FileStamp? {
        let path = item.path
        let journal = self.journal
        let note: @Sendable (FileStamp?) throws -> Void = { stamp in
            guard let landing, let stamp else { return }
            try journal.noteLanding([JournalEntry(id: item.id, path: item.path, stat: SyncStat(stamp), contentHash: item.contentHash,
                                                  target: item.target, changeTag: item.changeTag)], key: landing)
        }
        do {
            return try await coordinator.coordinate(writingItemAt: url, options: .forReplacing) { (url: URL) async throws -> FileStamp? in
                let now = FileStamp.of(url.path).map(SyncStat.init)
                switch (now, expected) {
                case (nil, nil): break
                case (let now?, let expected?) where !now.differs(from: expected): break
                default: throw ChangedLocally(path: path)
                }
                if now?.kind == .folder { throw UbiquityError(.alreadyExists, "'\(path)' is a folder here and not on the server") }
                if mode {
                    return try SyncFiles.install(temporary, at: url.path, mode: item.mode, modifiedMilliseconds: item.modifiedMilliseconds,
                                                 beforeRename: note)
                }
                let stamp = FileStamp.of(temporary)
                try note(stamp)
                guard rename(temporary, url.path) == 0 else { throw UbiquityError.posix("rename", path: url.path) }
                return stamp
            }
        } catch {
            unlink(temporary)
            throw error
        }
    }

    /// Moves a local item (a remote rename) under a coordinated move, and its journal entries.
    func moveLocal(from: String, to: String, updateJournal: Bool = true) async throws {
        if to.hasPrefix(from + "/") {
            // a folder moved into a new folder at its own old name (`docs` → `docs/old`, as
            // `mv docs tmp; mkdir docs; mv tmp docs/old` does): one rename cannot (EINVAL), and
            // every pass failed on it while the server lacked the new folder's record (sim seed
            // 800). Through a free sibling name, a visible one (a stop in between is a local move,
            // never a delete); what is at the destination is inside the folder and goes with it;
            // the folder made again at the old name is new here, sent by the local pass.
            let middle = conflictName(from, device: deviceName)
            try await moveLocal(from: from, to: middle, updateJournal: updateJournal)
            try await moveLocal(from: middle, to: to, updateJournal: updateJournal)
            return
        }
        let source = URL(fileURLWithPath: absolute(from)), destination = URL(fileURLWithPath: absolute(to))
        try SyncFiles.makeParents(of: destination.path)
        if updateJournal, Self.isTaken(destination.path) { try await moveAside(to) }
        try await coordinator.coordinate(writingItemAt: source, options: .forMoving, writingItemAt: destination, options: .forReplacing) { (source: URL, destination: URL) async throws in
            if Self.isTaken(destination.path) { throw UbiquityError(.alreadyExists, "cannot move '\(from)' to '\(to)': something is there") }
            if FileStamp.of(source.path) == nil, SyncFiles.stubItem(path: from, absolute: source.path) != nil {
                // an evicted file: its stub moves (the name inside it is informational)
                let stub = Placeholder.stubPath(for: source.path)
                guard rename(stub, Placeholder.stubPath(for: destination.path)) == 0 else { throw UbiquityError.posix("rename", path: stub) }
                return
            }
            guard rename(source.path, destination.path) == 0 else { throw UbiquityError.posix("rename", path: source.path) }
        }
        coordinator.item(at: source, didMoveTo: destination)
        // durable before it is journaled: undone by a power loss, it would be sent back as a move
        // here (best effort: the move is done, and a journal left behind it would make the next
        // pass judge it again; undone, it is sent back, nothing is lost)
        for folder in Set([SyncFiles.parent(of: source.path), SyncFiles.parent(of: destination.path)]) { try? SafeSave.syncDirectory(folder) }
        if updateJournal {
            if FileStamp.of(destination.path)?.isDirectory == true { try noteFolderMovedHere(to) }  // (SyncEngine+MovedAlong.swift)
            try journal.movePrefix(from: from, to: to)
        }
    }

    /// A remote item renamed there from `localPath` onto a name something else holds here: that
    /// moves aside (``moveAside(_:)``), as for a rename applied by ``moveLocal(from:to:updateJournal:)``.
    func makeRoom(for item: RemoteItem, from localPath: String) async throws {
        if localPath != item.path, Self.isTaken(absolute(item.path)) { try await moveAside(item.path) }
    }

    /// Whether something holds the name at the absolute `path` here: an item, or another
    /// item's evicted file (its stub). A file put beside a stub would take the evicted file's
    /// name and its journal row's path (sync simulator seed 19: the rename's journal update
    /// failed on every pass, and the evicted file's download never landed).
    nonisolated static func isTaken(_ path: String) -> Bool {
        FileStamp.of(path) != nil || FileStamp.of(Placeholder.stubPath(for: path)) != nil
    }

    /// Something else took the name `path` here, which a remote item needs: it moves aside as
    /// a conflicted copy (and is uploaded as its own item; one marked skip-backup stays so).
    func moveAside(_ path: String) async throws {
        let aside = conflictName(path, device: deviceName)
        logger.notice("a remote rename needs a taken name: the local item there moves aside",
                      metadata: ["ubiquity.path": "\(path)", "ubiquity.aside": "\(aside)"])
        try await moveLocal(from: path, to: aside, updateJournal: false)
        // what went aside with a folder keeps its records' old paths on the server while the
        // journal has it at the new name: sent under it, as what a remote rename moves along
        // (sync simulator seeds 711, 804: it stayed there, and the devices never agreed again)
        if FileStamp.of(absolute(aside))?.isDirectory == true { try noteFolderMovedHere(aside) }
        try journal.movePrefix(from: path, to: aside)
        try journal.enqueue([aside])  // the local pass sends its new name
    }

    /// Applies a record deleted on the server.
    func applyRemoteDeletion(_ entry: JournalEntry) async throws {
        let target = absolute(entry.path)
        let local = try await BlockingWork.run { SyncFiles.item(path: entry.path, absolute: target) }
        if let local, local.isStub {
            // an evicted file deleted elsewhere: its stub stands for nothing now, and goes durably
            // before the journal forgets it (back after a power loss, it stood for no journaled
            // item and was sent as new: sync simulator seed 314)
            let removed = try await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: target), options: .forDeleting) { (url: URL) async in
                Placeholder.removeStub(for: url.path)
            }
            if removed { try SafeSave.syncDirectory(SyncFiles.parent(of: target)) }
            try journal.remove(id: entry.id)
            return
        }
        let root = folder
        if let local, try await BlockingWork.run({ local.excluded || SyncFiles.isInsideExcludedFolder(entry.path, root: root) }) {
            // marked skip-backup here (its record's delete may be this device's own, its answer
            // lost): what is on this disk stays; found by the sync simulator (seed 52). An evicted
            // file's stub beside it (a file written over the evicted one, then marked) stands for
            // nothing now and goes durably first: left, no entry knew it (seed 6329)
            if try journal.isEvicted(entry.id) { try removeStubsDurably(at: [entry.path]) }
            try journal.remove(id: entry.id)
            return
        }
        // something else is at its name, judged below (the stub goes durably before the journal
        // forgets the item: seed 1161)
        if try journal.isEvicted(entry.id) { try removeStubsDurably(at: [entry.path]) }
        let decision = SyncDecision.remoteDeletion(entry: entry, local: local?.stat)
        logger.debug("remote delete", metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.action": "\(decision)"])
        switch decision {
        case .forget:
            if local == nil { try await restoreVersionsLeftHere(entry) }
            try journal.remove(id: entry.id)
        case .keepLocal:
            await keepConflictVersionsWithFile(of: entry.id, at: entry.path)  // SyncEngine+DeletedInConflict.swift
            try journal.remove(id: entry.id)
            try keepUnjournaled(entry.path)
        case .deleteLocal:
            if local?.stat.kind == .file, try await restoreVersionsKeptHere(entry) { return }
            let removed = try await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: target), options: .forDeleting) { (url: URL) async -> Bool in
                guard let now = FileStamp.of(url.path) else { return true }
                if now.isDirectory { return rmdir(url.path) == 0 }
                guard !SyncStat(now).differs(from: entry.stat) else { return false }
                return unlink(url.path) == 0
            }
            // durable before it is forgotten: back after a power loss, it would be sent again as new
            if removed { try SafeSave.syncDirectory(SyncFiles.parent(of: target)) } else { await keepConflictVersionsWithFile(of: entry.id, at: entry.path) }
            try journal.remove(id: entry.id)
            if !removed {
                logger.notice("kept a local item deleted elsewhere: it changed here (or is not empty)", metadata: ["ubiquity.path": "\(entry.path)"])
                try keepUnjournaled(entry.path)
            }
        }
    }

    /// A local item kept although its record was deleted elsewhere (it changed here, or is a
    /// folder that is not empty) is sent again as a new item by the next local pass, unless
    /// another record has its path here already (two records for one path: the other one won).
    func keepUnjournaled(_ path: String) throws {
        guard try journal.entry(path: path) == nil else { return }
        try journal.enqueue([path])
        wakeLater()
    }
}
