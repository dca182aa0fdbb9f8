/// One settled batch of changes under the watched roots, as the watcher hands them on.
///
/// The watcher coalesces raw inotify events: a burst on one path becomes one change, a rename
/// is one ``WatchChange/moved(from:to:)`` (paired by cookie), and editor save patterns (vim's
/// backup-rename-write, write-to-temp-then-rename, Emacs backups) become one
/// ``WatchChange/changed(_:)`` of the document. Ignored names never appear.
package struct WatchBatch: Sendable, Equatable {
    /// Changes in the order they settled. A path appears at most once as `changed` or `removed`.
    package var changes: [WatchChange]
    /// Subtrees whose state is unknown and must be scanned (overflow, new folders, watch limit).
    package var rescans: [RescanRequest]
    /// The batch's number for its watcher, counting from 1 (0 for batches made elsewhere);
    /// ``FileWatcher/sync(root:timeout:)`` returns the number a consumer must have reached.
    package var sequence: UInt64 = 0

    /// A batch of `changes` and `rescans`.
    package init(changes: [WatchChange] = [], rescans: [RescanRequest] = []) {
        self.changes = changes
        self.rescans = rescans
    }

    /// Whether the batch carries nothing.
    package var isEmpty: Bool { changes.isEmpty && rescans.isEmpty }
}

/// A change to one item, by absolute path.
package enum WatchChange: Sendable, Hashable {
    /// The item was created, written, replaced or had its attributes changed: stat it again.
    case changed(String)
    /// The item (and, for a folder, everything in it) no longer exists at this path.
    case removed(String)
    /// The item (and, for a folder, everything in it) was renamed from one path to the other,
    /// both inside the watched roots. A move out of the roots is `removed`, a move in `changed`
    /// plus a rescan of the destination when it is a folder.
    case moved(from: String, to: String)
}

/// A request to scan a subtree because events for it were or may have been lost.
package struct RescanRequest: Sendable, Hashable {
    /// Why a scan is needed.
    package enum Reason: Sendable, Hashable {
        /// A folder appeared (created or moved in): its contents were never watched.
        case newDirectory
        /// The kernel's event queue overflowed (`IN_Q_OVERFLOW`): every root is rescanned.
        case overflow
        /// A watch could not be added (the per-user watch limit, `ENOSPC`, or `ENOMEM`).
        case watchLimit
        /// A watched root was deleted, moved or unmounted.
        case rootChanged
    }

    /// The absolute path of the subtree to scan.
    package var path: String
    /// Why.
    package var reason: Reason
    /// What to tell the user (for overflow and the watch limit, with the sysctl to raise).
    package var message: String?

    /// A request to scan `path`.
    package init(path: String, reason: Reason, message: String? = nil) {
        self.path = path
        self.reason = reason
        self.message = message
    }
}
