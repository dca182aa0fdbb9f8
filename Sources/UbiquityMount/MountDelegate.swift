// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// What the mounted folder asks of sync (the daemon's folder engine): an evicted file's content
/// when a program opens it (all of it before a write, as it arrives for a read), and an
/// evicted file replaced knowingly (opened with `O_TRUNC`, truncated to nothing, renamed
/// over). Called from the file system's own threads, which wait
/// for the answer (at most ``MountFileSystem/Configuration/fetchTimeout``).
package protocol MountDelegate: Sendable {
    /// Brings the evicted file at `path` (relative to the folder) back: returns once its
    /// content is in place under its name (or throws: offline, gone from the server).
    func materialize(_ path: String) async throws

    /// Starts bringing back the evicted file at `path` (relative) and returns at once how its
    /// bytes arrive (``ByteArrival``): in a partial file in the folder, front to back; an
    /// arrival that finishes without a file means the file is under its name now (or gone).
    func stream(_ path: String) async throws -> ByteArrival

    /// Runs `replace`, which puts something new at the evicted file's name `path` (relative)
    /// and removes its stub, and makes that the item's next version: an edit of the server's
    /// current one, uploaded as any edit (a conflict version if the server moved on), never a
    /// conflict with itself. `replace` works on the disk under the mount, not through it (the
    /// request waiting for this may hold the kernel's lock of the folder), and neither may this.
    func replacePlaceholder(_ path: String, by replace: @escaping @Sendable () throws -> Void) async throws
}
