// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// What the journal says is synced is on the disk for good first. A file journaled as synced
/// that a power loss takes back to an older content (or to nothing: a file written and never
/// flushed comes back empty on ext4) is judged by the next pass as a local edit of the version
/// it had sent, and sent over it, everywhere, with no conflict version; a file gone is sent as
/// deleted. So before an upload is journaled its file is made durable, bytes and name: one
/// `syncfs` for a batch when little else is dirty, else an fsync each (``NewFileDurability``),
/// then one fsync per folder; a new folder's name too. Found by the sync simulator's power
/// losses (``Durability``).
extension SyncEngine {
    /// Makes the file at `path` (relative) durable, its bytes and its name: before a local file
    /// the engine did not itself write durably is journaled as the server's version (an adopt:
    /// the same content), since that file may be a download renamed into place by a pass that
    /// failed before its folder was synced (found by the sync simulator, seed 17).
    func makeDurable(file path: String) async throws {
        let absolute = absolute(path)
        try await BlockingWork.run { try SyncFiles.makeDurable(file: absolute) }
    }

    /// Makes the files at `paths` (relative) durable, their bytes and their names; returns
    /// those that could not be, with why.
    func makeDurable(_ paths: [String]) async throws -> [String: UbiquityError] {
        guard !paths.isEmpty else { return [:] }
        let root = folder
        return try await BlockingWork.run {
            let absolutes = paths.map { root + "/" + $0 }
            let plan = NewFileDurability.plan(files: absolutes.count, dirtyBytes: NewFileDurability.dirtyBytes())
            var failed = SyncFiles.makeDurable(absolutes, lanes: Self.temporaryLanes, wholeFileSystem: plan == .fileSystem)
            for folder in Set(absolutes.map(SyncFiles.parent(of:))) {
                do { try SafeSave.syncDirectory(folder) } catch {
                    for path in absolutes where SyncFiles.parent(of: path) == folder { failed[path] = UbiquityError.wrapping(error, "cannot sync the folder '\(folder)'") }
                }
            }
            var byPath: [String: UbiquityError] = [:]
            for (path, absolute) in zip(paths, absolutes) { byPath[path] = failed[absolute] }
            return byPath
        }
    }

    /// The folders (absolute) to fsync so that the names of the folders on the way to `paths`
    /// (relative) that the journal does not hold as synced are durable, before a download into
    /// them is journaled. A folder journaled as synced has a durable name (made so first:
    /// ``makeNamesDurable(_:)``, and the remote part's `mkdir`); one made here by a remote
    /// change whose parent's fsync failed, or by the user and not sent yet, may not, and a power
    /// loss took it with a file downloaded into it, sent as deleted everywhere next (sync
    /// simulator seed 1755). One journal read per folder on the way.
    func parentsOfUnsyncedFolders(on paths: [String]) throws -> Set<String> {
        Set(try SyncFiles.foldersOnTheWay(to: paths).filter { try journal.entry(path: $0)?.changeTag == nil }.map { SyncFiles.parent(of: absolute($0)) })
    }

    /// Makes the names of the folders at `paths` (relative) durable before they are journaled as
    /// synced: one fsync per parent; returns those that could not be, with why. A folder the
    /// remote part made here whose parent's fsync failed is found by the scan as new and sent:
    /// journaled with its name not durable, a power loss took it, with what was downloaded into
    /// it since, and the next pass sent it all as deleted, another device's only copy of a write
    /// with it (sync simulator seed 1755).
    func makeNamesDurable(_ paths: [String]) async throws -> [String: UbiquityError] {
        guard !paths.isEmpty else { return [:] }
        let root = folder
        return try await BlockingWork.run {
            var failed: [String: UbiquityError] = [:]
            for (parent, members) in Dictionary(grouping: paths, by: { SyncFiles.parent(of: root + "/" + $0) }) {
                do { try SafeSave.syncDirectory(parent) } catch {
                    for path in members { failed[path] = UbiquityError.wrapping(error, "cannot sync the folder '\(parent)'") }
                }
            }
            return failed
        }
    }
}
