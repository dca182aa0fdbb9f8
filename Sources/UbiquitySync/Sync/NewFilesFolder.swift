// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// The folder at the top of a synced folder where the new-file writer makes its temporaries
/// (``SyncEngine/applyNewFiles(_:)``): `.ubiq-tmp-sync-new`, a name the ignore rules skip, so
/// neither the index's watcher nor the engine's watches it. A new file then costs the watchers
/// one event (its rename into its folder) instead of seven (create, write, two attribute
/// changes, close, and the rename out of a temporary name in the same folder and into its own).
///
/// It is on the synced folder's file system, so the rename into place stays atomic; a target
/// on another file system (a mount inside the synced folder) is written the one-by-one way.
/// It exists only while a page's new files are written (removed after them, whatever
/// happened); whatever a killed process left in it is removed, with the folder, when an engine
/// starts on the folder (it holds the folder's lock then) and by every full scan (passes never
/// overlap a batch).
enum NewFilesFolder {
    /// The folder's name (our temporary prefix: ignored by the watcher, the index and the scans).
    static let name = SyncFiles.temporaryPrefix + "new"

    /// The folder under the synced folder `root`.
    static func path(root: String) -> String {
        root + "/" + name
    }

    /// Subfolders the temporaries are spread over (`0` … `15`): making a file in a folder takes
    /// that folder's lock, and the writer's threads would all wait on one folder's.
    static let spread = 16

    /// The folder under `root` with its subfolders, made when missing (mode 0700); nil when it
    /// cannot be made or something else has its name (the temporaries go next to their targets
    /// then).
    static func prepare(root: String) -> String? {
        let folder = path(root: root)
        if mkdir(folder, 0o700) != 0 && errno != EEXIST { return nil }
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR else { return nil }
        for lane in 0..<spread {
            let subfolder = folder + "/" + String(lane)
            if mkdir(subfolder, 0o700) != 0 && errno != EEXIST { return nil }
        }
        return folder
    }

    /// Removes the folder under `root` and everything in it (temporaries left by a killed
    /// process); returns how many entries it held. Nothing happens when it is missing (or
    /// something else has its name).
    @discardableResult
    static func clear(root: String) -> Int {
        let folder = path(root: root)
        var info = stat()
        guard lstat(folder, &info) == 0, info.st_mode & S_IFMT == S_IFDIR,
              let names = try? FileManager.default.contentsOfDirectory(atPath: folder) else { return 0 }
        var removed = 0
        for name in names {
            let entry = folder + "/" + name
            if unlink(entry) == 0 {
                removed += 1
                continue
            }
            // a subfolder (with the temporaries in it), or anything else put here by hand
            let inside = (try? FileManager.default.contentsOfDirectory(atPath: entry))?.count ?? 0
            if (try? FileManager.default.removeItem(atPath: entry)) != nil { removed += inside }
        }
        rmdir(folder)
        return removed
    }

    /// Removes the folder under `root` (and its subfolders) when it is empty (after a page's
    /// new files).
    static func removeIfEmpty(root: String) {
        let folder = path(root: root)
        for lane in 0..<spread { rmdir(folder + "/" + String(lane)) }
        rmdir(folder)
    }

    /// A temporary's path in `folder` (made by ``prepare(root:)``) for the `index`th file of a
    /// batch tagged `tag`.
    static func temporaryPath(in folder: String, tag: String, index: Int) -> String {
        folder + "/" + String(index % spread) + "/" + SyncFiles.temporaryPrefix + tag + "-" + String(index)
    }
}
