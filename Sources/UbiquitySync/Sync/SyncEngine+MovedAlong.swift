// SPDX-License-Identifier: Apache-2.0
import Foundation

/// What a folder moved here by a remote rename (or aside, out of one's way) took along, whose
/// records did not move with it (the renaming device did not know of them: made here, or by a
/// third device, while it was away): the journal has them at their new path already, the server
/// does not, so they are queued for a metadata upload at the end of the pull. Found by the sync
/// simulator: such items stayed at their old path on the server, under a folder that was no
/// longer there, and the devices never agreed.
///
/// The folders are noted in the journal (keys `moved-here:<path>`) before the journal moves
/// what they hold, and forgotten only once that is queued: a pull stopped between the two (a
/// crash, a cancel) leaves the moves journaled and their records already applied, so the next
/// pull skips them and nothing else would lead to what moved along (sim seed 1738: the item
/// stayed at its old path on the server, at the new one on this device, for good).
extension SyncEngine {
    static let movedHerePrefix = "moved-here:"

    /// Notes that the journal's items at `folder` (relative) moved here, to be queued for the
    /// paths their records do not have yet (``sendWhatMovedAlong(changing:)``); written before the
    /// journal moves them.
    func noteFolderMovedHere(_ folder: String) throws {
        try journal.setValue("", Self.movedHerePrefix + folder)
    }

    /// Whether the journal's item at `path` (relative) is under a folder noted by
    /// ``noteFolderMovedHere(_:)`` whose moves are not queued yet: moved along here, its record
    /// still at its old path on the server.
    func isMovedAlongHere(_ path: String) throws -> Bool {
        try journal.keys(withPrefix: Self.movedHerePrefix).contains { path.hasPrefix($0.dropFirst(Self.movedHerePrefix.count) + "/") }
    }

    /// Queues what the folders noted by ``noteFolderMovedHere(_:)`` hold that is not among the
    /// records `changing` in this fetch (those moved with their own records), then forgets the
    /// folders. A repeat after a stop queues again what was queued (harmless: the local pass
    /// sends what differs from the server's record, and a queued path is queued once).
    func sendWhatMovedAlong(changing: Set<String>) throws {
        let keys = try journal.keys(withPrefix: Self.movedHerePrefix)
        guard !keys.isEmpty else { return }
        let moved = keys.map { String($0.dropFirst(Self.movedHerePrefix.count)) }
        var subtrees = LocalScope()
        subtrees.full = false
        subtrees.subtrees = Set(moved)
        let left = try journal.entries(in: subtrees).filter { entry in
            !changing.contains(entry.id) && moved.contains { entry.path.hasPrefix($0 + "/") }
        }
        try journal.enqueue(left.map(\.path))
        try journal.removeValues(withPrefix: Self.movedHerePrefix)
    }
}
