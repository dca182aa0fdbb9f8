// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore

/// Conflict versions an app kept by itself are shared too (`docs/sync.md`, "Sharing conflict
/// versions"): a `Document` with unsaved edits that meets a change from elsewhere keeps its own
/// content as an unresolved conflict version of the item (``FileVersion/addConflictVersion(ofItemAt:withContentsOf:savingComputerName:modificationDate:options:)``),
/// in its own process. The daemon hears of it through its coordination socket (the version's
/// `gained` event, ``SyncEngine/versionSettled(at:)``) and, for what happened while it was not
/// running, surveys the version store at its first pass; every unresolved conflict version of a
/// synced file that is not in the journal's `conflicts` (neither made nor imported by sync) is
/// journaled unpublished and published by ``SyncEngine/shareConflictVersions()`` like sync's
/// own, so other devices see it and resolving it anywhere settles it.
extension SyncEngine {
    /// Adopts the unshared conflict versions of the items noted since the last pass (all items
    /// with versions at the first pass). Not before the first complete fetch: a journal rebuilt
    /// after damage first matches the records the server has to the versions here, so that
    /// versions imported before are never published twice.
    func adoptAppConflictVersions() async {
        let survey = !memory.versionsSurveyed
        var paths = versionCandidates.withLock { candidates -> Set<String> in
            defer { candidates = [] }
            return candidates
        }
        guard survey || !paths.isEmpty else { return }
        do {
            guard try journal.value(Self.tokenKey) != nil else {
                versionCandidates.withLock { $0.formUnion(paths) }  // looked at after the first complete fetch
                return
            }
            let folder = self.folder
            if survey {
                paths.formUnion(try await BlockingWork.run { FileVersion.itemPathsWithVersions(under: folder) })
                memory.versionsSurveyed = true
            }
            var claimed = Set(try journal.conflicts().map(\.version))
            for path in paths.sorted() where path != folder && CanonicalPath.isSameOrDescendant(path, of: folder) {
                let relative = String(path.dropFirst(folder.count + 1))
                guard let entry = try journal.entry(path: relative), entry.changeTag != nil, entry.stat.kind == .file else { continue }
                let url = URL(fileURLWithPath: path)
                let versions = try await BlockingWork.run { FileVersion.unresolvedConflictVersionsOfItem(at: url) ?? [] }
                for version in versions where version.hasLocalContents && !claimed.contains(version.persistentIdentifier) {
                    claimed.insert(version.persistentIdentifier)
                    noteConflictKept(itemID: entry.id, version: version)
                    memory.conflicted[entry.id] = relative  // followed through renames (SyncEngine+ConflictMoves.swift)
                    logger.notice("a conflict version kept by an app is shared with the other devices",
                                  metadata: ["ubiquity.path": "\(relative)", "ubiquity.conflictDevice": "\(version.localizedNameOfSavingComputer ?? "")"])
                }
            }
        } catch is CancellationError {
            versionCandidates.withLock { $0.formUnion(paths) }
        } catch {
            versionCandidates.withLock { $0.formUnion(paths) }
            logger.warning("could not look for conflict versions kept by apps; tried again at the next pass", metadata: ["ubiquity.error": "\(error)"])
        }
    }

    /// New files that carry the version store's identity attribute may have conflict versions
    /// from before they were items of their own here (a file in conflict renamed here while its
    /// record was deleted elsewhere: it is sent as a new item, and its versions, found by the
    /// attribute, are shared as ones the journal does not know). Looked at by the next
    /// ``adoptAppConflictVersions()``. Found by the sync simulator (seed 110). One `getxattr`
    /// per new file.
    func noteVersionCandidates(_ relatives: [String]) async {
        guard !relatives.isEmpty else { return }
        let root = folder
        let found = (try? await BlockingWork.run { relatives.map { root + "/" + $0 }.filter(FileVersion.hasItemIdentity(at:)) }) ?? []
        if !found.isEmpty { versionCandidates.withLock { $0.formUnion(found) } }
    }
}
