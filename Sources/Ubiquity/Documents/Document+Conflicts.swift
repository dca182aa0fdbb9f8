// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

// Conflicts: the file changed on disk while the document had unsaved changes. The local edits
// win the file at the next save, and the content found on disk is kept as a conflict version
// first. Everything here runs on the file-access queue.
extension Document {
    /// Keeps what is on disk at `url` as a conflict version, takes its stamp as the one the
    /// document knows (so the same change is not seen twice), and sets `.inConflict`.
    func preserveDiskContentAsConflict(_ url: URL) {
        begin(.check)
        defer { end() }
        do {
            // Versions are added inside a coordinated write of the item (Apple's rule), which
            // also keeps writers out while the content is copied.
            let coordinator = FileCoordinator(filePresenter: self)
            let stamp = try coordinator.coordinate(writingItemAt: url, options: []) { actual -> FileStamp in
                guard let stamp = FileStamp.of(actual.path), !stamp.isDirectory else {
                    throw UbiquityError(.notFound, "'\(url.path)' vanished before its content could be kept")
                }
                try keepAsConflictVersion(actual, modificationDate: stamp.modificationDate)
                return stamp
            }
            storage.withLock { $0.recordedStamp = stamp }
            updateState { $0.insert(.inConflict) }
            scheduleAutosave()
        } catch {
            // Nothing was kept, so the local edits must not overwrite the file yet: the document
            // stays dirty and the next check (or save) tries again.
            handleError(error, userInteractionPermitted: false)
        }
    }

    /// Recomputes `.inConflict` from the file's unresolved conflict versions.
    func refreshConflictState() {
        let url = fileURL
        let conflicted = withVersionStore { ConflictVersions.hasUnresolved(at: url) }
        updateState { state in
            if conflicted { state.insert(.inConflict) } else { state.remove(.inConflict) }
        }
    }

    /// Copies the file aside (so the version gets exactly what was read) and adds it as an
    /// unresolved conflict version.
    func keepAsConflictVersion(_ url: URL, modificationDate: Date) throws {
        let copy = FileManager.default.temporaryDirectory
            .appendingPathComponent("ubiquity-conflict-" + UUID().uuidString + "-" + url.lastPathComponent)
        do {
            try FileManager.default.copyItem(at: url, to: copy)
        } catch {
            throw UbiquityError(.io, "cannot copy '\(url.path)' aside to keep it as a conflict version", underlying: error)
        }
        defer { try? FileManager.default.removeItem(at: copy) }
        try withVersionStore {
            try ConflictVersions.add(ofItemAt: url, contentsOf: copy, modificationDate: modificationDate)
        }
    }

    /// Runs `body` (a version-store call) with the version-store location of the task that made
    /// the document (tests give each task its own store).
    private func withVersionStore<T>(_ body: () throws -> T) rethrows -> T {
        try VersionStoreLocation.$override.withValue(versionStoreOverride) { try body() }
    }
}

/// The document's only calls into ``FileVersion``.
private enum ConflictVersions {
    static func hasUnresolved(at url: URL) -> Bool {
        !(FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? []).isEmpty
    }

    static func add(ofItemAt url: URL, contentsOf copy: URL, modificationDate: Date) throws {
        try FileVersion.addConflictVersion(ofItemAt: url, withContentsOf: copy, modificationDate: modificationDate)
    }
}
