// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileVersion {
    /// Whether the item at `path` carries the version store's identity attribute (it had
    /// versions once, or is a copy of such an item): one `getxattr`.
    package static func hasItemIdentity(at path: String) -> Bool { ItemIdentity.read(at: path) != nil }

    /// Writes the identity attribute again on the item at canonical `path` when the version
    /// store knows the item by its path but the file has lost the attribute (an editor that
    /// saves by writing a new file and renaming it over the old one), so that its versions
    /// follow its next plain rename. Does nothing when the store does not know the path.
    package static func keepIdentity(ofItemAt path: String) {
        let store = VersionStore.current
        guard let id = store.existingItemID(forPath: path) else { return }
        if ItemIdentity.read(at: path) == id, (try? store.readIndex())?[path] == id { return }
        _ = try? store.itemID(forPath: path)  // the attribute and the path index entry, written again
    }

    /// Links the item at canonical `path` again to the stored item that holds version
    /// `identifier`, when the store no longer finds it by the item (its identity attribute lost
    /// and its path index entry stale: an editor's save, then a rename, made between looks) and
    /// that stored item's recorded path has no item of its own any more. The caller knows the
    /// version belongs to the item at `path` (sync's journal does). Returns the version, or nil
    /// when no stored item holds it. Reads every manifest: for the rare version not found.
    package static func relink(version identifier: String, toItemAt path: String) -> FileVersion? {
        let store = VersionStore.current
        guard let (id, manifest) = storedItem(holding: identifier) else { return nil }
        guard manifest.path != path else { return nil }  // found by its path already: not lost
        if isLive(id, at: manifest.path) { return nil }  // another live item holds it
        itemDidMove(from: manifest.path, to: path)
        if store.existingItemID(forPath: path) != id {
            _ = try? store.updateIndex { $0[path] = id }
        }
        ItemIdentity.assign(id, at: path)
        return version(itemAt: URL(fileURLWithPath: path), forPersistentIdentifier: identifier)
    }

    /// The canonical path of the live item that holds version `identifier` (a file there
    /// carries the identity of the stored item whose manifest lists it), or nil. Reads every
    /// manifest: for the rare version its item's journal does not lead to.
    package static func holder(ofVersion identifier: String) -> String? {
        guard let (id, manifest) = storedItem(holding: identifier), isLive(id, at: manifest.path) else { return nil }
        return manifest.path
    }

    /// Forgets the versions this process announced lately, which ``version(itemAt:forPersistentIdentifier:)``
    /// still finds by their old path: tests that look at what a long-running process finds.
    package static func forgetAnnouncedVersions() {
        VersionAnnouncements.forgetRecent()
    }

    /// The stored item whose manifest lists version `identifier`.
    private static func storedItem(holding identifier: String) -> (id: String, manifest: VersionManifest)? {
        let store = VersionStore.current
        guard let ids = try? FileManager.default.contentsOfDirectory(atPath: store.itemsPath) else { return nil }
        for id in ids where VersionStore.isIdentifier(id) {
            if let manifest = try? store.readManifest(id), manifest.versions.contains(where: { $0.id == identifier }) { return (id, manifest) }
        }
        return nil
    }

    /// Whether an item at `path` carries stored item `id`'s identity.
    private static func isLive(_ id: String, at path: String) -> Bool {
        FileStamp.of(path) != nil && ItemIdentity.read(at: path) == id
    }

    /// ``itemDidMove(from:to:)`` for a move the store may have been told of already (by the
    /// coordinator that made it): nothing is done when the store's path index records nothing at
    /// or below `oldPath`. Told twice, the second telling would clear the destination's entries,
    /// the moved item's own among them, and an item whose identity attribute an editor's save
    /// dropped would lose its versions (sync simulator seed 1706: taken for resolved everywhere).
    package static func itemMayHaveMoved(from oldPath: String, to newPath: String) {
        guard let index = try? VersionStore.current.readIndex(),
              index.keys.contains(where: { CanonicalPath.isSameOrDescendant($0, of: oldPath) }) else { return }
        itemDidMove(from: oldPath, to: newPath)
    }

    /// Versions follow a renamed item: the path index entries of `oldPath` and of everything
    /// inside it move to `newPath` (canonical absolute paths), and so do the manifests' recorded
    /// paths. Called by `FileCoordinator.item(at:didMoveTo:)`; failures are ignored, as items that
    /// carry the `user.ubiquity.item-id` attribute are found without the index.
    package static func itemDidMove(from oldPath: String, to newPath: String) {
        guard oldPath.hasPrefix("/"), newPath.hasPrefix("/"), oldPath != newPath else { return }
        let store = VersionStore.current
        // Most moves concern items without versions: look before taking the lock.
        guard let snapshot = try? store.readIndex(), snapshot.keys.contains(where: {
            CanonicalPath.isSameOrDescendant($0, of: oldPath) || CanonicalPath.isSameOrDescendant($0, of: newPath)
        }) else { return }
        let moved = (try? store.updateIndex { index -> [(id: String, path: String)] in
            var moved: [(id: String, path: String)] = []
            for (path, id) in index where CanonicalPath.isSameOrDescendant(path, of: oldPath) {
                moved.append((id, CanonicalPath.rebase(path, from: oldPath, to: newPath)))
                index.removeValue(forKey: path)
            }
            // Whatever was at the destination was replaced by the move.
            for (path, _) in index where CanonicalPath.isSameOrDescendant(path, of: newPath) {
                index.removeValue(forKey: path)
            }
            for entry in moved { index[entry.path] = entry.id }
            return moved
        }) ?? []
        for entry in moved {
            _ = try? store.withItemLock(entry.id) {
                guard var manifest = try store.readManifest(entry.id), manifest.path != entry.path else { return }
                manifest.path = entry.path
                try store.writeManifest(manifest)
            }
        }
    }
}
