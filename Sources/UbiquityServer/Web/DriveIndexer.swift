// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// Keeps the Drive's index (``DriveIndexRow``) true to the documents zones, in the transaction of
/// every change: a saved `UbiquityItem` record puts its row, a deleted one removes it, a deleted
/// documents zone removes its database's rows. A ``RecordChangeObserver``.
package struct DriveIndexer: RecordChangeObserver {
    /// Makes the indexer.
    package init() {}

    package func changesWillCommit(_ changes: [StoreChange], in tx: any RecordStoreTransaction) async throws {
        var touched = false
        for change in changes {
            switch change {
            case .record(let record) where record.database.scope == .private && record.zoneName == DocumentItemRecord.zoneName:
                touched = true
            case .zone(let zone) where zone.database.scope == .private && zone.zone.name == DocumentItemRecord.zoneName && zone.deleted:
                touched = true
            default:
                continue
            }
            if touched { break }
        }
        guard touched else { return }
        let index = try tx.driveIndex()
        var databases: [DatabaseKey: Int64] = [:]
        func database(_ key: DatabaseKey) async throws -> Int64? {
            if let id = databases[key] { return id }
            let id = try await tx.database(key)?.id
            databases[key] = id
            return id
        }
        var put: [DriveIndexRow] = []
        var removed: [Int64: [String]] = [:]
        for change in changes {
            switch change {
            case .record(let record) where record.database.scope == .private && record.zoneName == DocumentItemRecord.zoneName:
                guard let id = try await database(record.database) else { continue }
                if record.kind != .deleted, let row = Self.row(record.record, database: id) {
                    put.append(row)
                } else {
                    removed[id, default: []].append(record.record.recordName)
                }
            case .zone(let zone) where zone.database.scope == .private && zone.zone.name == DocumentItemRecord.zoneName && zone.deleted:
                if let id = try await database(zone.database) { try await index.deleteDriveRows(database: id) }
            default:
                continue
            }
        }
        for (id, names) in removed { try await index.deleteDriveRows(database: id, recordNames: names) }
        try await index.putDriveRows(put)
    }

    package func changesDidCommit(_ changes: [StoreChange]) async {}

    /// The row of a live item record (nil for other records).
    static func row(_ record: StoredRecord, database: Int64) -> DriveIndexRow? {
        guard let item = DriveItem(record) else { return nil }
        return DriveIndexRow(database: database, recordName: item.recordName, parent: item.parent, name: item.name, kind: item.kind.rawValue,
                             size: item.size, modified: item.modified)
    }
}
