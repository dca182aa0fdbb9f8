// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Synchronization

/// Changes to a folder told by the code that makes them rather than by inotify: the mounted
/// folder's FUSE handlers (`ubiq daemon --mount`) post every change they make, and the
/// process's file watchers take a folder fed this way from its feed, with no inotify watch of
/// it (issue 23: "the mount is the watcher").
///
/// A feed is a queue per folder, like the kernel's inotify queue: posting takes only the
/// queue's lock (a FUSE handler may hold the kernel's lock of a folder; it must never wait for
/// anything that looks at the folder), and the consumer drains it on its own thread. A queue
/// over ``capacity`` drops what comes next and says so (an overflow, answered by a rescan, as
/// inotify's `IN_Q_OVERFLOW` is).
///
/// Posting touches no file descriptor: the FUSE threads have a descriptor table of their own
/// (``MountFileSystem``), where the consumer's wake-up pipe is not (and its number may be a
/// user's open file). A post signals a semaphore; the feed's relay thread, in the process's
/// table, calls the consumer's wake-up.
package final class FolderChangeFeed: Sendable {
    /// The feeds of this process.
    package static let shared = FolderChangeFeed()

    /// One change, as inotify would have reported it.
    package struct Change: Sendable, Hashable {
        /// What happened.
        package enum Kind: Sendable, Hashable {
            /// A name was made (a file, folder, link, node).
            case created
            /// Content, size, mode, times or extended attributes changed.
            case modified
            /// A file opened for writing was closed.
            case closedAfterWriting
            /// A name was removed.
            case deleted
            /// The source of a rename (paired with a ``movedTo(cookie:)`` of the same cookie).
            case movedFrom(cookie: UInt32)
            /// The destination of a rename.
            case movedTo(cookie: UInt32)
            /// Not a change: a mark the consumer put in the queue itself, seen once everything
            /// posted before it was drained (a watcher's `sync`).
            case marker(UInt64)
        }

        /// What happened.
        package var kind: Kind
        /// The item's absolute path.
        package var path: String
        /// Whether the item is a folder.
        package var isDirectory: Bool

        /// A change of `kind` at `path`.
        package init(_ kind: Kind, _ path: String, isDirectory: Bool = false) {
            self.kind = kind
            self.path = path
            self.isDirectory = isDirectory
        }
    }

    /// What a drain returns.
    package struct Drained: Sendable {
        /// The changes posted since the last drain, in order.
        package var changes: [Change]
        /// Whether changes were dropped (the queue was full).
        package var overflowed: Bool
    }

    private struct Queue: Sendable {
        var changes: [Change] = []
        var overflowed = false
        var subscribed = false
    }

    /// The most changes a queue holds before it drops what comes next.
    package static let capacity = 65_536

    private let queues = Mutex<[String: Queue]>([:])
    private let cookies = Atomic<UInt32>(1)
    /// The consumer's wake-up, called on the relay thread only.
    private let consumer = Mutex(CallbackSlot<@Sendable () -> Void>())
    /// Signalled by posts (and closes) that the consumer must hear of.
    private let pending = DispatchSemaphore(value: 0)
    private let relayStarted = Atomic<Bool>(false)

    /// A registry with no feeds (tests; the process has ``shared``).
    package init() {}

    /// Starts feeding `folder` (an absolute, canonical path): from now on its changes are
    /// posted (``post(_:in:)``), and watchers take it from here instead of inotify.
    package func open(_ folder: String) {
        queues.withLock { if $0[folder] == nil { $0[folder] = Queue() } }
    }

    /// Stops feeding `folder`; what was not drained is dropped, and the consumer is woken (it
    /// sees the feed gone: ``isOpen(_:)``).
    package func close(_ folder: String) {
        let subscribed = queues.withLock { $0.removeValue(forKey: folder)?.subscribed ?? false }
        if subscribed { pending.signal() }
    }

    /// Whether `folder` is fed.
    package func isOpen(_ folder: String) -> Bool { queues.withLock { $0[folder] != nil } }

    /// The fed folder that is `path` or contains it, if any.
    package func feed(containing path: String) -> String? {
        queues.withLock { queues in
            queues.keys.filter { path == $0 || path.hasPrefix($0 == "/" ? "/" : $0 + "/") }.max { $0.count < $1.count }
        }
    }

    /// Makes `wake` be called (on the feed's relay thread, outside any lock) when a change
    /// lands in `folder`'s empty queue or the feed closes; one consumer per process (the file
    /// watchers' hub). Returns false when `folder` is not fed.
    @discardableResult
    package func subscribe(_ folder: String, wake: @escaping @Sendable () -> Void) -> Bool {
        consumer.withLock { $0.callback = wake }
        if relayStarted.compareExchange(expected: false, desired: true, ordering: .relaxed).exchanged {
            let thread = Thread { [self] in
                while true {
                    pending.wait()
                    consumer.withLock { $0.callback }?()
                }
            }
            thread.name = "ubiquity-change-feed"
            thread.start()
        }
        return queues.withLock { queues in
            guard queues[folder] != nil else { return false }
            queues[folder]!.subscribed = true
            return true
        }
    }

    /// Posts a change to the fed folder `folder` (nothing when it is not fed). A change equal
    /// to the last one queued is not queued twice (a run of writes is one modification).
    package func post(_ change: Change, in folder: String) {
        post(contentsOf: [change], in: folder)
    }

    /// Posts `changes` at once (both ends of a rename, say: no drain comes between them).
    package func post(contentsOf changes: [Change], in folder: String) {
        let wake = queues.withLock { queues -> Bool in
            guard queues[folder] != nil else { return false }
            // in place (`queues[folder]!`): a copy of the queue would copy its changes on append
            let wasEmpty = queues[folder]!.changes.isEmpty && !queues[folder]!.overflowed
            for change in changes where queues[folder]!.changes.last != change {
                if queues[folder]!.changes.count >= Self.capacity {
                    queues[folder]!.overflowed = true
                    break
                }
                queues[folder]!.changes.append(change)
            }
            return wasEmpty && queues[folder]!.subscribed
        }
        if wake { pending.signal() }
    }

    /// Takes everything posted to `folder` since the last drain.
    package func drain(_ folder: String) -> Drained {
        queues.withLock { queues in
            guard queues[folder] != nil else { return Drained(changes: [], overflowed: false) }
            let drained = Drained(changes: queues[folder]!.changes, overflowed: queues[folder]!.overflowed)
            queues[folder]!.changes = []
            queues[folder]!.overflowed = false
            return drained
        }
    }

    /// A fresh cookie for pairing a rename's two changes.
    package func nextCookie() -> UInt32 { cookies.wrappingAdd(1, ordering: .relaxed).oldValue }
}
