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
extension SyncEngine {
    /// Restores the unresolved conflict versions this device saved of the file of `entry`,
    /// deleted on the server, if the file is still as synced. Returns whether it did (the
    /// entry is then forgotten and the restored files queued as new items).
    func restoreVersionsKeptHere(_ entry: JournalEntry) async throws -> Bool {
        let target = URL(fileURLWithPath: absolute(entry.path))
        let device = deviceName
        let kept = try await BlockingWork.run {
            (FileVersion.unresolvedConflictVersionsOfItem(at: target) ?? [])
                .filter { $0.localizedNameOfSavingComputer == device && $0.hasLocalContents }
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
        for conflict in try journal.conflicts() where conflict.item == entry.id {
            try journal.removeConflict(record: conflict.record)
        }
        memory.conflicted[entry.id] = nil
        try journal.remove(id: entry.id)
        try journal.enqueue(asides)
        try keepUnjournaled(entry.path)
        logger.notice("a file in conflict was deleted elsewhere: this device's conflict versions are kept as files",
                      metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.versions": "\(kept.count)"])
        return true
    }
}
