// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// A record fetched at a new path whose item is gone from its journaled path here but is already
/// at the record's path — the same item, by kind and inode (a stub keeps its inode) — was moved
/// there by this device: its own rename whose answer was lost (sent, saved by the server, the
/// answer dropped), or the same rename made on both sides. It is not a delete: the journal
/// follows the move and the record is judged again at its new path. Taken for a delete, the
/// device deleted its own renamed records, and an evicted file among them (a stub, which no
/// pass can send again as new) lost its only copy on the server (sync simulator seed 178: a
/// case-only rename of a folder holding an evicted file, its answer lost).
extension SyncEngine {
    /// Whether `entry` (gone from its path here) is already at `item`'s path: then the journal
    /// has moved it there (with what is inside, for a folder).
    func movedHereAlready(_ entry: JournalEntry, to item: RemoteItem) async throws -> Bool {
        guard item.path != entry.path, try journal.entry(path: item.path) == nil else { return false }
        let path = item.path, target = absolute(item.path)
        guard let there = try await BlockingWork.run({ SyncFiles.item(path: path, absolute: target) }),
              there.stat.kind == entry.stat.kind, there.stat.inode == entry.stat.inode else { return false }
        if there.stat.kind == .folder { try noteFolderMovedHere(item.path) }  // what moved along is sent (SyncEngine+MovedAlong.swift)
        try journal.movePrefix(from: entry.path, to: item.path)  // the journal's half of moveLocal
        logger.notice("a record renamed as it already is here: this device's own move, its answer lost",
                      metadata: ["ubiquity.path": "\(item.path)", "ubiquity.from": "\(entry.path)"])
        return true
    }
}
