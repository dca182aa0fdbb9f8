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
        guard let ids = try? FileManager.default.contentsOfDirectory(atPath: store.itemsPath) else { return nil }
        for id in ids where VersionStore.isIdentifier(id) {
            guard let manifest = try? store.readManifest(id), manifest.versions.contains(where: { $0.id == identifier }) else { continue }
            guard manifest.path != path else { return nil }  // found by its path already: not lost
            if FileStamp.of(manifest.path) != nil, ItemIdentity.read(at: manifest.path) == id { return nil }  // another live item holds it
            itemDidMove(from: manifest.path, to: path)
            if store.existingItemID(forPath: path) != id {
                _ = try? store.updateIndex { $0[path] = id }
            }
            ItemIdentity.assign(id, at: path)
            return version(itemAt: URL(fileURLWithPath: path), forPersistentIdentifier: identifier)
        }
        return nil
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
