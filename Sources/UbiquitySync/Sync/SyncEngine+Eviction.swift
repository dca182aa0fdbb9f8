// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityStore
import UbiquityIndex
import CUbiquityShims
import UbiquityCloudKit

/// Eviction and on-demand download (`docs/sync.md`, "Eviction"): an evicted file is a hidden
/// stub `.NAME.icloud` (``Placeholder``) in place of `NAME`, the journal marks its ID evicted,
/// and sync never uploads the stub nor takes its eviction for an edit or a delete. Anything
/// written at the free name never replaces the server's content: the server's version comes
/// back under the name and what was written is kept as a conflict version.
extension SyncEngine {
    /// The path of the absolute `path` relative to the folder ("" for the folder itself).
    /// - Throws: `invalidArgument` when it is not in the sync folder.
    nonisolated func relativePath(_ path: String) throws -> String {
        let canonical = (try? CanonicalPath.canonicalize(path)) ?? path
        if canonical == folder { return "" }
        guard canonical.hasPrefix(folder + "/") else {
            throw UbiquityError(.invalidArgument, "'\(path)' is not in the sync folder '\(folder)'")
        }
        return String(canonical.dropFirst(folder.count + 1))
    }

    // MARK: Evict

    /// Evicts the item at the absolute `path`: a file is replaced by its hidden stub (name, size,
    /// permissions, modification time and user attributes kept; the name itself is free); a folder (or the sync folder) has
    /// every file in it that can be evicted evicted, the others left as they are. Returns the
    /// absolute paths evicted (a file already evicted counts). `progress` hears the bytes of a
    /// folder's files looked at so far, of all.
    /// - Throws: `invalidArgument` (not in the sync folder, excluded from sync, not a file, a
    ///   name too long for its stub), `notFound`, `conflict` (not uploaded yet, has unsaved
    ///   conflict versions, pinned, open in another program, changed while it was evicted).
    package func evict(_ path: String, progress: (@Sendable (_ done: Int64, _ total: Int64) -> Void)? = nil) async throws -> [String] {
        let relative = try relativePath(path)
        return try await exclusively {
            let entry = relative.isEmpty ? nil : try journal.entry(path: relative)
            let isFolder = relative.isEmpty || entry?.stat.kind == .folder || (entry == nil && FileStamp.of(absolute(relative))?.isDirectory == true)
            if isFolder {
                var evicted: [String] = []
                let files = try journal.entries().filter { $0.stat.kind == .file && (relative.isEmpty || $0.path.hasPrefix(relative + "/")) }
                let total = files.reduce(Int64(0)) { $0 + $1.stat.size }
                var done: Int64 = 0
                for file in files.sorted(by: { $0.path < $1.path }) {
                    defer {
                        done += file.stat.size
                        progress?(done, total)
                    }
                    do {
                        _ = try await evictFile(file)
                        evicted.append(absolute(file.path))
                    } catch {
                        logger.info("not evicted", metadata: ["ubiquity.path": "\(file.path)", "ubiquity.error": "\(error)"])
                    }
                }
                return evicted
            }
            guard let entry else {
                let target = absolute(relative)
                guard let local = SyncFiles.item(path: relative, absolute: target) else {
                    throw UbiquityError(.notFound, "no item at '\(target)'")
                }
                if local.excluded { throw UbiquityError(.invalidArgument, "'\(target)' is excluded from sync: it is not on the server") }
                throw UbiquityError(.conflict, "'\(target)' is not uploaded yet")
            }
            _ = try await evictFile(entry)
            return [absolute(entry.path)]
        }
    }

    /// Evicts one journaled file; false when it was evicted already. Its hidden stub is written
    /// first (``Placeholder``: the document's mode, modification time and user attributes), then
    /// the file is moved aside and removed, under a coordinated write; an edit seen after the
    /// check puts the file back and keeps it.
    @discardableResult
    func evictFile(_ entry: JournalEntry) async throws -> Bool {
        let target = absolute(entry.path)
        guard entry.stat.kind == .file else {
            throw UbiquityError(.invalidArgument, "'\(target)' is not a file: only files are evicted (a folder file by file)")
        }
        let path = entry.path
        guard let local = try await BlockingWork.run({ SyncFiles.item(path: path, absolute: target) }) else {
            throw UbiquityError(.notFound, "no item at '\(target)'")
        }
        if try journal.isEvicted(entry.id), local.isStub { return false }
        if isPinned(entry.path) {  // SyncEngine+Pinning.swift
            throw UbiquityError(.conflict, "'\(target)' is pinned (kept downloaded): 'ubiq unpin' it first")
        }
        if try local.excluded || journal.excluded().contains(entry.path) {
            throw UbiquityError(.invalidArgument, "'\(target)' is excluded from sync: it is not on the server")
        }
        guard let changeTag = entry.changeTag, local.stat.kind == .file, !local.isStub else {
            throw UbiquityError(.conflict, "'\(target)' is not uploaded yet")
        }
        let name = (entry.path as NSString).lastPathComponent
        guard Placeholder.canStand(forName: name) else {
            throw UbiquityError(.invalidArgument, "'\(target)' has a name too long to evict: its stub '\(Placeholder.stubName(for: name))' would exceed \(NAME_MAX) bytes")
        }
        let url = URL(fileURLWithPath: target)
        let versions = try await BlockingWork.run { FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0 }
        if versions > 0 || memory.conflicted[entry.id] != nil {
            throw UbiquityError(.conflict, "'\(target)' has unsaved conflict versions: resolve them first (ubiq resolve)")
        }
        var expected = entry.stat
        if local.stat.differs(from: entry.stat) {
            guard try await hashOf(local, like: entry.contentHash) == entry.contentHash else {
                throw UbiquityError(.conflict, "'\(target)' is not uploaded yet: it changed since its last upload")
            }
            expected = local.stat
        }
        let marker = Placeholder(name: name, id: entry.id, changeTag: changeTag, hash: entry.contentHash, size: expected.size)
        let base = expected
        try noteTemporaries(in: SyncFiles.parent(of: target))  // the content moves aside there first (SyncEngine+Temporaries.swift)
        // presenters relinquish (and save) first, as for any write
        let stub = try await coordinator.coordinate(writingItemAt: url) { (url: URL) async throws -> LocalItem in
            try await BlockingWork.run { try Self.replaceByStub(url.path, marker: marker, base: base, relative: path) }
        }
        var updated = entry
        updated.stat = stub.stat
        try journalSynced([updated])
        try journal.setEvicted(entry.id, true)
        noteTransfer(entry.path) { transfer in
            transfer.downloadRequested = false
            transfer.downloadError = nil
        }
        logger.info("evicted", metadata: ["ubiquity.path": "\(entry.path)"])
        return true
    }

    /// Writes `marker` as the stub of the file at `path` and removes the file, if it is still
    /// as `base`: the file is renamed aside first and checked there, so an edit that came in
    /// between is put back (with the stub removed) instead of lost. Returns the stub's item.
    nonisolated static func replaceByStub(_ path: String, marker: Placeholder, base: SyncStat, relative: String) throws -> LocalItem {
        guard let now = FileStamp.of(path), !SyncStat(now).differs(from: base) else {
            throw UbiquityError(.conflict, "'\(path)' changed while it was evicted: not evicted")
        }
        // a program that has it open could still write to it: what it wrote would be lost
        if SyncFiles.isOpenElsewhere(path) { throw UbiquityError(.conflict, "'\(path)' is open in another program: not evicted") }
        let stubPath = Placeholder.stubPath(for: path)
        do {
            try marker.write(at: stubPath, mode: now.mode, modifiedMilliseconds: now.modificationNanoseconds / 1_000_000, attributesFrom: path)
        } catch {
            // renamed into place before its folder's fsync failed: the file is here and not
            // evicted, so a stub at its name is this call's; left beside the file, it took the
            // file's name once the file was renamed (sync simulator seed 322)
            unlink(stubPath)
            throw error
        }
        let aside = SyncFiles.temporaryPath(near: path)
        guard rename(path, aside) == 0 else {
            let error = UbiquityError.posix("rename", path: path)
            unlink(stubPath)
            throw error
        }
        guard let moved = FileStamp.of(aside), !SyncStat(moved).differs(from: base) else {
            // written between the check and the move: the file stays (or, if a new file took
            // its name meanwhile, beside it as a conflicted copy), the stub goes
            _ = putBack(aside, at: path)
            unlink(stubPath)
            throw UbiquityError(.conflict, "'\(path)' changed while it was evicted: not evicted")
        }
        unlink(aside)
        // (best effort: the content is the server's, and a file back beside its stub after a
        // power loss is taken for the downloaded file)
        try? SafeSave.syncDirectory(SyncFiles.parent(of: path))
        guard let stub = SyncFiles.stubItem(path: relative, absolute: path) else {
            throw UbiquityError(.notFound, "the stub of '\(path)' vanished after it was written")
        }
        return stub
    }

    /// Puts the file moved aside to `aside` back at `path`, or, when a new file took `path`
    /// meanwhile, under a conflicted-copy name beside it (never over anything). True when it is
    /// back at `path`.
    nonisolated static func putBack(_ aside: String, at path: String) -> Bool {
        if ub_rename(aside, path, 1, 0) == 0 { return true }
        let copy = conflictName(path, device: "evicted", suffix: RandomSource.system.hexadecimal(4))
        if ub_rename(aside, copy, 1, 0) != 0 { rename(aside, copy) }
        return false
    }

    // MARK: Download on demand

    /// The evicted files the absolute `path` names (a folder: every evicted file in it).
    /// - Throws: `invalidArgument` when it is not in the sync folder, `notFound` when nothing is there.
    package func downloadTargets(_ path: String) throws -> [String] {
        let relative = try relativePath(path)
        if let entry = try journal.entry(path: relative), entry.stat.kind != .folder {
            // one file (an open of it through the mount waits for this): no walk of the journal
            return try journal.isEvicted(entry.id) ? [absolute(entry.path)] : []
        }
        let evicted = try journal.evicted()
        let entries = try journal.entries()
        if !relative.isEmpty && Placeholder.stamp(ofItemAt: absolute(relative)) == nil {
            throw UbiquityError(.notFound, "no item at '\(absolute(relative))'")
        }
        return entries.filter { evicted.contains($0.id) && (relative.isEmpty || $0.path.hasPrefix(relative + "/")) }
            .map { absolute($0.path) }.sorted()
    }

    /// Downloads the evicted files the absolute `path` names (see ``downloadTargets(_:)``):
    /// each record is fetched and its content replaces the placeholder under a coordinated write
    /// (temporary file, hash check, fsync, rename), if the placeholder is still untouched.
    /// `progress` hears each file's percent done (throttled). Returns the paths downloaded.
    /// - Throws: what ``downloadTargets(_:)`` throws; `io` naming the files that failed.
    package func startDownloading(_ path: String, progress: (@Sendable (_ path: String, _ percent: Double) -> Void)? = nil) async throws -> [String] {
        let targets = try downloadTargets(path)
        for target in targets { noteTransfer(try relativePath(target)) { $0.downloadRequested = true } }
        var done: [String] = []
        var failures: [String] = []
        for target in targets {
            let relative = try relativePath(target)
            if let progress { progressListeners.withLock { $0[relative] = { percent in progress(target, percent) } } }
            defer { progressListeners.withLock { $0[relative] = nil } }
            do {
                try await exclusively { try await downloadEvicted(relative) }
                done.append(target)
            } catch is CancellationError {
                throw CancellationError()
            } catch {
                noteDownloadFailed(relative, error)
                failures.append("'\(target)': \(Self.message(error))")
            }
        }
        if !failures.isEmpty { throw UbiquityError(.io, "not downloaded: " + failures.joined(separator: "; ")) }
        return done
    }

    /// Downloads the evicted file at `relative`, if it still is one.
    func downloadEvicted(_ relative: String) async throws {
        guard var entry = try journal.entry(path: relative), try journal.isEvicted(entry.id) else { return }
        noteTransfer(relative) { transfer in
            transfer.isDownloading = true
            transfer.percentDownloaded = 0
            transfer.downloadRequested = true
        }
        let record: Record
        do {
            record = try await database.record(for: Record.ID(recordName: entry.id, zoneID: SyncRecord.zoneID))
        } catch let error as CloudKitError where error.code == .unknownItem {
            throw UbiquityError(.notFound, "'\(absolute(relative))' is no longer on the server", underlying: error)
        }
        guard let item = SyncRecord.item(from: record) else {
            throw UbiquityError(.protocolError, "the server's record of '\(absolute(relative))' is not a synced item")
        }
        if item.changeTag != entry.changeTag || item.path != entry.path {
            // a newer version (or name): the placeholder follows it first, then it downloads
            try await applyRemote(item, record)
            guard let fresh = try journal.entry(id: item.id), try journal.isEvicted(item.id) else { return }
            entry = fresh
        }
        let target = absolute(entry.path)
        let current = entry.path
        guard let local = try await BlockingWork.run({ SyncFiles.item(path: current, absolute: target) }) else {
            throw UbiquityError(.notFound, "'\(target)' is gone here (its stub was removed)")
        }
        guard local.isStub else {
            // something was written where the evicted file was: the server's version takes the
            // name, what was written is kept as a conflict version
            return try await settleWrittenOverStub(entry, local, item: item, record: record)
        }
        if let url = record[SyncRecord.Field.content]?.assetValue?.downloadURL {
            // a reader through the mount far ahead of the download fetches its own bytes
            let name = (item.path as NSString).lastPathComponent
            arrivals.offerRanges(item.path) { range in try await AssetTransfer().bytes(in: range, from: url, name: name) }
        }
        try await download(item, record, expected: nil)
        // used now, for the least-recently-used policy (the modification time is the record's)
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]  // UTIME_NOW, UTIME_OMIT
        utimensat(AT_FDCWD, absolute(item.path), &times, AT_SYMLINK_NOFOLLOW)
        logger.info("downloaded on demand", metadata: ["ubiquity.path": "\(item.path)"])
    }

    // MARK: What the passes ask

    /// What the local pass does with the evicted `entry` whose item here is `local` (sync never
    /// uploads an evicted file's bytes: there are none here). Its stub untouched: nothing. Its
    /// stub touched or rewritten: the new stat is journaled. Anything at the file's own name (a
    /// file written there, `>>`, an editor's save, a folder): ``settleWrittenOverStub(_:_:item:record:)``.
    func settleEvicted(_ entry: JournalEntry, _ local: LocalItem) async throws {
        if local.isStub {
            guard local.stat.differs(from: entry.stat) else { return }
            var updated = entry
            updated.stat = local.stat
            try journalSynced([updated])
            return
        }
        try await settleWrittenOverStub(entry, local)
    }

    /// Something was written at the name of the evicted `entry` (`local`). The server's content
    /// is never replaced by it: the same content is adopted (the file is simply here again);
    /// other content gets the server's version back under the name, and what was written is
    /// kept as an unresolved conflict version of it (a folder or a link moves aside); when the
    /// server no longer has the record, what was written is a new item. `item` and `record` are
    /// the server's, fetched here when not given.
    func settleWrittenOverStub(_ entry: JournalEntry, _ local: LocalItem, item: RemoteItem? = nil, record: Record? = nil) async throws {
        if local.stat.kind == .file, try await hashOf(local, like: entry.contentHash) == entry.contentHash {
            var updated = entry
            updated.stat = local.stat
            try await makeDurable(file: entry.path)  // SyncEngine+Durability.swift
            // the stub goes durably before the journal says the file is here: removed after and
            // undone by a power loss, it stood beside the file for good, hidden by it, for no
            // item (sync simulator seed 1161; 174 for a download)
            try removeStubsDurably(at: [entry.path])
            try journalSynced([updated])
            try journal.setEvicted(entry.id, false)  // downloaded again, in the index too
            logger.info("the evicted file's own content was put back: it is downloaded", metadata: ["ubiquity.path": "\(entry.path)"])
            return
        }
        var fetched: (item: RemoteItem, record: Record)?
        if let item, let record {
            fetched = (item, record)
        } else {
            do {
                let record = try await database.record(for: Record.ID(recordName: entry.id, zoneID: SyncRecord.zoneID))
                guard let item = SyncRecord.item(from: record) else {
                    throw UbiquityError(.protocolError, "the server's record of '\(absolute(entry.path))' is not a synced item")
                }
                fetched = (item, record)
            } catch let error as CloudKitError where error.code == .unknownItem {
                fetched = nil
            }
        }
        guard let (item, record) = fetched else {
            // deleted on the server meanwhile: what was written is all there is, a new item (the
            // stub goes durably first, as above)
            try removeStubsDurably(at: [entry.path])
            try journal.remove(id: entry.id)
            try keepUnjournaled(entry.path)
            logger.notice("written where an evicted file was, which the server no longer has: uploaded as a new item",
                          metadata: ["ubiquity.path": "\(entry.path)"])
            return
        }
        logger.notice("written where an evicted file was: the server's version is downloaded, what was written is kept as a conflict version",
                      metadata: ["ubiquity.path": "\(entry.path)"])
        try await keepConflict(item, record, localPath: entry.path, local: local)
    }

    /// Before a remote change of an evicted item is judged: true when the local item changed
    /// since the journal's stat and was settled (``settleEvicted(_:_:)``): judge again.
    func placeholderWasTouched(_ entry: JournalEntry, _ local: LocalItem) async throws -> Bool {
        guard local.stat.differs(from: entry.stat) || !local.isStub, try journal.isEvicted(entry.id) else { return false }
        try await settleEvicted(entry, local)
        return true
    }

    /// Writes the stub of the evicted `entry` again from what the journal knows (its stub was
    /// renamed to a name that is not a stub's), and journals it. Returns false, writing nothing,
    /// when the folder it was in is gone: the stub went with it, and the entry goes as deleted
    /// (written into a folder that is not there, it failed every pass for good: sync simulator
    /// seed 10956, a new file that took the deleted stub's inode, before birth times told).
    func restoreStub(_ entry: JournalEntry) async throws -> Bool {
        guard let changeTag = entry.changeTag else { return true }
        let target = absolute(entry.path), path = entry.path
        guard FileStamp.of(SyncFiles.parent(of: target))?.isDirectory == true else { return false }
        let marker = Placeholder(name: (entry.path as NSString).lastPathComponent, id: entry.id, changeTag: changeTag,
                                 hash: entry.contentHash, size: entry.stat.size)
        let mode = entry.stat.mode, modified = entry.stat.modifiedNanoseconds / 1_000_000
        let stub = try await BlockingWork.run { () throws -> LocalItem? in
            try marker.write(at: Placeholder.stubPath(for: target), mode: mode, modifiedMilliseconds: modified)
            return SyncFiles.stubItem(path: path, absolute: target)
        }
        if let stub {
            var updated = entry
            updated.stat = stub.stat
            try journalSynced([updated])
        }
        logger.notice("an evicted file's stub was renamed to a document's name: the stub is written again, the renamed file is a new item",
                      metadata: ["ubiquity.path": "\(entry.path)"])
        return true
    }

    /// Whether the item now at `local`'s path is the untouched stub of the evicted `entry` that
    /// moved there: its new path is sent, never its (absent) content.
    func isMovedPlaceholder(_ entry: JournalEntry, _ local: LocalItem, evicted: Set<String>) -> Bool {
        evicted.contains(entry.id) && entry.stat.kind == .file && local.isStub
    }

    /// A remote change of an evicted file's content rewrites its stub (size, marker,
    /// modification time, permissions) instead of downloading it. False when `item` is not
    /// evicted here (or something was written at its name).
    func refreshesPlaceholder(_ item: RemoteItem, local: SyncStat) async throws -> Bool {
        guard item.kind == .file, let changeTag = item.changeTag, try journal.isEvicted(item.id) else { return false }
        let target = absolute(item.path)
        let marker = Placeholder(name: (item.path as NSString).lastPathComponent, id: item.id, changeTag: changeTag,
                                 hash: item.contentHash, size: item.size)
        let path = item.path
        let stub = try await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: target)) { (url: URL) async throws -> LocalItem? in
            try await BlockingWork.run {
                guard let now = SyncFiles.item(path: path, absolute: url.path) else { throw ChangedLocally(path: path) }
                guard now.isStub else { return nil }
                guard !now.stat.differs(from: local) else { throw ChangedLocally(path: path) }
                try marker.write(at: Placeholder.stubPath(for: url.path), mode: item.mode, modifiedMilliseconds: item.modifiedMilliseconds)
                return SyncFiles.stubItem(path: path, absolute: url.path)
            }
        }
        guard let stub else { return false }
        try journalSynced([JournalEntry(id: item.id, path: item.path, stat: stub.stat, contentHash: item.contentHash, target: nil,
                                        changeTag: item.changeTag)])
        logger.debug("stub updated", metadata: ["ubiquity.path": "\(item.path)"])
        return true
    }

    // MARK: Budget

    /// Evicts the least recently used uploaded files, never pinned or open ones, while the
    /// downloaded content (pinned files included) exceeds ``evictionBudget``.
    func enforceEvictionBudget() async {
        guard let budget = evictionBudget,
              let entries = try? journal.entries(), let evicted = try? journal.evicted() else { return }
        let root = folder
        let files = entries.filter { $0.stat.kind == .file && !evicted.contains($0.id) }
        let downloaded = (try? await BlockingWork.run {
            files.compactMap { entry -> EvictionPolicy.Candidate? in
                var st = stat()
                guard lstat(root + "/" + entry.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
                let used = Int64(st.st_atim.tv_sec) * 1_000_000_000 + Int64(st.st_atim.tv_nsec)
                return EvictionPolicy.Candidate(id: entry.id, path: entry.path, size: Int64(st.st_size), lastUsed: used)
            }
        }) ?? []
        // pinned files count towards the budget and are never evicted (SyncEngine+Pinning.swift)
        let pinned = (try? journal.pinnedPaths()) ?? []
        let candidates = downloaded.filter { !SyncJournal.isPinned($0.path, among: pinned) }
        var total = downloaded.reduce(Int64(0)) { $0 + $1.size }
        guard total > budget else { return }
        for candidate in EvictionPolicy.order(candidates) {
            guard total > budget else { break }
            guard let entry = try? journal.entry(id: candidate.id) else { continue }
            do {
                if try await evictFile(entry) {
                    total -= candidate.size
                    logger.info("evicted to stay within the budget", metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.budget": "\(budget)"])
                }
            } catch {
                logger.debug("not evicted for the budget", metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.error": "\(error)"])
            }
        }
    }
}

extension SyncEngine {
    /// The sync state of the item at the absolute `path` (blocking: reads the journal and the
    /// item's conflict versions).
    /// - Throws: `invalidArgument` when it is not in the sync folder, `notFound` when nothing is there.
    package nonisolated func itemState(_ path: String) throws -> ItemSyncState {
        let relative = try relativePath(path)
        let target = relative.isEmpty ? folder : folder + "/" + relative
        guard let stamp = Placeholder.stamp(ofItemAt: target) else { throw UbiquityError(.notFound, "no item at '\(target)'") }
        let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: URL(fileURLWithPath: target))?.count ?? 0
        let status = journal.status(relativePath: relative, canonical: target, stamp: stamp, conflicts: conflicts)
        return journal.itemState(relativePath: relative, status: status)
    }
}
