// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Fetches which zones changed or were deleted since a database change token
/// (`CKFetchDatabaseChangesOperation`), with `changes/database` (private and shared databases).
public final class FetchDatabaseChangesOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// The token of the last fetch; nil reports every zone.
    @OperationLocked public var previousServerChangeToken: ServerChangeToken? = nil
    /// The most zones per page; 0 for the server's default.
    @OperationLocked public var resultsLimit: Int = 0
    /// Keep fetching while the server has more (default true).
    @OperationLocked public var fetchAllChanges: Bool = true
    /// Called for every zone with changes.
    @OperationLocked public var recordZoneWithIDChangedBlock: (@Sendable (RecordZone.ID) -> Void)? = nil
    /// Called for every zone deleted.
    @OperationLocked public var recordZoneWithIDWasDeletedBlock: (@Sendable (RecordZone.ID) -> Void)? = nil
    /// Called for every zone purged (deleted with its history).
    @OperationLocked public var recordZoneWithIDWasPurgedBlock: (@Sendable (RecordZone.ID) -> Void)? = nil
    /// Called with the intermediate token when more pages follow.
    @OperationLocked public var changeTokenUpdatedBlock: (@Sendable (ServerChangeToken) -> Void)? = nil
    /// Called once at the end: the final token and whether more is coming, or the error
    /// (``CloudKitError/Code/changeTokenExpired``: fetch again with no token).
    @OperationLocked public var fetchDatabaseChangesResultBlock: (@Sendable (Result<(serverChangeToken: ServerChangeToken, moreComing: Bool), any Error>) -> Void)? = nil

    /// An empty operation.
    public override init() { super.init() }

    /// An operation that fetches the changes since `previousServerChangeToken`.
    public convenience init(previousServerChangeToken: ServerChangeToken?) {
        self.init()
        self.previousServerChangeToken = previousServerChangeToken
    }

    override func report(_ result: Result<Void, CloudKitError>) {
        fetchDatabaseChangesResultBlock?(result.map { _ in (ServerChangeToken(rawValue: ""), false) }.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let changedBlock = recordZoneWithIDChangedBlock, deletedBlock = recordZoneWithIDWasDeletedBlock
        let purgedBlock = recordZoneWithIDWasPurgedBlock, tokenBlock = changeTokenUpdatedBlock
        let resultBlock = fetchDatabaseChangesResultBlock, fetchAll = fetchAllChanges, limit = resultsLimit
        var token = previousServerChangeToken
        try await finishing({ () async throws -> ((serverChangeToken: ServerChangeToken, moreComing: Bool), [CloudKitError.ItemID: CloudKitError]) in
            while true {
                if shouldStop { throw CloudKitError.cancelled }
                let page = try await database.fetchDatabaseChanges(since: token, resultsLimit: limit)
                page.changed.forEach { changedBlock?($0) }
                page.deleted.forEach { deletedBlock?($0) }
                page.purged.forEach { purgedBlock?($0) }
                let previous = token
                token = page.token
                // A server that says "more" without moving the token would loop forever.
                if page.moreComing, fetchAll, page.token != previous {
                    tokenBlock?(page.token)
                    continue
                }
                return ((serverChangeToken: page.token, moreComing: page.moreComing), [:])
            }
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}
