// SPDX-License-Identifier: Apache-2.0
import Foundation

extension CloudDatabase {
    /// Creates `zone` (saving an existing zone is harmless) and returns it as the server has it.
    public func save(_ zone: RecordZone) async throws -> RecordZone {
        let (saved, _) = try await modifyRecordZones(saving: [zone], deleting: [])
        guard let result = saved[zone.zoneID] else { throw CloudKitError(.internalError, "the server did not answer for zone \(zone.zoneID)") }
        return try result.get()
    }

    /// Deletes a zone and all its records, for good.
    @discardableResult
    public func deleteRecordZone(withID zoneID: RecordZone.ID) async throws -> RecordZone.ID {
        let (_, deleted) = try await modifyRecordZones(saving: [], deleting: [zoneID])
        guard let result = deleted[zoneID] else { throw CloudKitError(.internalError, "the server did not answer for zone \(zoneID)") }
        try result.get()
        return zoneID
    }

    /// Every zone of the database.
    public func allRecordZones() async throws -> [RecordZone] {
        try await listZones()
    }

    /// One zone; throws ``CloudKitError/Code/zoneNotFound`` when it does not exist.
    public func recordZone(for zoneID: RecordZone.ID) async throws -> RecordZone {
        guard let result = try await recordZones(for: [zoneID])[zoneID] else {
            throw CloudKitError(.internalError, "the server did not answer for zone \(zoneID)")
        }
        return try result.get()
    }

    /// Several zones: each ID's zone or error.
    public func recordZones(for zoneIDs: [RecordZone.ID]) async throws -> [RecordZone.ID: Result<RecordZone, any Error>] {
        var results: [RecordZone.ID: Result<RecordZone, any Error>] = [:]
        try await lookupZones(zoneIDs) { id, result in results[id] = result.mapError { $0 } }
        return results
    }

    /// Creates and deletes zones: each item's outcome. Throws only when the whole operation failed.
    public func modifyRecordZones(saving recordZonesToSave: [RecordZone], deleting recordZoneIDsToDelete: [RecordZone.ID]) async throws
        -> (saveResults: [RecordZone.ID: Result<RecordZone, any Error>], deleteResults: [RecordZone.ID: Result<Void, any Error>]) {
        var saves: [RecordZone.ID: Result<RecordZone, any Error>] = [:]
        var deletes: [RecordZone.ID: Result<Void, any Error>] = [:]
        try await modifyZones(saving: recordZonesToSave, deleting: recordZoneIDsToDelete,
                              onSave: { id, result in saves[id] = result.mapError { $0 } },
                              onDelete: { id, result in deletes[id] = result.mapError { $0 } })
        return (saves, deletes)
    }
}
