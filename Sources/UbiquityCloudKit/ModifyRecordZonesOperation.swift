// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Creates and deletes record zones (`CKModifyRecordZonesOperation`), with `zones/modify`.
/// Deleting a zone deletes its records for good.
public final class ModifyRecordZonesOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// The zones to create (saving an existing zone is harmless).
    @OperationLocked public var recordZonesToSave: [RecordZone]? = nil
    /// The zones to delete.
    @OperationLocked public var recordZoneIDsToDelete: [RecordZone.ID]? = nil
    /// Called for every zone saved or not saved.
    @OperationLocked public var perRecordZoneSaveBlock: (@Sendable (RecordZone.ID, Result<RecordZone, any Error>) -> Void)? = nil
    /// Called for every zone deleted or not deleted.
    @OperationLocked public var perRecordZoneDeleteBlock: (@Sendable (RecordZone.ID, Result<Void, any Error>) -> Void)? = nil
    /// Called once at the end: success, ``CloudKitError/Code/partialFailure`` keyed by zone,
    /// or the error that stopped the operation.
    @OperationLocked public var modifyRecordZonesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    /// An empty operation.
    public override init() { super.init() }

    /// An operation that saves `recordZonesToSave` and deletes `recordZoneIDsToDelete`.
    public convenience init(recordZonesToSave: [RecordZone]?, recordZoneIDsToDelete: [RecordZone.ID]?) {
        self.init()
        self.recordZonesToSave = recordZonesToSave
        self.recordZoneIDsToDelete = recordZoneIDsToDelete
    }

    override func report(_ result: Result<Void, CloudKitError>) {
        modifyRecordZonesResultBlock?(result.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let saveBlock = perRecordZoneSaveBlock, deleteBlock = perRecordZoneDeleteBlock, resultBlock = modifyRecordZonesResultBlock
        let saves = recordZonesToSave ?? [], deletes = recordZoneIDsToDelete ?? []
        try await finishing({
            var failures: [CloudKitError.ItemID: CloudKitError] = [:]
            try await database.modifyZones(saving: saves, deleting: deletes, onSave: { id, result in
                if case .failure(let error) = result { failures[.zone(id)] = error }
                saveBlock?(id, result.mapError { $0 })
            }, onDelete: { id, result in
                if case .failure(let error) = result { failures[.zone(id)] = error }
                deleteBlock?(id, result.mapError { $0 })
            })
            return ((), failures)
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}

/// Fetches record zones by ID, or every zone (`CKFetchRecordZonesOperation`).
public final class FetchRecordZonesOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// The zones to fetch; nil fetches every zone.
    @OperationLocked public var recordZoneIDs: [RecordZone.ID]? = nil
    /// Called for every zone: the zone or its error (``CloudKitError/Code/zoneNotFound``).
    @OperationLocked public var perRecordZoneResultBlock: (@Sendable (RecordZone.ID, Result<RecordZone, any Error>) -> Void)? = nil
    /// Called once at the end.
    @OperationLocked public var fetchRecordZonesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    /// An operation that fetches every zone.
    public override init() { super.init() }

    /// An operation that fetches `recordZoneIDs`.
    public convenience init(recordZoneIDs: [RecordZone.ID]) {
        self.init()
        self.recordZoneIDs = recordZoneIDs
    }

    /// An operation that fetches every zone (`fetchAllRecordZonesOperation()`).
    public static func fetchAllRecordZonesOperation() -> FetchRecordZonesOperation { FetchRecordZonesOperation() }

    override func report(_ result: Result<Void, CloudKitError>) {
        fetchRecordZonesResultBlock?(result.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let zoneBlock = perRecordZoneResultBlock, resultBlock = fetchRecordZonesResultBlock, ids = recordZoneIDs
        try await finishing({
            var failures: [CloudKitError.ItemID: CloudKitError] = [:]
            if let ids {
                try await database.lookupZones(ids) { id, result in
                    if case .failure(let error) = result { failures[.zone(id)] = error }
                    zoneBlock?(id, result.mapError { $0 })
                }
            } else {
                for zone in try await database.listZones() { zoneBlock?(zone.zoneID, .success(zone)) }
            }
            return ((), failures)
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}
