// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The engine's temporaries beside their targets (`.ubiq-tmp-sync-…`: a download, a symlink, an
/// evicted file's content moved aside, an orphan stub's copy), swept after a kill.
///
/// Such a temporary is renamed into place or removed by the step that made it; an engine killed
/// in between leaves it. The ignore rules keep those names out of the index, so the passes,
/// which go by the index, never see it: only a full walk of the folder removed it (`ChaosTests`
/// once left one after a kill of a daemon, seed 370073). So the first temporary made in a
/// folder notes that folder in the journal (once per folder while the engine runs: a read of
/// memory after that), and the next engine on the synced folder removes the own temporaries of
/// every folder noted, at start, before anything of its own is written, then forgets the notes.
/// (The new-file writer's temporaries are in one folder of their own, cleared at start too:
/// ``NewFilesFolder``.)
extension SyncEngine {
    /// The journal's keys of the folders noted: this prefix and the folder's relative path ("" for the root).
    static let temporaryFoldersKey = "temporaries-in:"

    /// A temporary name beside `absolute` (``SyncFiles/temporaryPath(near:)``), its folder noted first.
    func temporaryPath(near absolute: String) throws -> String {
        try noteTemporaries(in: SyncFiles.parent(of: absolute))
        return SyncFiles.temporaryPath(near: absolute)
    }

    /// Notes that the engine makes temporaries in `folder` (absolute, in the synced folder).
    func noteTemporaries(in folder: String) throws {
        let relative = folder == self.folder ? "" : folder.hasPrefix(self.folder + "/") ? String(folder.dropFirst(self.folder.count + 1)) : nil
        guard let relative, memory.temporaryFolders.insert(relative).inserted else { return }
        do {
            try journal.setValue("", Self.temporaryFoldersKey + relative)
        } catch {
            memory.temporaryFolders.remove(relative)
            throw error
        }
    }

    /// Removes the engine's own temporaries left in the folders `journal` noted under `root`,
    /// then forgets the notes; returns how many went. Run at start, before anything is written.
    static func sweepTemporaries(journal: SyncJournal, root: String) throws -> Int {
        let keys = try journal.keys(withPrefix: temporaryFoldersKey)
        guard !keys.isEmpty else { return 0 }
        var removed = 0
        for key in keys {
            let relative = String(key.dropFirst(temporaryFoldersKey.count))
            let folder = relative.isEmpty ? root : root + "/" + relative
            for name in (try? FileManager.default.contentsOfDirectory(atPath: folder)) ?? [] where SyncFiles.isOwnTemporary(name) {
                if relative.isEmpty && name == NewFilesFolder.name { continue }  // (cleared on its own)
                if unlink(folder + "/" + name) == 0 { removed += 1 }
            }
        }
        try journal.removeValues(withPrefix: temporaryFoldersKey)
        return removed
    }
}
