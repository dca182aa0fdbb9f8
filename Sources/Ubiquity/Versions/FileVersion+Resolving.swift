// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileVersion {
    /// Marks this conflict version resolved, in the store (for every process) and in this object,
    /// and tells presenters. The throwing form of `isResolved = true`.
    ///
    /// Does nothing for versions that are not conflicts or are already resolved. A conflict
    /// version removed lately can still be marked (Apple's documented order removes the other
    /// versions before setting `isResolved`).
    ///
    /// - Throws: `notFound` when the store has never heard of the version.
    public func markResolved() throws {
        guard isConflict, let store, let itemID else { return }
        let changedPath = try store.withItemLock(itemID) { () throws -> String? in
            guard var manifest = try store.readManifest(itemID) else {
                throw UbiquityError(.notFound, "no version \(persistentIdentifier) of '\(itemPath)' is stored")
            }
            if let index = manifest.versions.firstIndex(where: { $0.id == persistentIdentifier }) {
                if manifest.versions[index].resolved { return nil }
                manifest.versions[index].resolved = true
            } else if let index = manifest.removed.lastIndex(where: { $0.id == persistentIdentifier }) {
                if manifest.removed[index].resolved { return nil }
                manifest.removed[index].resolved = true
            } else {
                throw UbiquityError(.notFound, "no version \(persistentIdentifier) of '\(itemPath)' is stored")
            }
            try store.writeManifest(manifest)
            return manifest.path
        }
        setResolvedLocally()
        if let changedPath { VersionAnnouncements.post(.resolved, self, path: changedPath) }
    }
}
