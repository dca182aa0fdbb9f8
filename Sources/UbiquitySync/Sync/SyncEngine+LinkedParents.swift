// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import UbiquityCore

/// Remote items are never written through a link (`docs/sync.md`, "Paths from the server"): a
/// record at `link/file` where `link` is a synced symbolic link (or an app's folder link that
/// could not move aside) would otherwise be written wherever the link points, maybe outside the
/// folder. Both writers check the folders on the way with ``SyncFiles/notAFolderOnTheWay(root:relative:)``:
/// the batched new-file writer hands such a file to the one-by-one path (where an app's folder
/// link of that name moves aside first), and the one-by-one path refuses it
/// (``SyncEngine/refusesLinkOnTheWay(_:)``).
extension SyncFiles {
    /// Something on the way to `relative` under `root` that is not a real folder: the first
    /// parent (relative path) that exists and is a link or another non-folder, and whether it
    /// is a link. Nil when every existing parent is a folder (missing ones are made as folders).
    static func notAFolderOnTheWay(root: String, relative: String) -> (path: String, isLink: Bool)? {
        var path = root
        var relativePath = ""
        for component in relative.split(separator: "/").dropLast() {
            path += "/" + component
            relativePath += (relativePath.isEmpty ? "" : "/") + component
            var status = stat()
            guard lstat(path, &status) == 0 else { return nil }  // missing: so is everything below it
            let type = status.st_mode & S_IFMT
            if type != S_IFDIR { return (relativePath, type == S_IFLNK) }
        }
        return nil
    }
}

extension SyncEngine {
    /// Whether `item` must not be applied because a link is on the way to it (checked after an
    /// app's folder link of its first component moved aside): reported once per version of the
    /// record (a warning, and the item's download error), then skipped; nothing is written
    /// outside the folder. The record is applied when it changes again, or at a full listing
    /// once the link is gone.
    func refusesLinkOnTheWay(_ item: RemoteItem) -> Bool {
        guard let found = SyncFiles.notAFolderOnTheWay(root: folder, relative: item.path), found.isLink else { return false }
        let version = item.changeTag ?? ""
        if memory.refusedDownloads[item.id] != version {
            memory.refusedDownloads[item.id] = version
            let error = UbiquityError(.invalidArgument,
                                      "'\(item.path)' is not written: '\(found.path)' on the way is a symbolic link here (remote items are never written through a link)")
            logger.warning("not applied: a link is on the way", metadata: ["ubiquity.path": "\(item.path)", "ubiquity.link": "\(found.path)"])
            noteDownloadFailed(item.path, error)
        }
        return true
    }
}
