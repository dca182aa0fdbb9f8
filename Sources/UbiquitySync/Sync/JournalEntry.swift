// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One item in the sync journal: its stable ID, where it is, what the local file was when it
/// was last synced, and which server version that was.
package struct JournalEntry: Sendable, Hashable {
    /// The item's ID (its record name).
    package var id: String
    /// The path relative to the synced folder.
    package var path: String
    /// The local state when last synced (the quick check compares with it).
    package var stat: SyncStat
    /// SHA-256 of the content when last synced (hex; symlinks: of the target; folders: empty).
    package var contentHash: String
    /// A symbolic link's target when last synced.
    package var target: String?
    /// The change tag of the server record this state matches; nil until first uploaded.
    package var changeTag: String?
    /// The content hash both sides last agreed on (the merge base).
    package var baseHash: String

    /// An entry from its parts.
    package init(id: String, path: String, stat: SyncStat, contentHash: String, target: String? = nil, changeTag: String?, baseHash: String? = nil) {
        self.id = id
        self.path = path
        self.stat = stat
        self.contentHash = contentHash
        self.target = target
        self.changeTag = changeTag
        self.baseHash = baseHash ?? contentHash
    }
}
