// SPDX-License-Identifier: Apache-2.0
import Foundation

extension CloudDatabase {
    /// Saves `record` (new, or changed since it was fetched) and returns the server's record.
    /// Throws ``CloudKitError/Code/serverRecordChanged`` (with ``CloudKitError/serverRecord``)
    /// when the server's copy changed since, or when a new record's name is taken.
    public func save(_ record: Record) async throws -> Record {
        let (saved, _) = try await modifyRecords(saving: [record], deleting: [], savePolicy: .ifServerRecordUnchanged, atomically: false)
        guard let result = saved[record.recordID] else {
            throw CloudKitError(.internalError, "the server did not answer for record \(record.recordID.recordName)")
        }
        return try result.get()
    }

    /// Fetches one record; throws ``CloudKitError/Code/unknownItem`` when it does not exist.
    public func record(for recordID: Record.ID) async throws -> Record {
        let results = try await records(for: [recordID])
        guard let result = results[recordID] else {
            throw CloudKitError(.internalError, "the server did not answer for record \(recordID.recordName)")
        }
        return try result.get()
    }

    /// Deletes one record and returns its ID.
    @discardableResult
    public func deleteRecord(withID recordID: Record.ID) async throws -> Record.ID {
        let (_, deleted) = try await modifyRecords(saving: [], deleting: [recordID], savePolicy: .ifServerRecordUnchanged, atomically: false)
        guard let result = deleted[recordID] else {
            throw CloudKitError(.internalError, "the server did not answer for record \(recordID.recordName)")
        }
        try result.get()
        return recordID
    }

    /// Fetches records by ID: each ID's record or error. Throws only when the whole fetch
    /// failed.
    public func records(for ids: [Record.ID], desiredKeys: [Record.FieldKey]? = nil) async throws -> [Record.ID: Result<Record, any Error>] {
        var results: [Record.ID: Result<Record, any Error>] = [:]
        try await lookupRecords(ids, desiredKeys: desiredKeys) { id, result in results[id] = result.mapError { $0 } }
        return results
    }

    /// Saves and deletes records (see ``ModifyRecordsOperation`` for the policies and the
    /// batching): each item's outcome. Throws only when the whole operation failed.
    public func modifyRecords(saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID],
                              savePolicy: ModifyRecordsOperation.RecordSavePolicy = .ifServerRecordUnchanged,
                              atomically: Bool = true) async throws
        -> (saveResults: [Record.ID: Result<Record, any Error>], deleteResults: [Record.ID: Result<Void, any Error>]) {
        let results = try await modifyRecordsTrackingChanges(saving: recordsToSave, deleting: recordIDsToDelete,
                                                             savePolicy: savePolicy, atomically: atomically)
        return (results.saveResults, results.deleteResults)
    }

    /// ``modifyRecords(saving:deleting:savePolicy:atomically:)`` that also says where each
    /// `records/modify` request sits in its zone's change history, when the server says (a
    /// Ubiquity server does when the request's own changes are all that happened in between;
    /// CloudKit does not): a caller whose change token was `before` and that keeps the
    /// results may continue from `after` without fetching its own changes back. In the order
    /// the requests were sent. `desiredKeys` limits the fields of the saved records answered
    /// (`[]`: none, only their change tags and metadata; nil: all).
    public func modifyRecordsTrackingChanges(saving recordsToSave: [Record], deleting recordIDsToDelete: [Record.ID],
                                             savePolicy: ModifyRecordsOperation.RecordSavePolicy = .ifServerRecordUnchanged,
                                             atomically: Bool = true, desiredKeys: [Record.FieldKey]? = nil) async throws
        -> (saveResults: [Record.ID: Result<Record, any Error>], deleteResults: [Record.ID: Result<Void, any Error>],
            changeTokens: [ModifyChangeTokens]) {
        var saves: [Record.ID: Result<Record, any Error>] = [:]
        var deletes: [Record.ID: Result<Void, any Error>] = [:]
        var tokens: [ModifyChangeTokens] = []
        try await modifyRecords(saving: recordsToSave, deleting: recordIDsToDelete, policy: savePolicy, atomic: atomically,
                                desiredKeys: desiredKeys, onSave: { id, result in saves[id] = result.mapError { $0 } },
                                onDelete: { id, result in deletes[id] = result.mapError { $0 } },
                                onChangeTokens: { tokens.append($0) })
        return (saves, deletes, tokens)
    }

    /// Deletes each record only while the server's copy still has the change tag given for it
    /// (CloudKit Web Services' `delete` operation, where ``modifyRecords(saving:deleting:savePolicy:atomically:)``
    /// sends `forceDelete`): a record changed since fails with
    /// ``CloudKitError/Code/serverRecordChanged`` and its ``CloudKitError/serverRecord``, and is
    /// kept. Each ID's result; throws only when the whole request failed.
    public func deleteRecords(ifUnchanged changeTags: [Record.ID: String], atomically: Bool = false) async throws
        -> [Record.ID: Result<Void, any Error>] {
        var deletes: [Record.ID: Result<Void, any Error>] = [:]
        let ids = changeTags.keys.sorted { $0.recordName < $1.recordName }
        try await modifyRecords(saving: [], deleting: ids, deleteTags: changeTags, policy: .ifServerRecordUnchanged, atomic: atomically,
                                onSave: { _, _ in }, onDelete: { id, result in deletes[id] = result.mapError { $0 } })
        return deletes
    }

    /// Runs `query` in `zoneID` (every zone when nil): one page of matches, in order, and a
    /// cursor when more match.
    public func records(matching query: Query, inZoneWith zoneID: RecordZone.ID? = nil, desiredKeys: [Record.FieldKey]? = nil,
                        resultsLimit: Int = QueryOperation.maximumResults) async throws
        -> (matchResults: [(Record.ID, Result<Record, any Error>)], queryCursor: QueryOperation.Cursor?) {
        let wire = try query.wire()
        var matches: [(Record.ID, Result<Record, any Error>)] = []
        let marker = try await queryRecords(wire, zone: zoneID, marker: nil, resultsLimit: resultsLimit, desiredKeys: desiredKeys) { id, result in
            matches.append((id, result.mapError { $0 }))
        }
        return (matches, marker.map { QueryOperation.Cursor(continuationMarker: $0, query: wire, zoneID: zoneID) })
    }

    /// The next page of a query.
    public func records(continuingMatchFrom cursor: QueryOperation.Cursor, desiredKeys: [Record.FieldKey]? = nil,
                        resultsLimit: Int = QueryOperation.maximumResults) async throws
        -> (matchResults: [(Record.ID, Result<Record, any Error>)], queryCursor: QueryOperation.Cursor?) {
        let wire = try cursor.query()
        var matches: [(Record.ID, Result<Record, any Error>)] = []
        let marker = try await queryRecords(wire, zone: cursor.zoneID, marker: cursor.continuationMarker, resultsLimit: resultsLimit,
                                            desiredKeys: desiredKeys) { id, result in
            matches.append((id, result.mapError { $0 }))
        }
        return (matches, marker.map { QueryOperation.Cursor(continuationMarker: $0, query: wire, zoneID: cursor.zoneID) })
    }
}

extension CloudDatabase {
    /// One change to a zone's records (`CKDatabase.RecordZoneChange`).
    public enum RecordZoneChange {
        /// A record created or changed.
        public struct Modification: Sendable, Hashable {
            /// The record as it is now.
            public let record: Record
            /// Its ID.
            public var recordID: Record.ID { record.recordID }
        }

        /// A record deleted.
        public struct Deletion: Sendable, Hashable {
            /// Its ID.
            public let recordID: Record.ID
            /// Its type, when the server said (nil otherwise).
            public let recordType: Record.RecordType?
        }
    }

    /// One change to the database's zones (`CKDatabase.DatabaseChange`).
    public enum DatabaseChange {
        /// A zone whose records changed.
        public struct Modification: Sendable, Hashable {
            /// The zone.
            public let zoneID: RecordZone.ID
        }

        /// A zone deleted.
        public struct Deletion: Sendable, Hashable {
            /// The zone.
            public let zoneID: RecordZone.ID
            /// Whether it was purged (deleted with its history) rather than just deleted.
            public let purged: Bool
        }
    }

    /// One page of changes to `zoneID`'s records since `token` (everything when nil): the
    /// records changed, the records deleted, the token to pass next time, and whether more
    /// changes wait. Throws ``CloudKitError/Code/changeTokenExpired`` when the token is too old.
    public func recordZoneChanges(inZoneWith zoneID: RecordZone.ID, since token: ServerChangeToken?,
                                  desiredKeys: [Record.FieldKey]? = nil, resultsLimit: Int? = nil) async throws
        -> (modificationResultsByID: [Record.ID: Result<RecordZoneChange.Modification, any Error>],
            deletions: [RecordZoneChange.Deletion], changeToken: ServerChangeToken, moreComing: Bool) {
        let configuration = FetchRecordZoneChangesOperation.ZoneConfiguration(previousServerChangeToken: token, resultsLimit: resultsLimit ?? 0,
                                                                              desiredKeys: desiredKeys)
        let pages = try await fetchZoneChanges([(zoneID, configuration)])
        guard let page = try pages.first?.get() else {
            throw CloudKitError(.internalError, "the server did not answer for zone \(zoneID)")
        }
        var modifications: [Record.ID: Result<RecordZoneChange.Modification, any Error>] = [:]
        for (id, result) in page.changed {
            modifications[id] = result.map { RecordZoneChange.Modification(record: $0) }.mapError { $0 }
        }
        let deletions = page.deleted.map { RecordZoneChange.Deletion(recordID: $0.0, recordType: $0.1) }
        return (modifications, deletions, page.token, page.moreComing)
    }

    /// One page of changes to the database's zones since `token` (every zone when nil).
    public func databaseChanges(since token: ServerChangeToken?, resultsLimit: Int? = nil) async throws
        -> (modifications: [DatabaseChange.Modification], deletions: [DatabaseChange.Deletion], changeToken: ServerChangeToken, moreComing: Bool) {
        let page = try await fetchDatabaseChanges(since: token, resultsLimit: resultsLimit ?? 0)
        let deletions = page.deleted.map { DatabaseChange.Deletion(zoneID: $0, purged: false) }
            + page.purged.map { DatabaseChange.Deletion(zoneID: $0, purged: true) }
        return (page.changed.map(DatabaseChange.Modification.init(zoneID:)), deletions, page.token, page.moreComing)
    }
}

/// Where one `records/modify` request sits in its zone's change history (a Ubiquity server's
/// extension of the answer): the zone's change token just before the request and just after
/// it, with only the request's own saves and deletes between them.
public struct ModifyChangeTokens: Sendable, Hashable {
    /// The zone.
    public let zoneID: RecordZone.ID
    /// The zone's change token just before the request.
    public let before: ServerChangeToken
    /// The zone's change token just after it.
    public let after: ServerChangeToken

    /// Tokens around a request.
    public init(zoneID: RecordZone.ID, before: ServerChangeToken, after: ServerChangeToken) {
        self.zoneID = zoneID
        self.before = before
        self.after = after
    }

    /// The change token to continue from after requests whose tokens are `tokens`, given the
    /// token fetched last (`current`): each request that starts where the token is moves it on;
    /// nil when none does (a change made by someone else in between must be fetched).
    public static func advanced(_ current: ServerChangeToken?, by tokens: [ModifyChangeTokens]) -> ServerChangeToken? {
        chained(current, by: tokens).token
    }

    /// ``advanced(_:by:)`` for requests that overlapped, so the server may have applied them in
    /// another order than they were sent or answered: the steps are chained in any order, and
    /// those that start nowhere on the chain come back (`unchained`), to be tried again when
    /// the answer of a request that ends where they start arrives.
    public static func chained(_ current: ServerChangeToken?, by tokens: [ModifyChangeTokens])
        -> (token: ServerChangeToken?, unchained: [ModifyChangeTokens])
    {
        guard var token = current else { return (nil, tokens) }
        var rest = tokens
        var moved = false
        while let next = rest.firstIndex(where: { $0.before == token }) {
            token = rest.remove(at: next).after
            moved = true
        }
        return (moved ? token : nil, rest)
    }
}
