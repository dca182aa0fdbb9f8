// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Saves and deletes records (`CKModifyRecordsOperation`).
///
/// Each save becomes one CKWS operation by ``savePolicy``: ``RecordSavePolicy/ifServerRecordUnchanged``
/// sends `update` with the changed keys and the record's change tag (or `create` with every key
/// for a record never saved), so a record changed on the server since it was fetched fails with
/// ``CloudKitError/Code/serverRecordChanged`` carrying the server's record;
/// ``RecordSavePolicy/changedKeys`` sends `forceUpdate` with the changed keys;
/// ``RecordSavePolicy/allKeys`` sends `forceUpdate` with every key. Deletes are `forceDelete`.
///
/// Records are sent per zone, 200 operations per request; a request the server refuses as
/// too large is split in half and retried. ``isAtomic`` asks the server to apply each request
/// all or nothing (custom zones only): a batch split over several requests is atomic per
/// request, not as a whole.
public final class ModifyRecordsOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// How saves treat the server's copy (`CKModifyRecordsOperation.RecordSavePolicy`).
    public enum RecordSavePolicy: Int, Sendable, Hashable, CaseIterable {
        /// Save only if the server's record has the change tag this one was fetched with
        /// (CKWS `update`; `create` for a new record). The default.
        case ifServerRecordUnchanged = 0
        /// Write the changed keys whatever the server has (CKWS `forceUpdate`, changed keys).
        case changedKeys = 1
        /// Write every key whatever the server has (CKWS `forceUpdate`, all keys).
        case allKeys = 2
    }

    /// The records to save.
    @OperationLocked public var recordsToSave: [Record]? = nil
    /// The records to delete.
    @OperationLocked public var recordIDsToDelete: [Record.ID]? = nil
    /// How saves treat the server's copy.
    @OperationLocked public var savePolicy: RecordSavePolicy = .ifServerRecordUnchanged
    /// Whether each request is applied all or nothing (custom zones only). Default true.
    @OperationLocked public var isAtomic: Bool = true
    /// Called as the new assets of a record to save are uploaded, with the fraction of its asset
    /// bytes sent (0 to 1; not called for records without new assets).
    @OperationLocked public var perRecordProgressBlock: (@Sendable (Record.ID, Double) -> Void)? = nil
    /// Called for every record saved or not saved: the server's record, or the error.
    @OperationLocked public var perRecordSaveBlock: (@Sendable (Record.ID, Result<Record, any Error>) -> Void)? = nil
    /// Called for every record deleted or not deleted.
    @OperationLocked public var perRecordDeleteBlock: (@Sendable (Record.ID, Result<Void, any Error>) -> Void)? = nil
    /// Called once at the end: success, ``CloudKitError/Code/partialFailure`` with the items'
    /// errors, or the error that stopped the operation.
    @OperationLocked public var modifyRecordsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    /// An empty operation.
    public override init() { super.init() }

    /// An operation that saves `recordsToSave` and deletes `recordIDsToDelete`.
    public convenience init(recordsToSave: [Record]?, recordIDsToDelete: [Record.ID]?) {
        self.init()
        self.recordsToSave = recordsToSave
        self.recordIDsToDelete = recordIDsToDelete
    }

    override func report(_ result: Result<Void, CloudKitError>) {
        modifyRecordsResultBlock?(result.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let progressBlock = perRecordProgressBlock
        let saveBlock = perRecordSaveBlock, deleteBlock = perRecordDeleteBlock, resultBlock = modifyRecordsResultBlock
        let saves = recordsToSave ?? [], deletes = recordIDsToDelete ?? [], policy = savePolicy, atomic = isAtomic
        try await finishing({
            var failures: [CloudKitError.ItemID: CloudKitError] = [:]
            try await database.modifyRecords(saving: saves, deleting: deletes, policy: policy, atomic: atomic, onProgress: progressBlock, onSave: { id, result in
                if case .failure(let error) = result { failures[.record(id)] = error }
                saveBlock?(id, result.mapError { $0 })
            }, onDelete: { id, result in
                if case .failure(let error) = result { failures[.record(id)] = error }
                deleteBlock?(id, result.mapError { $0 })
            })
            return ((), failures)
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}
