// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

/// Two records for one path (`dropsDuplicate`): the record that loses is deleted on the server.
/// Its content may exist nowhere else — its device may have moved its file aside for a rename
/// and then deleted it with the record (sync simulator seed 117) — so when it differs from the
/// winner's, the device that drops it keeps it first, as a conflict version of the winner's file
/// (shared with every device like any conflict version), or as a conflicted copy beside it when
/// no file is there. Kept twice at worst (a stop before the delete), never lost. When this
/// device's own record loses and its file here is evicted, the content is on the server only
/// (sync simulator seed 19): the file is downloaded before the record is deleted, and the
/// winner is then judged against it like any local file (other content: a conflict version).
extension SyncEngine {
    /// Downloads the evicted file of `loser`, this device's record about to be deleted as the
    /// loser of two records for one path, when its content differs from the winner's `item`.
    /// - Throws: what the download throws (the record is then not deleted; the next pass tries
    ///   again), or `io` when the file is still evicted after it.
    func bringBackEvictedLoser(_ loser: JournalEntry, winner item: RemoteItem) async throws {
        guard loser.stat.kind == .file, item.kind != .file || item.contentHash != loser.contentHash,
              try journal.isEvicted(loser.id) else { return }
        try await downloadEvicted(loser.path)
        if let entry = try journal.entry(id: loser.id), try journal.isEvicted(entry.id) {
            throw UbiquityError(.io, "'\(absolute(entry.path))' is evicted and its record loses to another for its name: not downloaded yet")
        }
    }

    /// Keeps the content of `item` (its `record`), about to be deleted as the loser of two
    /// records for the path of `winner`, when it differs from the winner's.
    func keepDuplicateContent(_ item: RemoteItem, _ record: Record, winner: JournalEntry) async throws {
        guard item.kind == .file, winner.stat.kind == .file, !item.contentHash.isEmpty, item.contentHash != winner.contentHash else { return }
        let staged = try await stageContent(of: record, inline: SyncRecord.Field.inline, asset: SyncRecord.Field.content,
                                            contentHash: item.contentHash, what: "content of '\(item.path)'")
        defer { unlink(staged) }
        let target = URL(fileURLWithPath: absolute(winner.path))
        let device = deviceName, modified = Date(timeIntervalSince1970: Double(item.modifiedMilliseconds) / 1000)
        if let stamp = FileStamp.of(target.path), !stamp.isDirectory {
            let added = try await coordinator.coordinate(writingItemAt: target) { (url: URL) async throws -> FileVersion in
                try await BlockingWork.run {
                    try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: URL(fileURLWithPath: staged), savingComputerName: device,
                                                       modificationDate: modified, options: .byMoving)
                }
            }
            noteConflictKept(itemID: winner.id, version: added)
            noteInConflict(itemID: winner.id, path: winner.path)
        } else {
            let aside = conflictName(winner.path, device: device)
            let destination = absolute(aside)
            try await BlockingWork.run {
                try SyncFiles.makeParents(of: destination)
                guard rename(staged, destination) == 0 else { throw UbiquityError.posix("rename", path: destination) }
                try SyncFiles.makeDurable(file: destination)  // before the record is deleted: its only copy
            }
            try journal.enqueue([aside])
        }
        logger.notice("two records for one path: the dropped one's content is kept", metadata: ["ubiquity.path": "\(winner.path)"])
    }
}
