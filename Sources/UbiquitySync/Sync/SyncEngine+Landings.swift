// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Downloads renamed into place and never journaled (a kill, or a journal write that failed,
/// between the two): see SyncJournal+Landings.swift.
extension SyncEngine {
    /// Journals the noted landings whose files are at their names (the same inode and kind: the
    /// file renamed there), before the pass judges anything, and forgets the notes. Each is
    /// journaled with the stamp it was renamed with, so an edit made in place since is uploaded
    /// as an edit of the item, as when the journal write came in time. A file not there, or
    /// another one (never renamed, or replaced since), is left to the pass as before: a file the
    /// journal does not know, uploaded and judged against the record (at worst a conflict
    /// version, never a loss).
    func settleLandings() async throws {
        let landings = try journal.landings()
        guard !landings.isEmpty else { return }
        let root = folder
        for (key, entries) in landings {
            let known = try journal.known(ids: entries.map(\.id), paths: []).ids
            let candidates = entries.filter { !known.contains($0.id) }
            let landed = try await BlockingWork.run {
                candidates.filter { entry in
                    guard let stamp = FileStamp.of(root + "/" + entry.path) else { return false }
                    let now = SyncStat(stamp)
                    return now.inode == entry.stat.inode && now.kind == entry.stat.kind
                }
            }
            if !landed.isEmpty {
                logger.notice("downloads renamed into place before a stop were not journaled; they are now",
                              metadata: ["ubiquity.count": "\(landed.count)", "ubiquity.path": "\(landed[0].path)"])
            }
            try journalSynced(landed, forgettingLanding: key)
        }
    }
}
