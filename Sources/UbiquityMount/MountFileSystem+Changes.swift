// SPDX-License-Identifier: Apache-2.0
import Glibc
import UbiquityCore

/// The mount is the folder's watcher (issue 23): every change a request makes is posted to the
/// folder's ``FolderChangeFeed`` as inotify would have reported it (the names as the request
/// gave them), so the daemon's sync and index learn of changes from the mount itself and put
/// no inotify watch on it. Posting only queues (it never waits for anything that looks at the
/// folder: the kernel may hold the folder's lock while a request runs).
extension MountFileSystem {
    /// The absolute path of `path` (relative to the folder; "" is the folder).
    func absolute(_ path: String) -> String { path.isEmpty ? folder : folder + "/" + path }

    /// Posts a change at `path` (relative).
    func told(_ kind: FolderChangeFeed.Change.Kind, _ path: String, isDirectory: Bool = false) {
        FolderChangeFeed.shared.post(FolderChangeFeed.Change(kind, absolute(path), isDirectory: isDirectory), in: folder)
    }

    /// Posts the change at the node `id`'s current path, if it still has one.
    func told(_ kind: FolderChangeFeed.Change.Kind, node id: UInt64) {
        guard let path = nodes.withLock({ $0.path(of: id) }) else { return }
        told(kind, path)
    }

    /// Posts a rename of `from` to `to` (relative; both ends of an exchange with `exchange`),
    /// its two ends together.
    func toldRename(from: String, to: String, exchange: Bool) {
        func isFolder(_ path: String) -> Bool { rawStat(path).map { ($0.st_mode & S_IFMT) == S_IFDIR } ?? false }
        let feed = FolderChangeFeed.shared
        let cookie = feed.nextCookie()
        var changes = [FolderChangeFeed.Change(.movedFrom(cookie: cookie), absolute(from), isDirectory: isFolder(to)),
                       FolderChangeFeed.Change(.movedTo(cookie: cookie), absolute(to), isDirectory: isFolder(to))]
        if exchange {
            let back = feed.nextCookie()
            changes += [FolderChangeFeed.Change(.movedFrom(cookie: back), absolute(to), isDirectory: isFolder(from)),
                        FolderChangeFeed.Change(.movedTo(cookie: back), absolute(from), isDirectory: isFolder(from))]
        }
        feed.post(contentsOf: changes, in: folder)
    }
}
