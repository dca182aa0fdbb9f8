// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

extension FileVersion {
    /// Deletes this version from the store and tells presenters the item lost it. Apple's
    /// `remove()`.
    ///
    /// - Throws: `invalidArgument` for the current version (delete the item itself instead),
    ///   `notFound` when the version is no longer stored.
    public func remove() throws {
        guard let store, let itemID, let storedFile else {
            throw UbiquityError(.invalidArgument, "the current version of '\(itemPath)' cannot be removed; delete the item itself instead")
        }
        let path = try store.withItemLock(itemID) { () throws -> String in
            guard var manifest = try store.readManifest(itemID),
                  let index = manifest.versions.firstIndex(where: { $0.id == persistentIdentifier }) else {
                throw UbiquityError(.notFound, "no version \(persistentIdentifier) of '\(itemPath)' is stored")
            }
            manifest.remember(removed: manifest.versions.remove(at: index))
            try store.writeManifest(manifest)
            unlink(store.contentPath(itemID, file: storedFile))
            return manifest.path
        }
        VersionAnnouncements.post(.lost, self, path: path)
    }

    /// Deletes every stored version of the item at `url` (conflict versions too) and tells
    /// presenters; the item itself is never touched. Apple's `removeOtherVersionsOfItem(at:)`.
    ///
    /// - Throws: `invalidArgument` for relative paths; `notFound` when there is neither an item
    ///   nor stored versions at `url`.
    public class func removeOtherVersionsOfItem(at url: URL) throws {
        let path = try itemPath(of: url)
        let store = VersionStore.current
        guard let itemID = store.existingItemID(forPath: path) else {
            if FileStamp.of(path) == nil { throw UbiquityError(.notFound, "no item at '\(path)'") }
            return
        }
        let (removed, eventPath) = try store.withItemLock(itemID) { () throws -> ([VersionManifest.Record], String) in
            guard var manifest = try store.readManifest(itemID), !manifest.versions.isEmpty else { return ([], path) }
            let removed = manifest.versions
            manifest.versions.removeAll()
            for record in removed { manifest.remember(removed: record) }
            try store.writeManifest(manifest)
            for record in removed { unlink(store.contentPath(itemID, file: record.file)) }
            return (removed, manifest.path)
        }
        for record in removed {
            let version = FileVersion(record: record, itemID: itemID, itemPath: eventPath, store: store)
            VersionAnnouncements.post(.lost, version, path: eventPath)
        }
    }
}
