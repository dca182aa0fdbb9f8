// SPDX-License-Identifier: Apache-2.0
import CFuse
import Synchronization
import UbiquityCore

/// Tells the kernel to forget names it may have cached (`fuse_lowlevel_notify_inval_entry`),
/// from a thread of its own: a notification sent while the kernel waits for the answer to a
/// request in the same folder would deadlock, so requests queue them and go on.
///
/// Used when the daemon changes a stub (an eviction, a download, a remote rename of an evicted
/// file): the document's name in the other programs' view changes with it.
final class MountInvalidations: Sendable {
    private let thread = Mutex<BackgroundThread?>(nil)
    private let session = Mutex<SessionPointer?>(nil)

    init() {}

    /// Starts the thread, from a thread of the file system (it shares their descriptor table,
    /// where the session's /dev/fuse descriptor is).
    func start(session made: SessionPointer) {
        session.withLock { $0 = made }
        thread.withLock { $0 = BackgroundThread(name: "ubiquity-fuse-notify", nice: 0) }
    }

    /// Stops sending (the session is ending).
    func stop() {
        session.withLock { $0 = nil }
        thread.withLock { $0 = nil }
    }

    /// Queues the invalidation of `name` in the folder node `parent`.
    func forget(_ name: String, in parent: UInt64) {
        thread.withLock { $0 }?.async { [self] in
            self.session.withLock { made in
                guard let made else { return }
                _ = fuse_lowlevel_notify_inval_entry(made.pointer, parent, name, name.utf8.count)
            }
        }
    }
}
