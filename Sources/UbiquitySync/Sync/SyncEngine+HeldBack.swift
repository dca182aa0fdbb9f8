// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit
import UbiquityCore

/// Records held back by a skip-backup item at their name here (`docs/sync.md`, "Skip-backup").
///
/// A record fetched for a path where this device keeps an item marked skip-backup (never
/// synced) does not replace it. The record is not dropped either: its ID is kept in the journal,
/// and each pull, once the fetched changes are applied (folders renamed there are in place),
/// looks the held-back records up again, applying those whose name is free
/// now (the skip-backup item deleted, moved or included). Without it the change token moved past
/// the record and the device never had it (found by the sync simulator, seed 56: a folder
/// deleted with its skip-backup file, the other device's file of that name never came).
extension SyncEngine {
    static let heldBackKey = "held-back-records"

    /// The IDs of the records held back.
    func heldBack() throws -> Set<String> {
        Set((try journal.value(Self.heldBackKey) ?? "").split(separator: "\n").map(String.init))
    }

    func setHeldBack(_ ids: Set<String>) throws {
        try journal.setValue(ids.isEmpty ? nil : ids.sorted().joined(separator: "\n"), Self.heldBackKey)
    }

    /// Keeps record `id` to apply once its name is free here.
    func holdBack(_ id: String, path: String) throws {
        var ids = try heldBack()
        guard ids.insert(id).inserted else { return }
        try setHeldBack(ids)
        logger.info("a record for a name kept back here (skip-backup) waits until the name is free", metadata: ["ubiquity.path": "\(path)"])
    }

    /// Applies the held-back records whose name is free now; forgets those deleted on the
    /// server or journaled since (a later fetch brought them).
    func applyHeldBack() async throws {
        let ids = try heldBack()
        guard !ids.isEmpty else { return }
        let results = try await database.records(for: ids.sorted().map { Record.ID(recordName: $0, zoneID: SyncRecord.zoneID) })
        var waiting = Set<String>()
        for id in ids {
            guard try journal.entry(id: id) == nil, case .success(let record)? = results[Record.ID(recordName: id, zoneID: SyncRecord.zoneID)],
                  let item = SyncRecord.item(from: record) else { continue }
            let root = folder
            let blocked = try await BlockingWork.run { SyncFiles.item(path: item.path, absolute: root + "/" + item.path)?.excluded == true }
            if blocked {
                waiting.insert(id)
            } else {
                try await applyRemote(item, record)
            }
        }
        try setHeldBack(waiting)
    }
}
