// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityIndex

/// Eviction and on-demand download (`docs/sync.md`, "Eviction"): an evicted file is a
/// ``Placeholder`` (a sparse file of the real size carrying the record it stands for), the
/// journal marks its ID evicted, and sync never uploads it nor takes its eviction for an edit or
/// a delete. A write into a placeholder is a new local version, uploaded as an edit of the
/// version it stood for.
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

    /// Evicts the item at the absolute `path`: a file is replaced by its placeholder (name, size,
    /// permissions and modification time kept; no blocks); a folder (or the sync folder) has
    /// every file in it that can be evicted evicted, the others left as they are. Returns the
    /// absolute paths evicted (a file already evicted counts).
    /// - Throws: `invalidArgument` (not in the sync folder, excluded from sync, not a file),
    ///   `notFound`, `conflict` (not uploaded yet, has unsaved conflict versions, changed while
    ///   it was evicted).
    public func evict(_ path: String) async throws -> [String] {
        let relative = try relativePath(path)
        return try await exclusively {
            let entry = relative.isEmpty ? nil : try journal.entry(path: relative)
            let isFolder = relative.isEmpty || entry?.stat.kind == .folder || (entry == nil && FileStamp.of(absolute(relative))?.isDirectory == true)
            if isFolder {
                var evicted: [String] = []
                let files = try journal.entries().filter { $0.stat.kind == .file && (relative.isEmpty || $0.path.hasPrefix(relative + "/")) }
                for file in files.sorted(by: { $0.path < $1.path }) {
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

    /// Evicts one journaled file; false when it was evicted already.
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
        if try local.excluded || journal.excluded().contains(entry.path) {
            throw UbiquityError(.invalidArgument, "'\(target)' is excluded from sync: it is not on the server")
        }
        guard let changeTag = entry.changeTag, local.stat.kind == .file else {
            throw UbiquityError(.conflict, "'\(target)' is not uploaded yet")
        }
        if try journal.isEvicted(entry.id), !local.stat.differs(from: entry.stat) || Placeholder.isHollow(target) { return false }
        let url = URL(fileURLWithPath: target)
        let versions = try await BlockingWork.run { FileVersion.unresolvedConflictVersionsOfItem(at: url)?.count ?? 0 }
        if versions > 0 || conflicted[entry.id] != nil {
            throw UbiquityError(.conflict, "'\(target)' has unsaved conflict versions: resolve them first (ubiq resolve)")
        }
        var expected = entry.stat
        if local.stat.differs(from: entry.stat) {
            guard try await hashOf(local, like: entry.contentHash) == entry.contentHash else {
                throw UbiquityError(.conflict, "'\(target)' is not uploaded yet: it changed since its last upload")
            }
            expected = local.stat
        }
        let marker = Placeholder(id: entry.id, changeTag: changeTag, hash: entry.contentHash, size: expected.size)
        let base = expected
        // presenters relinquish (and save) first, as for any write
        let stamp = try await coordinator.coordinate(writingItemAt: url) { (url: URL) async throws -> FileStamp in
            try await BlockingWork.run {
                guard let now = FileStamp.of(url.path), !SyncStat(now).differs(from: base) else {
                    throw UbiquityError(.conflict, "'\(url.path)' changed while it was evicted: not evicted")
                }
                let temporary = SyncFiles.temporaryPath(near: url.path)
                do {
                    try marker.write(at: temporary, mode: now.mode, modifiedMilliseconds: now.modificationNanoseconds / 1_000_000)
                    try? ExtendedAttributes.copyUserAttributes(from: url.path, to: temporary)
                    guard rename(temporary, url.path) == 0 else { throw UbiquityError.posix("rename", path: url.path) }
                } catch {
                    unlink(temporary)
                    throw error
                }
                SafeSave.syncDirectory(url.deletingLastPathComponent().path)
                guard let stamp = FileStamp.of(url.path) else { throw UbiquityError(.notFound, "'\(url.path)' vanished after it was evicted") }
                return stamp
            }
        }
        var updated = entry
        updated.stat = SyncStat(stamp)
        try journal.put(updated)
        try journal.setEvicted(entry.id, true)
        noteTransfer(entry.path) { transfer in
            transfer.downloadRequested = false
            transfer.downloadError = nil
        }
        logger.info("evicted", metadata: ["ubiquity.path": "\(entry.path)"])
        return true
    }

    // MARK: Download on demand

    /// The evicted files the absolute `path` names (a folder: every evicted file in it).
    /// - Throws: `invalidArgument` when it is not in the sync folder, `notFound` when nothing is there.
    public func downloadTargets(_ path: String) throws -> [String] {
        let relative = try relativePath(path)
        let evicted = try journal.evicted()
        let entries = try journal.entries()
        if let entry = entries.first(where: { $0.path == relative }), entry.stat.kind != .folder {
            return evicted.contains(entry.id) ? [absolute(entry.path)] : []
        }
        if !relative.isEmpty && FileStamp.of(absolute(relative)) == nil {
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
    public func startDownloading(_ path: String, progress: (@Sendable (_ path: String, _ percent: Double) -> Void)? = nil) async throws -> [String] {
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
        guard Placeholder.isHollow(target) || FileStamp.of(target).map({ !SyncStat($0).differs(from: entry.stat) }) == true else {
            return  // written into meanwhile: a new local version, uploaded by the next pass
        }
        try await download(item, record, expected: FileStamp.of(target).map(SyncStat.init))
        // used now, for the least-recently-used policy (the modification time is the record's)
        var times = [timespec(tv_sec: 0, tv_nsec: (1 << 30) - 1), timespec(tv_sec: 0, tv_nsec: (1 << 30) - 2)]  // UTIME_NOW, UTIME_OMIT
        utimensat(AT_FDCWD, absolute(item.path), &times, AT_SYMLINK_NOFOLLOW)
        logger.info("downloaded on demand", metadata: ["ubiquity.path": "\(item.path)"])
    }

    // MARK: What the passes ask

    /// Whether the local pass leaves the evicted `entry` alone: its placeholder is untouched
    /// (or only touched: same size, still no data; the new stat is journaled). Otherwise the
    /// user wrote into it: it is no longer evicted and the pass uploads it as an edit of the
    /// version it stood for.
    func keepsPlaceholder(_ entry: JournalEntry, _ local: LocalItem) throws -> Bool {
        let target = absolute(entry.path)
        if local.stat.kind == .file && !local.stat.differs(from: entry.stat) { return true }
        if local.stat.kind == .file && local.stat.size == entry.stat.size && Placeholder.isHollow(target) {
            var updated = entry
            updated.stat = local.stat
            try journal.put(updated)
            return true
        }
        try journal.setEvicted(entry.id, false)
        if local.stat.kind == .file { Placeholder.unmark(target) }
        publishTransfer(entry.path)
        logger.info("an evicted file was written here: it is uploaded as an edit", metadata: ["ubiquity.path": "\(entry.path)"])
        return false
    }

    /// Before a remote change of an evicted item is judged: true when its placeholder was only
    /// touched since the journal's stat (now journaled: judge again); a placeholder written into
    /// is no longer evicted (false: judged as a local edit, so a conflict keeps it).
    func placeholderWasTouched(_ entry: JournalEntry, _ local: LocalItem) throws -> Bool {
        guard local.stat.differs(from: entry.stat), try journal.isEvicted(entry.id) else { return false }
        return try keepsPlaceholder(entry, local)
    }

    /// Whether the item now at `path` is the untouched placeholder of the evicted `entry` that
    /// moved there: its new path is sent, never its (absent) content.
    func isMovedPlaceholder(_ entry: JournalEntry, at path: String, evicted: Set<String>) -> Bool {
        evicted.contains(entry.id) && entry.stat.kind == .file && Placeholder.isHollow(absolute(path))
    }

    /// A remote change of an evicted file's content updates its placeholder (size, marker,
    /// modification time, permissions) instead of downloading it. False when `item` is not
    /// evicted here (or its placeholder was written into).
    func refreshesPlaceholder(_ item: RemoteItem, local: SyncStat) async throws -> Bool {
        guard item.kind == .file, let changeTag = item.changeTag, try journal.isEvicted(item.id) else { return false }
        let target = absolute(item.path)
        guard Placeholder.isHollow(target) else { return false }
        let marker = Placeholder(id: item.id, changeTag: changeTag, hash: item.contentHash, size: item.size)
        let path = item.path
        let stamp = try await coordinator.coordinate(writingItemAt: URL(fileURLWithPath: target)) { (url: URL) async throws -> FileStamp in
            try await BlockingWork.run {
                guard let now = FileStamp.of(url.path), !SyncStat(now).differs(from: local) else { throw ChangedLocally(path: path) }
                try marker.write(at: url.path, mode: item.mode, modifiedMilliseconds: item.modifiedMilliseconds)
                guard let stamp = FileStamp.of(url.path) else { throw UbiquityError(.notFound, "'\(url.path)' vanished") }
                return stamp
            }
        }
        try journal.put(JournalEntry(id: item.id, path: item.path, stat: SyncStat(stamp), contentHash: item.contentHash, target: nil,
                                     changeTag: item.changeTag))
        report(item.path, .uploaded)
        logger.debug("placeholder updated", metadata: ["ubiquity.path": "\(item.path)"])
        return true
    }

    // MARK: Budget

    /// Evicts the least recently used uploaded files while the downloaded content exceeds
    /// ``evictionBudget``.
    func enforceEvictionBudget() async {
        guard let budget = evictionBudget,
              let entries = try? journal.entries(), let evicted = try? journal.evicted() else { return }
        let root = folder
        let files = entries.filter { $0.stat.kind == .file && !evicted.contains($0.id) }
        let candidates = (try? await BlockingWork.run {
            files.compactMap { entry -> EvictionPolicy.Candidate? in
                var st = stat()
                guard lstat(root + "/" + entry.path, &st) == 0, (st.st_mode & S_IFMT) == S_IFREG else { return nil }
                let used = Int64(st.st_atim.tv_sec) * 1_000_000_000 + Int64(st.st_atim.tv_nsec)
                return EvictionPolicy.Candidate(id: entry.id, path: entry.path, size: Int64(st.st_size), lastUsed: used)
            }
        }) ?? []
        var total = candidates.reduce(Int64(0)) { $0 + $1.size }
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
    public nonisolated func itemState(_ path: String) throws -> ItemSyncState {
        let relative = try relativePath(path)
        let target = relative.isEmpty ? folder : folder + "/" + relative
        guard let stamp = FileStamp.of(target) else { throw UbiquityError(.notFound, "no item at '\(target)'") }
        let conflicts = FileVersion.unresolvedConflictVersionsOfItem(at: URL(fileURLWithPath: target))?.count ?? 0
        let status = journal.status(relativePath: relative, canonical: target, stamp: stamp, conflicts: conflicts)
        return journal.itemState(relativePath: relative, absolute: target, status: status)
    }
}
