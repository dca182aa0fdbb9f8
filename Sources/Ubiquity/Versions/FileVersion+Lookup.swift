// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileVersion {
    /// The current version of the item at `url`: the item itself. Nil when there is no item or
    /// the path is relative.
    public class func currentVersionOfItem(at url: URL) -> FileVersion? {
        guard let path = try? itemPath(of: url), let stamp = FileStamp.of(path) else { return nil }
        return FileVersion(currentAt: path, stamp: stamp)
    }

    /// The item's stored versions, conflict versions included, oldest addition first. Never
    /// contains the current version. Nil when there is no item or the path is relative.
    public class func otherVersionsOfItem(at url: URL) -> [FileVersion]? {
        guard let path = try? itemPath(of: url), FileStamp.of(path) != nil else { return nil }
        return storedVersions(at: path, store: .current)
    }

    /// The item's conflict versions not yet resolved. Nil when there is no item or the path is
    /// relative.
    public class func unresolvedConflictVersionsOfItem(at url: URL) -> [FileVersion]? {
        otherVersionsOfItem(at: url)?.filter { $0.isConflict && !$0.isResolved }
    }

    /// The unresolved conflict versions the store still holds under `url`'s path when no item is
    /// there any more: the file was deleted or renamed outside coordination after losing its
    /// identity attribute (an editor's save by rename), so nothing leads to them but the path.
    /// Sync restores this device's ones rather than drop them. Empty when an item is at `url`.
    package class func unresolvedConflictVersionsLeft(at url: URL) -> [FileVersion] {
        guard let path = try? itemPath(of: url), FileStamp.of(path) == nil else { return [] }
        return storedVersions(at: path, store: .current).filter { $0.isConflict && !$0.isResolved }
    }

    /// The unresolved conflict versions the store holds under paths at or below canonical
    /// `folder` where no item is any more (see ``unresolvedConflictVersionsLeft(at:)``), by path.
    package class func unresolvedConflictVersionsLeft(under folder: String) -> [(path: String, versions: [FileVersion])] {
        guard let index = try? VersionStore.current.readIndex() else { return [] }
        return index.keys.sorted().compactMap { path in
            guard CanonicalPath.isSameOrDescendant(path, of: folder) else { return nil }
            let versions = unresolvedConflictVersionsLeft(at: URL(fileURLWithPath: path))
            return versions.isEmpty ? nil : (path, versions)
        }
    }

    /// The version of the item at `url` whose ``persistentIdentifier`` is `identifier`
    /// (`"current"` for the current version), or nil. A version removed lately is still found (its
    /// ``hasLocalContents`` is false), so presenters told of a loss can see what was lost.
    public class func version(itemAt url: URL, forPersistentIdentifier identifier: String) -> FileVersion? {
        guard let path = try? itemPath(of: url) else { return nil }
        if identifier == currentIdentifier {
            return FileStamp.of(path).map { FileVersion(currentAt: path, stamp: $0) }
        }
        let store = VersionStore.current
        if let id = store.existingItemID(forPath: path), let manifest = try? store.readManifest(id),
           let record = manifest.versions.first(where: { $0.id == identifier })
            ?? manifest.removed.last(where: { $0.id == identifier }) {
            return FileVersion(record: record, itemID: id, itemPath: path, store: store)
        }
        return VersionAnnouncements.recentVersion(path: path, identifier: identifier)
    }

    // MARK: Helpers

    /// The canonical path of a file URL; `invalidArgument` for relative paths and other schemes.
    static func itemPath(of url: URL) throws -> String {
        guard url.isFileURL || url.scheme == nil else {
            throw UbiquityError(.invalidArgument, "'\(url)' is not a file URL")
        }
        return try CanonicalPath.canonicalize(url.path)
    }

    /// The stored versions of the item at canonical `path` (empty when it has none).
    static func storedVersions(at path: String, store: VersionStore) -> [FileVersion] {
        guard let id = store.existingItemID(forPath: path), let manifest = try? store.readManifest(id) else { return [] }
        return manifest.versions.map { FileVersion(record: $0, itemID: id, itemPath: path, store: store) }
    }
}
