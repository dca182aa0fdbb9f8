// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Downloads renamed into place and never journaled (a kill, or a journal write that failed,
/// between the two): see SyncJournal+Landings.swift.
extension SyncEngine {
    /// Journals the noted landings whose files are at their names as they were renamed there
    /// (the same inode, size and modification time: the download, untouched since), before
    /// the pass judges anything, and forgets the notes. A file not there, or not that file
    /// (never renamed, edited or replaced since), is left to the pass as before: an edit in
    /// place is then a file the journal does not know, uploaded and judged against the record
    /// (at worst a conflict version, never a loss).
    func settleLandings() async throws {
        let landings = try journal.landings()
        guard !landings.isEmpty else { return }
        let root = folder
        for (key, entries) in landings {
            let known = try journal.known(ids: entries.map(\.id), paths: []).ids
            let candidates = entries.filter { !known.contains($0.id) }
            let landed = try await BlockingWork.run {
                candidates.filter { entry in FileStamp.of(root + "/" + entry.path).map { !SyncStat($0).differs(from: entry.stat) } ?? false }
            }
            if !landed.isEmpty {
                logger.notice("downloads renamed into place before a stop were not journaled; they are now",
                              metadata: ["ubiquity.count": "\(landed.count)", "ubiquity.path": "\(landed[0].path)"])
            }
            try journalSynced(landed, forgettingLanding: key)
        }
    }
}
