// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// An evicted file replaced knowingly: through the mounted folder (`ubiq daemon --mount`) an
/// evicted file is shown under its own name, so a program that opens it with `O_TRUNC`,
/// truncates it to nothing or renames a file over it (an editor's save) means to replace the
/// document, as it would a downloaded one. In the plain folder, where the document's name is
/// free, what is written there is kept as a conflict version instead
/// (``settleWrittenOverStub(_:_:item:record:)``).
extension SyncEngine {
    /// Runs `replace`, which puts new content at the name of the evicted file `path` (absolute)
    /// and removes its stub (the mount does both on the disk under it: a request waiting for
    /// this holds the kernel's lock of the folder), and makes that the item's next version: with
    /// the evicted mark gone, the next pass sees an edit of the version the stub stood for,
    /// uploaded as any edit (with a conflict version if the server moved on meanwhile). When the
    /// file is not evicted (any more), `replace` is an ordinary write. Taken in turn with
    /// passes, evictions and downloads.
    /// - Throws: `invalidArgument` outside the folder; what `replace` throws (nothing changed).
    package func replacePlaceholder(_ path: String, by replace: @escaping @Sendable () throws -> Void) async throws {
        let relative = try relativePath(path)
        try await exclusively {
            guard let entry = try journal.entry(path: relative), try journal.isEvicted(entry.id) else {
                return try await BlockingWork.run(replace)
            }
            try await BlockingWork.run(replace)
            try journal.setEvicted(entry.id, false)
            noteTransfer(relative) { $0.downloadRequested = false }
            logger.info("an evicted file was replaced", metadata: ["ubiquity.path": "\(relative)"])
        }
        scope.withLock { _ = $0.paths.insert(relative) }
        wakeContinuation.yield()
    }
}
