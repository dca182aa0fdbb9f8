// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileVersion {
    /// The canonical paths under `folder` (canonical, absolute) of the items the version store
    /// keeps versions for: the path index's entries and the manifests' recorded paths. Cheap
    /// next to asking every item (one read of the index, one of each manifest of the store).
    /// Sync uses it to find conflict versions an app kept by itself (a `Document`) that it has
    /// not shared yet; ask ``unresolvedConflictVersionsOfItem(at:)`` for each path.
    package static func itemPathsWithVersions(under folder: String) -> Set<String> {
        let store = VersionStore.current
        var paths = Set((try? store.readIndex())?.keys.filter { CanonicalPath.isSameOrDescendant($0, of: folder) } ?? [])
        let ids = (try? FileManager.default.contentsOfDirectory(atPath: store.itemsPath)) ?? []
        for id in ids where VersionStore.isIdentifier(id) {
            if let manifest = try? store.readManifest(id), CanonicalPath.isSameOrDescendant(manifest.path, of: folder) {
                paths.insert(manifest.path)
            }
        }
        return paths
    }
}
