// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Fetches records by ID (`CKFetchRecordsOperation`): one `records/lookup` per zone and per
/// 200 records.
public final class FetchRecordsOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// The records to fetch.
    @OperationLocked public var recordIDs: [Record.ID]? = nil
    /// The fields to fetch; nil for all, `[]` for none (system fields only).
    @OperationLocked public var desiredKeys: [Record.FieldKey]? = nil
    /// Called for every record: the record, or the error (``CloudKitError/Code/unknownItem``
    /// when it does not exist).
    @OperationLocked public var perRecordResultBlock: (@Sendable (Record.ID, Result<Record, any Error>) -> Void)? = nil
    /// Called once at the end: success, ``CloudKitError/Code/partialFailure``, or the error
    /// that stopped the operation.
    @OperationLocked public var fetchRecordsResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    /// An empty operation.
    public override init() { super.init() }

    /// An operation that fetches `recordIDs`.
    public convenience init(recordIDs: [Record.ID]) {
        self.init()
        self.recordIDs = recordIDs
    }

    override func report(_ result: Result<Void, CloudKitError>) {
        fetchRecordsResultBlock?(result.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let recordBlock = perRecordResultBlock, resultBlock = fetchRecordsResultBlock
        let ids = recordIDs ?? [], keys = desiredKeys
        try await finishing({
            var failures: [CloudKitError.ItemID: CloudKitError] = [:]
            try await database.lookupRecords(ids, desiredKeys: keys) { id, result in
                if case .failure(let error) = result { failures[.record(id)] = error }
                recordBlock?(id, result.mapError { $0 })
            }
            return ((), failures)
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}
