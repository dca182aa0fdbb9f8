// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityStore

/// The "in conflict" state follows its item through renames and moves (`docs/sync.md`,
/// "Conflicts never lose data"): the engine keeps the items with unresolved conflict versions
/// by item ID (``SyncEngine/conflicted``), not by path, and at the end of every pass looks up
/// where each of them is now in the journal — a rename made here (found by the scan) or on
/// another device (applied by ``SyncEngine/moveLocal(from:to:updateJournal:)``) moved it — so
/// the index flags the new path, never the old one, and the version store's path index follows
/// too (items whose file system keeps no `user.` attributes are found through it).
extension SyncEngine {
    /// Whether the item at `relative` has unresolved conflict versions this engine knows of.
    func isConflicted(_ relative: String) -> Bool {
        memory.conflicted.values.contains(relative)
    }

    /// Once after a start, before the first pass's changes: the items the journal has conflict
    /// versions of, at their journaled paths, followed from then on as if kept in this run.
    /// Without it a rename made here after a restart left the version store's path behind, and
    /// the file then saved by an editor (its identity attribute dropped) and deleted lost its
    /// conflict version: nothing led to it to keep it as a file (sync simulator seed 5548).
    func loadConflictedItems() {
        guard !memory.conflictsLoaded else { return }
        do {
            let items = Set(try journal.conflicts().map(\.item)).subtracting(memory.conflicted.keys)
            for (id, path) in try journal.paths(ids: Array(items)) { memory.conflicted[id] = path }
            memory.conflictsLoaded = true
        } catch {
            logger.warning("cannot read the journal's conflicts; tried again at the next pass", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    /// Moves the in-conflict state of every conflicted item that the journal now has at another
    /// path: the versions' path index follows (``FileVersion/itemMayHaveMoved(from:to:)``), the new
    /// path is reported in conflict and the old one no longer is. Items gone from the journal are
    /// dropped (their versions are withdrawn by ``shareConflictVersions()``).
    func followConflictedItems() async {
        guard !memory.conflicted.isEmpty else { return }
        for (id, old) in memory.conflicted {
            let entry: JournalEntry?
            do { entry = try journal.entry(id: id) } catch {
                logger.warning("cannot read the journal to follow a conflicted item", metadata: ["ubiquity.error": "\(error)"])
                return
            }
            guard let entry else {
                memory.conflicted[id] = nil
                continue
            }
            let from = absolute(old), to = absolute(entry.path)
            guard entry.path != old else {
                // saved by an editor that renames a new file over it: the attribute is written
                // again, so a plain rename before the next pass keeps its versions
                _ = try? await BlockingWork.run { FileVersion.keepIdentity(ofItemAt: to) }
                continue
            }
            _ = try? await BlockingWork.run {
                FileVersion.itemMayHaveMoved(from: from, to: to)  // a remote rename's move told it already
                FileVersion.keepIdentity(ofItemAt: to)
            }
            memory.conflicted[id] = entry.path
            logger.debug("a conflicted item moved: its conflict state follows", metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.from": "\(old)"])
            report(entry.path, .inConflict)
        }
    }
}
