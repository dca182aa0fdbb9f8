// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileVersion {
    /// Writes the identity attribute again on the item at canonical `path` when the version
    /// store knows the item by its path but the file has lost the attribute (an editor that
    /// saves by writing a new file and renaming it over the old one), so that its versions
    /// follow its next plain rename. Does nothing when the store does not know the path.
    package static func keepIdentity(ofItemAt path: String) {
        let store = VersionStore.current
        guard ItemIdentity.read(at: path) == nil, store.existingItemID(forPath: path) != nil else { return }
        _ = try? store.itemID(forPath: path)  // found through the path index: the attribute is written again
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
