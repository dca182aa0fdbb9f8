// SPDX-License-Identifier: Apache-2.0
import Foundation

extension SyncEngine {
    /// Files paired as moves by their inode (`moves`) that are likely another life of that
    /// inode: a new file that took a freed one (ext4 hands one out again at once), not a move.
    /// They are judged apart, a delete and a new item: nothing is lost either way, while taken
    /// for a move, the new file's bytes became an edit of an unrelated record, and its conflict
    /// with that record's edit elsewhere lost them (sync simulator seed 10356, likely 2797 too).
    ///
    /// Where the journal and the scan both know the inode's birth time, ``SyncDecision/matchMoves(missing:created:)``
    /// has told already (another birth time is never paired). Without it (a file system that
    /// does not report one, an entry journaled before birth times were kept), a file with
    /// another name, in another folder and with other content is judged new here, and anything
    /// less is still a move: a rename alone (same size and time) without reading the file, and
    /// an edit and a rename in one folder. The hashes read here are kept in `hashes` for the
    /// uploads.
    func unpairReusedInodes(_ missing: [JournalEntry], evicted: Set<String>, items: [String: LocalItem],
                            moves: inout [String: String], hashes: inout [String: String]) async throws {
        for entry in missing where entry.stat.kind == .file && !evicted.contains(entry.id) {
            guard let path = moves[entry.id], let local = items[path], local.stat.kind == .file, !local.isStub,
                  local.stat.inode == entry.stat.inode else { continue }
            guard local.stat.sameBirth(as: entry.stat) == nil, local.stat.differs(from: entry.stat),
                  (path as NSString).lastPathComponent != (entry.path as NSString).lastPathComponent,
                  (path as NSString).deletingLastPathComponent != (entry.path as NSString).deletingLastPathComponent else { continue }
            let hash: String
            if let known = hashes[path] { hash = known } else {
                hash = try await hashOf(local, like: entry.contentHash)
                hashes[path] = hash
            }
            if hash != entry.contentHash { moves[entry.id] = nil }
        }
    }
}
