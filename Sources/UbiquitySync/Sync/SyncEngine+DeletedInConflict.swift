// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore

/// A file deleted elsewhere while this device holds conflict versions of its own
/// (`docs/sync.md`, "Conflict versions on every device").
///
/// A conflict version kept here is this device's content that lost the file's name to the
/// server's version: the device that deleted the file deleted the server's version, and may
/// never have seen this one (its record may not even have reached it). Deleting the versions
/// with the file would lose a write nobody chose to delete, so delete versus edit keeps the
/// edit here too: the newest such version takes the file's place and the others are put
/// beside it as conflicted copies, all sent as new items. Versions imported from other devices
/// go with the file; their own devices do the same for theirs. Found by the sync simulator
/// (seed 5: a file moved over another one lost to an edit made there, then deleted there).
///
/// The same holds when the file is gone from its name here too, renamed after an editor's save
/// dropped its identity attribute with no pass between (nothing links it to its versions any
/// more) or deleted outside coordination: the versions this device saved, found in the version
/// store by the path alone, are put at the file's name as conflicted copies, sent as new items
/// (seed 30).
extension SyncEngine {
    /// Restores the unresolved conflict versions this device saved of the file of `entry`,
    /// deleted on the server, if the file is still as synced. Returns whether it did (the
    /// entry is then forgotten and the restored files queued as new items).
    func restoreVersionsKeptHere(_ entry: JournalEntry) async throws -> Bool {
        let target = URL(fileURLWithPath: absolute(entry.path))
        let device = deviceName
        let kept = try await BlockingWork.run {
            Self.savedHere(FileVersion.unresolvedConflictVersionsOfItem(at: target) ?? [], device: device)
                .sorted { ($0.modificationDate ?? .distantPast) > ($1.modificationDate ?? .distantPast) }
        }
        guard !kept.isEmpty else { return false }
        let asides = kept.dropFirst().map { _ in conflictName(entry.path, device: device) }
        let asideURLs = asides.map { URL(fileURLWithPath: absolute($0)) }
        let restored = try await coordinator.coordinate(writingItemAt: target) { (url: URL) async throws -> Bool in
            try await BlockingWork.run {
                guard let now = FileStamp.of(url.path), !SyncStat(now).differs(from: entry.stat) else { return false }
                for (version, aside) in zip(kept.dropFirst(), asideURLs) { try version.replaceItem(at: aside, options: .byMoving) }
                try kept[0].replaceItem(at: url, options: .byMoving)
                for other in FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? [] {
                    try other.markResolved()
                    try other.remove()
                }
                return true
            }
        }
        guard restored else { return false }
        try forgetConflicts(of: entry.id)
        try journal.remove(id: entry.id)
        try journal.enqueue(asides)
        try keepUnjournaled(entry.path)
        logger.notice("a file in conflict was deleted elsewhere: this device's conflict versions are kept as files",
                      metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.versions": "\(kept.count)"])
        return true
    }

    /// Restores as conflicted copies the unresolved conflict versions this device saved of the
    /// files of `entries`, gone from their names here and about to be deleted on the server,
    /// that the version store still holds under their paths: a file renamed, then saved by an
    /// editor that drops its identity attribute, no pass between, is a deleted file and a new
    /// one, and the versions it lost the name with are this device's writes nobody chose to
    /// delete (sync simulator seed 513). A file deleted outside coordination (`rm`) keeps its
    /// versions the same way; one deleted through coordination, or resolved, has none left.
    func restoreVersionsOfDeletedHere(_ entries: [JournalEntry]) async throws {
        guard !entries.isEmpty else { return }
        let inConflict = Set(try journal.conflicts().map(\.item)).union(memory.conflicted.keys)
        for entry in entries where inConflict.contains(entry.id) {
            // its folder may have moved in this pass: the copies go where the folder is now
            let now = try journal.entry(id: entry.id)?.path ?? entry.path
            try await restoreVersionsLeftHere(entry, beside: now)
        }
    }

    /// Restores as conflicted copies the unresolved conflict versions this device saved of the
    /// file of `entry`, deleted on the server (or here) and gone from its name here, that the
    /// version store still holds under its path; they are named after `path` (the entry's own
    /// by default). Returns how many it restored.
    @discardableResult
    func restoreVersionsLeftHere(_ entry: JournalEntry, beside path: String? = nil) async throws -> Int {
        // (the version store is read only for an item known in conflict: most such deletes are of
        // items deleted on both sides, and a large folder's are many)
        guard try memory.conflicted[entry.id] != nil || !journal.conflicts(item: entry.id).isEmpty else { return 0 }
        let target = URL(fileURLWithPath: absolute(entry.path))
        let device = deviceName
        let kept = try await BlockingWork.run {
            Self.savedHere(FileVersion.unresolvedConflictVersionsLeft(at: target), device: device)
        }
        guard !kept.isEmpty else { return 0 }
        let asides = kept.map { _ in conflictName(path ?? entry.path, device: device) }
        let asideURLs = asides.map { URL(fileURLWithPath: absolute($0)) }
        try await BlockingWork.run {
            try SyncFiles.makeParents(of: asideURLs[0].path)
            for (version, aside) in zip(kept, asideURLs) { try version.replaceItem(at: aside, options: .byMoving) }
        }
        try forgetConflicts(of: entry.id)
        try journal.enqueue(asides)
        wakeLater()
        logger.notice("a file in conflict is gone here: this device's conflict versions are kept as files",
                      metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.versions": "\(kept.count)"])
        return kept.count
    }

    /// The versions among `versions` that `device` (this one) saved, with their content here.
    static func savedHere(_ versions: [FileVersion], device: String) -> [FileVersion] {
        versions.filter { $0.localizedNameOfSavingComputer == device && $0.hasLocalContents }
    }

    /// The record of item `id` was deleted elsewhere while this device's edit of it waited (an
    /// upload refused), or the fetched delete found the file changed here: the edit wins, as a
    /// new item, and the item's conflict versions go with its file, at `path` (relative). They
    /// are linked to the file where it is now before the journal forgets the item, when the
    /// journal is all that still leads to them (an editor's save dropped the file's identity
    /// attribute, then a rename left the version store's path behind: sync simulator seeds 1652
    /// and 6862, where they were left unreachable). The file then carries the attribute, and its
    /// versions are shared again for the new item (``noteVersionCandidates(_:)``). Best effort:
    /// a version not found stays where it is.
    func keepConflictVersionsWithFile(of id: String, at path: String) async {
        // (a fetched delete forgot the item's shared conflict records first, deleted with it:
        // then the version store's path, kept in step for a conflicted item, leads to them)
        let versions = ((try? journal.conflicts(item: id)) ?? []).map(\.version)
        guard !versions.isEmpty || memory.conflicted[id] != nil else { return }
        let target = absolute(path)
        _ = try? await BlockingWork.run {
            for version in versions { _ = FileVersion.relink(version: version, toItemAt: target) }
            FileVersion.keepIdentity(ofItemAt: target)
        }
    }

    /// Forgets the conflict versions journaled for item `id`, whose versions left it.
    private func forgetConflicts(of id: String) throws {
        for conflict in try journal.conflicts(item: id) {
            try journal.removeConflict(record: conflict.record)
        }
        memory.conflicted[id] = nil
    }
}
