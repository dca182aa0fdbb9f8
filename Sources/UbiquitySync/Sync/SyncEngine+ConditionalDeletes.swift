// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// Deletes that never take a version this device has not seen.
///
/// A local delete (or a skip-backup mark on a synced item) deletes the item's record only while
/// the server's record is still the version this device synced: the delete carries the
/// journal's change tag (CloudKit Web Services' `delete`, not `forceDelete`). When another
/// device changed the item meanwhile (this device was offline, its fetch failed, or the change
/// came between its fetch and its delete), the server refuses with the newer record, and the
/// change wins over the delete, as in Syncthing and Dropbox: the item comes back here. Found by
/// the sync simulator (Tests/UbiquitySyncTests/Simulation): an offline device's delete of a
/// file another device had just edited deleted the edit everywhere.
extension SyncEngine {
    /// Deletes the records of `entries`: those the server confirmed only while unchanged since
    /// (their change tags), the others (this device's own uploads never confirmed, judged by
    /// ``ownUploads(_:)``) whatever their tag. Each record's result; throws only when a request
    /// failed as a whole.
    func deleteRecords(_ entries: [JournalEntry]) async throws -> [Record.ID: Result<Void, any Error>] {
        var tags: [Record.ID: String] = [:]
        var forced: [Record.ID] = []
        for entry in entries {
            let id = Record.ID(recordName: entry.id, zoneID: SyncRecord.zoneID)
            if let tag = entry.changeTag { tags[id] = tag } else { forced.append(id) }
        }
        var results: [Record.ID: Result<Void, any Error>] = [:]
        if !tags.isEmpty { results = try await database.deleteRecords(ifUnchanged: tags) }
        if !forced.isEmpty {
            let more = try await database.modifyRecords(saving: [], deleting: forced, savePolicy: .ifServerRecordUnchanged, atomically: false)
            results.merge(more.deleteResults) { first, _ in first }
        }
        return results
    }

    /// Deletes an item's record (a local delete, or the item marked skip-backup), then forgets
    /// it; a record changed elsewhere since is kept and comes back (``keepChangedElsewhere(_:_:)``).
    func deleteRemote(_ entry: JournalEntry) async throws {
        guard let tag = entry.changeTag else { return try journal.remove(id: entry.id) }
        if let newer = try await deleteRecord(entry.id, ifTagIs: tag) {
            try await keepChangedElsewhere(entry, newer)
        } else {
            try journal.remove(id: entry.id)
        }
    }

    /// Deletes the record `id` while its change tag is still `tag`: nil when it is gone (or was
    /// already), else the server's newer record, which is kept. Throws the other errors.
    func deleteRecord(_ id: String, ifTagIs tag: String) async throws -> Record? {
        let recordID = Record.ID(recordName: id, zoneID: SyncRecord.zoneID)
        switch try await database.deleteRecords(ifUnchanged: [recordID: tag])[recordID] {
        case .success?:
            return nil
        case .failure(let error as CloudKitError)? where error.code == .unknownItem:
            return nil
        case .failure(let error as CloudKitError)? where error.code == .serverRecordChanged && error.serverRecord != nil:
            return error.serverRecord
        case .failure(let error)?:
            throw error
        case nil:
            throw CloudKitError(.internalError, "the server did not answer for record \(id)")
        }
    }

    /// A delete of `entry` the server refused because the record changed since: when its
    /// content is still the one this device synced (only its name or tag moved on: the local
    /// delete wins over a rename, as in ``SyncDecision``), the delete is sent again against the
    /// new tag; otherwise the journal forgets the item as this device knew it, and the server's
    /// record, read again with its assets' download URLs, is applied as an item new here
    /// (downloaded to its path; a skip-backup file in the way stays as it is), held back until
    /// journaled.
    func keepChangedElsewhere(_ entry: JournalEntry, _ record: Record) async throws {
        guard let item = SyncRecord.item(from: record) else { return try journal.remove(id: entry.id) }
        // (or the record holds this device's own update whose answer was lost: deleted here since)
        if item.kind == entry.stat.kind, let tag = item.changeTag, tag != entry.changeTag, try item.contentHash == entry.contentHash
            || SyncDecision.ownUnconfirmedUpload(entry, remote: item, sent: journal.sentHashes(id: entry.id)) != nil {
            var seen = entry
            seen.changeTag = tag
            return try await deleteRemote(seen)
        }
        logger.notice("deleted here but changed elsewhere since: the other version is kept and comes back",
                      metadata: ["ubiquity.path": "\(entry.path)"])
        // held back until it is journaled again: this pass's pull may have moved the change
        // token past the record, and a failure below would leave it nowhere here for good (sim
        // seed 1715); the next pull looks it up (SyncEngine+HeldBack.swift)
        try holdBack(entry.id, path: "")
        try journal.remove(id: entry.id)
        // the refusal carries the record as stored, without its assets' download URLs: read again
        let fresh: Record
        do { fresh = try await database.record(for: record.recordID) } catch let error as CloudKitError where error.code == .unknownItem { return }
        guard let freshItem = SyncRecord.item(from: fresh) else { return }
        try await applyRemote(freshItem, fresh)
        if try journal.entry(id: entry.id) != nil { try releaseHeldBack(entry.id) }
    }
}
