// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

/// Pinning, Apple's "Keep Downloaded" (`docs/sync.md`, "Eviction"): a pinned item (a folder:
/// everything in it, now and later) is downloaded and stays; it is never evicted, by
/// `ubiq evict` or by the `--evict-budget` policy. The pin is kept by ID in the journal, so it
/// follows renames.
extension SyncEngine {
    /// Pins the item at the absolute `path` (a file or a folder, the sync folder included) and
    /// downloads what in it is evicted; returns the paths downloaded.
    /// - Throws: `invalidArgument` (not in the sync folder, excluded), `notFound`, `conflict`
    ///   (not uploaded yet: nothing to keep downloaded yet is not an error for a folder);
    ///   what the download throws.
    package func pin(_ path: String) async throws -> [String] {
        try await setPinned(path, true)
        return try await startDownloading(path)
    }

    /// Unpins the item at the absolute `path`: it may be evicted again. Items inside a pinned
    /// folder are unpinned with the folder.
    /// - Throws: as ``pin(_:)``, and `invalidArgument` when the pin is a folder's above it.
    package func unpin(_ path: String) async throws {
        try await setPinned(path, false)
    }

    private func setPinned(_ path: String, _ pinned: Bool) async throws {
        let relative = try relativePath(path)
        let what = pinned ? "pinned" : "unpinned"
        if relative.isEmpty {
            throw UbiquityError(.invalidArgument, "'\(path)' is the sync folder itself: pin the items or folders in it")
        }
        guard let entry = try journal.entry(path: relative) else {
            guard Placeholder.stamp(ofItemAt: absolute(relative)) != nil else { throw UbiquityError(.notFound, "no item at '\(absolute(relative))'") }
            if try journal.excluded().contains(relative) {
                throw UbiquityError(.invalidArgument, "'\(absolute(relative))' is excluded from sync: it is always here and never on the server")
            }
            throw UbiquityError(.conflict, "'\(absolute(relative))' is not uploaded yet: it can be \(what) once it is")
        }
        if !pinned, !(try journal.pinnedPaths().contains(relative)), try journal.isPinned(path: relative) {
            throw UbiquityError(.invalidArgument, "'\(absolute(relative))' is kept downloaded by a pinned folder above it: unpin that folder")
        }
        try journal.setPinned(entry.id, pinned)
        logger.info("\(what)", metadata: ["ubiquity.path": "\(relative)"])
    }

    /// Whether the journaled `path` is pinned (itself or by a folder above it).
    func isPinned(_ path: String) -> Bool { (try? journal.isPinned(path: path)) ?? false }
}

extension SyncFiles {
    /// Whether another process has the file at `path` open: a write lease (`F_SETLEASE`) is
    /// refused with `EAGAIN` while any other descriptor for it is open. False when the file
    /// system or the caller cannot take leases (nothing can be told: not open, as far as known).
    static func isOpenElsewhere(_ path: String) -> Bool {
        let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW | O_NONBLOCK)
        guard fd >= 0 else { return false }
        defer { close(fd) }
        let setLease: Int32 = 1024  // F_SETLEASE (F_LINUX_SPECIFIC_BASE)
        if fcntl(fd, setLease, Int32(F_WRLCK)) == 0 {
            _ = fcntl(fd, setLease, Int32(F_UNLCK))
            return false
        }
        return errno == EAGAIN
    }
}
