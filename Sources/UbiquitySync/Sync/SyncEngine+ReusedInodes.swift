// SPDX-License-Identifier: Apache-2.0
import Foundation

extension SyncEngine {
    /// Files paired as moves by their inode (`moves`) that have another name, in another folder,
    /// and other content than the journaled file: most likely a new file that took a freed inode
    /// (ext4 hands one out again at once), not a move, a rename and a rewrite in one pass. They
    /// are judged apart, a delete and a new item: nothing is lost either way, while taken for a
    /// move, the new file's bytes became an edit of an unrelated record, and its conflict with
    /// that record's edit elsewhere lost them (sync simulator seed 10356, likely 2797 too). A
    /// rename alone (same size and time) is still paired without reading the file, and so is an
    /// edit and a rename in one folder (a new file there that took the inode is not told apart
    /// yet: that needs the inode's birth time journaled, docs/sync.md). The hashes read here are
    /// kept in `hashes` for the uploads.
    func unpairReusedInodes(_ missing: [JournalEntry], evicted: Set<String>, items: [String: LocalItem],
                            moves: inout [String: String], hashes: inout [String: String]) async throws {
        for entry in missing where entry.stat.kind == .file && !evicted.contains(entry.id) {
            guard let path = moves[entry.id], let local = items[path], local.stat.kind == .file, !local.isStub,
                  local.stat.inode == entry.stat.inode, local.stat.differs(from: entry.stat),
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
