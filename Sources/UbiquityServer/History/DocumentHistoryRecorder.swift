// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// Keeps the synced folder's history on the server, in the transaction of every change to a
/// private database's documents zone: each upload of a file whose content changed becomes a
/// version (``StoredItemVersion``; the record's earlier versions are then thinned by
/// ``VersionThinning``), and each deleted `UbiquityItem` record goes to Recently Deleted
/// (``StoredTrashedItem``) with the fields it had. With a quota on private databases, the oldest
/// former versions are dropped while the history holds more than the quota leaves free.
///
/// A ``RecordChangeObserver``: what it writes commits or rolls back with the change itself, so
/// no upload is acknowledged whose version was not kept.
package struct DocumentHistoryRecorder: RecordChangeObserver {
    /// How versions are thinned.
    package let thinning: VersionThinning
    /// The storage quotas (history fits in what the private quota leaves free).
    package let quotas: StorageQuotas
    /// Milliseconds since 1970, now.
    let now: @Sendable () -> Int64

    /// Makes a recorder.
    package init(thinning: VersionThinning = .nextcloud, quotas: StorageQuotas = StorageQuotas(),
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.thinning = thinning
        self.quotas = quotas
        self.now = now
    }

    package func changesWillCommit(_ changes: [StoreChange], in tx: any RecordStoreTransaction) async throws {
        var uploads: [DatabaseKey: [RecordChange]] = [:]
        var deletions: [DatabaseKey: [RecordChange]] = [:]
        for case .record(let change) in changes where change.database.scope == .private && change.zoneName == DocumentItemRecord.zoneName {
            switch change.kind {
            case .created, .updated:
                guard change.record.recordType == DocumentItemRecord.recordType,
                      change.record.fields[DocumentItemRecord.Field.kind]?.stringValue == DocumentItemRecord.Kind.file.rawValue else { continue }
                let hash = change.record.fields[DocumentItemRecord.Field.contentHash]?.stringValue
                // a rename or a mode change is not a new version
                if let previous = change.previous, !previous.deleted, previous.fields[DocumentItemRecord.Field.contentHash]?.stringValue == hash { continue }
                uploads[change.database, default: []].append(change)
            case .deleted:
                guard let previous = change.previous, !previous.deleted, previous.recordType == DocumentItemRecord.recordType else { continue }
                deletions[change.database, default: []].append(change)
            }
        }
        guard !uploads.isEmpty || !deletions.isEmpty else { return }
        let history = try tx.historyStore()
        let now = self.now()
        for key in Set(uploads.keys).union(deletions.keys) {
            guard let database = try await tx.database(key) else { continue }
            if let changes = uploads[key] {
                try await keepVersions(changes, database: database.id, history: history, now: now)
            }
            if let changes = deletions[key] {
                try await history.addTrashedItems(changes.compactMap { Self.trashedItem($0, database: database.id, now: now) })
            }
            if let limit = quotas.limit(for: key) {
                try await fitInQuota(limit, database: database.id, tx: tx, history: history)
            }
        }
    }

    package func changesDidCommit(_ changes: [StoreChange]) async {}

    /// Stores the uploads as versions (unless the newest stored version has the same content:
    /// a record restored from Recently Deleted) and thins each document's versions.
    private func keepVersions(_ changes: [RecordChange], database: Int64, history: any HistoryStoreTransaction, now: Int64) async throws {
        let existing = Dictionary(grouping: try await history.itemVersionStamps(database: database, recordNames: changes.map(\.record.recordName)),
                                  by: \.recordName)
        var added: [StoredItemVersion] = []
        var dropped: [Int64] = []
        for change in changes {
            let record = change.record
            let fields = record.fields
            let stored = existing[record.recordName] ?? []
            let hash = fields[DocumentItemRecord.Field.contentHash]?.stringValue ?? ""
            if let newest = stored.first, newest.current, newest.contentHash == hash { continue }
            let savedAt = record.modified.timestamp > 0 ? record.modified.timestamp : now
            added.append(StoredItemVersion(
                database: database, recordName: record.recordName, path: fields[DocumentItemRecord.Field.path]?.stringValue ?? "",
                savedAt: savedAt, savedBy: record.modified.deviceID ?? change.changedBy,
                size: fields[DocumentItemRecord.Field.size]?.int64Value ?? 0, contentHash: hash,
                assetChecksum: fields[DocumentItemRecord.Field.content]?.assetValue?.fileChecksum, fieldsJSON: record.fieldsJSON))
            guard !stored.isEmpty else { continue }
            // the new version (index 0) is always kept: it is the newest
            let times = [savedAt] + stored.map(\.savedAt)
            dropped += thinning.dropped(savedAt: times, now: now).map { stored[$0 - 1].id }
        }
        try await history.addItemVersions(added)
        try await history.deleteItemVersions(ids: dropped)
    }

    /// A deleted record's entry in Recently Deleted.
    static func trashedItem(_ change: RecordChange, database: Int64, now: Int64) -> StoredTrashedItem? {
        guard let previous = change.previous else { return nil }
        let fields = previous.fields
        let deletedAt = change.record.modified.timestamp > 0 ? change.record.modified.timestamp : now
        return StoredTrashedItem(
            database: database, recordName: previous.recordName, path: fields[DocumentItemRecord.Field.path]?.stringValue ?? "",
            kind: fields[DocumentItemRecord.Field.kind]?.stringValue ?? DocumentItemRecord.Kind.file.rawValue, deletedAt: deletedAt,
            deletedBy: change.record.modified.deviceID ?? change.changedBy, size: fields[DocumentItemRecord.Field.size]?.int64Value ?? 0,
            assetChecksum: fields[DocumentItemRecord.Field.content]?.assetValue?.fileChecksum, fieldsJSON: previous.fieldsJSON)
    }

    /// Drops the oldest former versions while the database's live usage plus its history is
    /// over `limit` (Recently Deleted is kept: it expires by age).
    private func fitInQuota(_ limit: Int64, database: Int64, tx: any RecordStoreTransaction, history: any HistoryStoreTransaction) async throws {
        let live = try await tx.databaseUsage(database: database).total
        var over = live + (try await history.historyBytes(database: database)) - limit
        while over > 0 {
            let oldest = try await history.oldestFormerVersions(database: database, limit: 100)
            guard !oldest.isEmpty else { return }
            var drop: [Int64] = []
            for version in oldest where over > 0 {
                drop.append(version.id)
                over -= version.size
            }
            try await history.deleteItemVersions(ids: drop)
        }
    }
}
