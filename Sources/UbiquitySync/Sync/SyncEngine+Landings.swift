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
                // durable first, names and all (the writer may have stopped at a folder's fsync
                // that failed): journaled as synced and then taken back by a power loss, they
                // were sent as deleted everywhere (sync simulator seed 879). Not durable, the note
                // stays and the pass fails: the next one settles them again.
                try await makeLandedDurable(landed)
                logger.notice("downloads renamed into place before a stop were not journaled; they are now",
                              metadata: ["ubiquity.count": "\(landed.count)", "ubiquity.path": "\(landed[0].path)"])
            }
            try journalSynced(landed, forgettingLanding: key)
        }
    }

    /// Makes the files of `entries` durable (a link's name only), and the names of the folders
    /// on their way (the writer makes folders for new files, and syncs their parents after the
    /// renames); throws the first failure.
    private func makeLandedDurable(_ entries: [JournalEntry]) async throws {
        if let (path, error) = try await makeDurable(entries.filter { $0.stat.kind == .file }.map(\.path)).first {
            throw UbiquityError.wrapping(error, "cannot make the download at '\(path)' durable")
        }
        let root = folder
        let folders = SyncFiles.foldersOnTheWay(to: entries.map(\.path)).union([""])
        // every folder on the way, deepest first: each holds the name of what is below it
        let deepestFirst = folders.sorted { $0.count > $1.count }
        try await BlockingWork.run {
            for folder in deepestFirst {
                try SafeSave.syncDirectory(folder.isEmpty ? root : root + "/" + folder)
            }
        }
    }
}
