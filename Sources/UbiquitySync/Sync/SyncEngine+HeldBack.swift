// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit
import UbiquityCore

/// Records held back by a skip-backup item at their name, or by a folder marked skip-backup
/// above it, here (`docs/sync.md`, "Skip-backup").
///
/// A record fetched for a path where this device keeps an item marked skip-backup (never
/// synced), or for a path inside a folder so marked (*kept back*), does not replace or write
/// anything there. The record is not dropped either: its ID is kept in the journal with the path
/// it waits for, and each pull, once the fetched changes are applied (folders renamed there are
/// in place), looks up again the held-back records whose path is not kept back any more,
/// applying those whose name is free now (the skip-backup item deleted, moved or included).
/// Without it the change token moved past the record and the device never had it (found by the
/// sync simulator, seed 56: a folder deleted with its skip-backup file, the other device's file
/// of that name never came). Written into a kept-back folder, a record's item was taken by the
/// next local pass for one marked skip-backup here and its record deleted, on the server and on
/// the device that made it (seed 838).
extension SyncEngine {
    static let heldBackKey = "held-back-records"

    /// The records held back: each ID with the path it waits for ("" when not known: held back
    /// before the paths were kept, under an item that left for a kept-back folder, a folder
    /// marked skip-backup here with records waiting under it, or changed elsewhere while deleted
    /// here, ``keepChangedElsewhere(_:_:)``; looked up at the next pull).
    func heldBack() throws -> [String: String] {
        var held: [String: String] = [:]
        for line in (try journal.value(Self.heldBackKey) ?? "").split(separator: "\n") {
            let parts = line.split(separator: "\t", maxSplits: 1)
            held[String(parts[0])] = parts.count > 1 ? String(parts[1]) : ""
        }
        return held
    }

    func setHeldBack(_ held: [String: String]) throws {
        let lines = held.sorted { $0.key < $1.key }.map { $0.value.isEmpty ? $0.key : $0.key + "\t" + $0.value }
        try journal.setValue(lines.isEmpty ? nil : lines.joined(separator: "\n"), Self.heldBackKey)
    }

    /// Keeps record `id` to apply once `path` is free here.
    func holdBack(_ id: String, path: String) throws {
        try holdBack([id: path])
    }

    /// Keeps several records (ID → path) to apply once their paths are free here (one write).
    func holdBack(_ records: [String: String]) throws {
        var held = try heldBack()
        let new = records.filter { held[$0.key] != $0.value }
        guard !new.isEmpty else { return }
        held.merge(new) { $1 }
        try setHeldBack(held)
        for path in Set(new.values).sorted() where !path.isEmpty {
            logger.info("a record for a name kept back here (skip-backup) waits until the name is free", metadata: ["ubiquity.path": "\(path)"])
        }
    }

    /// Forgets held-back record `id` (journaled since: applied).
    func releaseHeldBack(_ id: String) throws {
        var held = try heldBack()
        guard held.removeValue(forKey: id) != nil else { return }
        try setHeldBack(held)
    }

    /// Whether `path` (relative) is kept back here: marked skip-backup, or inside a folder so
    /// marked (read on the disk: a folder marked since the last local pass counts).
    nonisolated static func isKeptBack(_ path: String, root: String) -> Bool {
        (try? BackupExclusion.isExcluded(root + "/" + path)) == true || SyncFiles.isInsideExcludedFolder(path, root: root)
    }

    /// The folders among `folders` (relative) that are kept back here (``isKeptBack(_:root:)``;
    /// one look per folder, however many records go into it).
    func keptBack(among folders: Set<String>) async throws -> Set<String> {
        let root = folder
        let looked = folders.subtracting([""])
        guard !looked.isEmpty else { return [] }
        return try await BlockingWork.run { looked.filter { Self.isKeptBack($0, root: root) } }
    }

    /// Applies the held-back records whose path is not kept back any more and whose name is
    /// free now; forgets those deleted on the server or journaled since (a later fetch brought
    /// them). Those still waiting for a kept-back path are not fetched again.
    func applyHeldBack() async throws {
        let held = try heldBack()
        guard !held.isEmpty else { return }
        let blocked = try await keptBack(among: Set(held.values))
        var waiting = held.filter { blocked.contains($0.value) }
        let looked = held.keys.filter { waiting[$0] == nil }.sorted()
        guard !looked.isEmpty else { return }
        let results = try await database.records(for: looked.map { Record.ID(recordName: $0, zoneID: SyncRecord.zoneID) })
        for id in looked {
            if let entry = try journal.entry(id: id) {
                // journaled since (a later fetch brought it): forgotten; behind this device's own
                // upload never confirmed (an item marked skip-backup here), it waits for the
                // local pass to let go of that entry (applyHeldBackForgotten; seed 11489)
                if entry.changeTag == nil { waiting[id] = held[id] }
                continue
            }
            guard case .success(let record)? = results[Record.ID(recordName: id, zoneID: SyncRecord.zoneID)],
                  let item = SyncRecord.item(from: record) else { continue }
            if try await keptBack(among: [item.path]).isEmpty {
                try await applyRemote(item, record)
                // (still waiting when its path was kept back meanwhile)
                if try journal.entry(id: id) != nil { continue }
                if try await keptBack(among: [item.path]).isEmpty { continue }
            }
            waiting[id] = item.path
        }
        try setHeldBack(waiting)
    }

    /// The records among `held` (``heldBack()``) that wait behind an entry of this journal:
    /// this device's own upload, never confirmed, of an item then marked skip-backup here,
    /// whose record was taken over elsewhere (``applyHeldBack()`` keeps them waiting).
    func heldBehindEntries(_ held: [String: String]) throws -> Set<String> {
        Set(try held.keys.filter { try journal.entry(id: $0) != nil })
    }

    /// Applies the held-back records now when the local pass let go of an entry one of them
    /// waited behind (`behind`: ``heldBehindEntries(_:)`` before it): the entry, forgotten by the
    /// pass, was the record's (this device's upload, its answer lost, then marked skip-backup
    /// here), and the record, renamed elsewhere meanwhile, was fetched first and held back.
    /// Applied only at the next pull, which nothing asked for, it never came (sync simulator
    /// seed 11489). Returns 1 when that failed (retried by the next pull), else 0.
    func applyHeldBackForgotten(_ behind: Set<String>, pulled: Bool) async -> Int {
        guard pulled, !behind.isEmpty else { return 0 }
        do {
            guard try behind.contains(where: { try journal.entry(id: $0) == nil }) else { return 0 }
            try await applyHeldBack()
            return 0
        } catch {
            logger.warning("could not apply the records held back by skip-backup items", metadata: ["ubiquity.error": "\(error)"])
            return 1
        }
    }

    /// A synced item another device moved into a folder kept back here (marked skip-backup):
    /// this device syncs nothing in that folder, so its local pass took the item (and what is
    /// under it) for one marked skip-backup here and deleted the records, on the server and on
    /// the device that moved it (sync simulator seed 838). Instead the item leaves the synced
    /// tree here without a delete: the journal forgets it and everything under it, their records
    /// are held back (applied once the folder is included again: the same content is adopted,
    /// another is a conflict; one under it that the moving device did not know of, its record
    /// still outside, is applied at its path again by the end of the pull), and then it moves
    /// into the kept-back folder, where its bytes stay (aside as a conflicted copy when the name
    /// is taken there); the stubs of evicted files go (their content is on the server, under
    /// the records held back). Forgotten before it moves, a crash in between leaves it at its
    /// old name, sent again as new: two copies, none lost.
    func leaveForKeptBack(_ entry: JournalEntry, to item: RemoteItem) async throws {
        var subtree = [entry]
        if entry.stat.kind == .folder {
            var scope = LocalScope()
            scope.full = false
            scope.subtrees = [entry.path]
            subtree = try journal.entries(in: scope)
        }
        let evicted = try journal.evicted()
        // (what is under it by the path it waits for when its record comes in this fetch; looked
        // up by the end of the pull otherwise: one the moving device did not know of keeps its
        // path outside, and is applied there again)
        try holdBack(Dictionary(subtree.map { ($0.id, $0.id == entry.id ? item.path : "") }, uniquingKeysWith: { first, _ in first }))
        try journal.forget(ids: subtree.map(\.id))
        logger.notice("an item moved elsewhere into a folder kept back here (skip-backup) leaves the synced folder; its records wait",
                      metadata: ["ubiquity.path": "\(entry.path)", "ubiquity.to": "\(item.path)"])
        let stubs = subtree.filter { evicted.contains($0.id) }.map(\.path)
        if entry.stat.kind != .folder, !stubs.isEmpty {
            try removeStubsDurably(at: stubs)
            return
        }
        guard Self.isTaken(absolute(entry.path)) else { return }
        let destination = Self.isTaken(absolute(item.path)) ? conflictName(item.path, device: deviceName) : item.path
        try await moveLocal(from: entry.path, to: destination, updateJournal: false)
        try removeStubsDurably(at: stubs.map { destination + String($0.dropFirst(entry.path.count)) })
    }

    /// The IDs among `missing` (the local pass's vanished entries) not to delete because they are
    /// inside a folder marked skip-backup in this pass (`keptBack`): a folder on the way to a
    /// record held back under it waits with that record (held back, its path looked up at the
    /// next pull), as the marked folder's own record does (seed 1841); deleted, the record
    /// waiting here was left under no folder on the server (sync simulator seed 6206: a folder
    /// inside `docs`, marked here while another device's file in it was held back). Only in a
    /// pass whose fetch succeeded (`pulled`): kept in every pass that did not, the deletes
    /// waited for good behind a remote change that failed at each pass because of them (seed
    /// 5, a conflict version of a file deleted under the folder). Such a folder moved out of the
    /// marked one (`moves`, entry ID → new path) stays too: its move is dropped, and where it went
    /// is a new folder (moved, its record left the record waiting in it under no folder on the
    /// server: seed 6618, a folder moved out of `docs`, then `docs` marked, in one pass).
    ///
    /// In a pass that did not fetch, what waits is not known: such folders are neither deleted
    /// nor held back, as the marked folder's own record is not (``pushLocal(pulled:)``), and the
    /// next pass that fetches judges them (deleted then, a file another device had just put in
    /// one stayed under no folder on the server, for good once that device signed in to another
    /// account: sync simulator seed 11251).
    func waitingUnderKeptBack(_ missing: [JournalEntry], keptBack: [String], pulled: Bool, moves: inout [String: String]) throws -> Set<String> {
        let under = { (entry: JournalEntry) in keptBack.contains { entry.path.hasPrefix($0 + "/") } }
        guard !keptBack.isEmpty, missing.contains(where: under) else { return [] }
        guard pulled else {
            let unknown = missing.filter { $0.stat.kind == .folder && under($0) }
            for entry in unknown { moves[entry.id] = nil }
            if !unknown.isEmpty { wakeLater() }
            return Set(unknown.map(\.id))
        }
        let held = Array(try heldBack().values)
        let waiting = missing.filter { entry in
            entry.stat.kind == .folder && under(entry) && held.contains { $0.hasPrefix(entry.path + "/") }
        }
        guard !waiting.isEmpty else { return [] }
        try holdBack(Dictionary(waiting.map { ($0.id, "") }, uniquingKeysWith: { first, _ in first }))
        try journal.forget(ids: waiting.map(\.id))
        for entry in waiting { moves[entry.id] = nil }
        return Set(waiting.map(\.id))
    }
}
