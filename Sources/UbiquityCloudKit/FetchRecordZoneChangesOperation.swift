// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Fetches the records changed and deleted in zones since their change tokens
/// (`CKFetchRecordZoneChangesOperation`), with `changes/zone`. With ``fetchAllChanges`` (the
/// default) it keeps fetching while the server says more is coming, reporting the
/// intermediate tokens with ``recordZoneChangeTokensUpdatedBlock``; otherwise it stops after
/// one page per zone and the zone's result says whether more is coming.
public final class FetchRecordZoneChangesOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// Per-zone settings (`CKFetchRecordZoneChangesOperation.ZoneConfiguration`).
    public struct ZoneConfiguration: Sendable, Hashable {
        /// The token of the last fetch; nil fetches everything.
        public var previousServerChangeToken: ServerChangeToken?
        /// The most changes per page; 0 for the server's default.
        public var resultsLimit: Int
        /// The fields to fetch; nil for all.
        public var desiredKeys: [Record.FieldKey]?

        /// Makes a configuration.
        public init(previousServerChangeToken: ServerChangeToken? = nil, resultsLimit: Int = 0, desiredKeys: [Record.FieldKey]? = nil) {
            self.previousServerChangeToken = previousServerChangeToken
            self.resultsLimit = resultsLimit
            self.desiredKeys = desiredKeys
        }
    }

    /// A zone's final outcome: its token, and whether more changes are waiting.
    public typealias ZoneResult = (serverChangeToken: ServerChangeToken, clientChangeTokenData: Data?, moreComing: Bool)

    /// The zones to fetch.
    @OperationLocked public var recordZoneIDs: [RecordZone.ID]? = nil
    /// The zones' tokens and settings.
    @OperationLocked public var configurationsByRecordZoneID: [RecordZone.ID: ZoneConfiguration]? = nil
    /// Keep fetching while the server has more (default true).
    @OperationLocked public var fetchAllChanges: Bool = true
    /// Called for every record changed (or that could not be read).
    @OperationLocked public var recordWasChangedBlock: (@Sendable (Record.ID, Result<Record, any Error>) -> Void)? = nil
    /// Called for every record deleted, with its type when the server says it ("" otherwise).
    @OperationLocked public var recordWithIDWasDeletedBlock: (@Sendable (Record.ID, Record.RecordType) -> Void)? = nil
    /// Called with a zone's intermediate token when more changes follow (keep it to resume).
    @OperationLocked public var recordZoneChangeTokensUpdatedBlock: (@Sendable (RecordZone.ID, ServerChangeToken?, Data?) -> Void)? = nil
    /// Called once per zone at its end: the final token and whether more is coming, or the
    /// zone's error (``CloudKitError/Code/changeTokenExpired``: fetch again with no token).
    @OperationLocked public var recordZoneFetchResultBlock: (@Sendable (RecordZone.ID, Result<ZoneResult, any Error>) -> Void)? = nil
    /// Called once at the end: success, ``CloudKitError/Code/partialFailure`` keyed by zone,
    /// or the error that stopped the operation.
    @OperationLocked public var fetchRecordZoneChangesResultBlock: (@Sendable (Result<Void, any Error>) -> Void)? = nil

    /// An empty operation.
    public override init() { super.init() }

    /// An operation for `recordZoneIDs` with their configurations.
    public convenience init(recordZoneIDs: [RecordZone.ID], configurationsByRecordZoneID: [RecordZone.ID: ZoneConfiguration]? = nil) {
        self.init()
        self.recordZoneIDs = recordZoneIDs
        self.configurationsByRecordZoneID = configurationsByRecordZoneID
    }

    override func report(_ result: Result<Void, CloudKitError>) {
        fetchRecordZoneChangesResultBlock?(result.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let changedBlock = recordWasChangedBlock, deletedBlock = recordWithIDWasDeletedBlock
        let tokensBlock = recordZoneChangeTokensUpdatedBlock, zoneBlock = recordZoneFetchResultBlock
        let resultBlock = fetchRecordZoneChangesResultBlock, fetchAll = fetchAllChanges
        let configurations = configurationsByRecordZoneID ?? [:]
        var seen: Set<RecordZone.ID> = []
        let zones = (recordZoneIDs ?? Array(configurations.keys)).filter { seen.insert($0).inserted }
        try await finishing({
            var failures: [CloudKitError.ItemID: CloudKitError] = [:]
            var pending = zones.map { ($0, configurations[$0] ?? ZoneConfiguration()) }
            while !pending.isEmpty {
                if shouldStop {
                    for (zone, _) in pending { zoneBlock?(zone, .failure(CloudKitError.cancelled)) }
                    throw CloudKitError.cancelled
                }
                let pages: [Result<CloudDatabase.ZoneChangesPage, CloudKitError>]
                do {
                    pages = try await database.fetchZoneChanges(pending)
                } catch {
                    let wrapped = CloudKitError.wrap(error)
                    for (zone, _) in pending { zoneBlock?(zone, .failure(wrapped)) }
                    throw wrapped
                }
                var next: [(RecordZone.ID, ZoneConfiguration)] = []
                for ((zone, configuration), result) in zip(pending, pages) {
                    switch result {
                    case .failure(let error):
                        failures[.zone(zone)] = error
                        zoneBlock?(zone, .failure(error))
                    case .success(let page):
                        for (id, record) in page.changed { changedBlock?(id, record.mapError { $0 }) }
                        for (id, type) in page.deleted { deletedBlock?(id, type ?? "") }
                        if page.moreComing, fetchAll {
                            tokensBlock?(zone, page.token, nil)
                            var following = configuration
                            following.previousServerChangeToken = page.token
                            next.append((zone, following))
                        } else {
                            zoneBlock?(zone, .success((serverChangeToken: page.token, clientChangeTokenData: nil, moreComing: page.moreComing)))
                        }
                    }
                }
                pending = next
            }
            return ((), failures)
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}
