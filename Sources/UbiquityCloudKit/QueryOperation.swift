// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// Runs a query (`CKQueryOperation`): one `records/query` page. When more records match,
/// the result block gets a ``Cursor``; run a new operation with it for the next page.
public final class QueryOperation: CloudDatabaseOperation, @unchecked Sendable {
    /// Where a query stopped (`CKQueryOperation.Cursor`): the server's continuation marker
    /// with the query and zone it belongs to. `Codable`, so it can be kept.
    public struct Cursor: Sendable, Hashable, Codable {
        /// The server's continuation marker.
        public let continuationMarker: String
        /// The query, as its CKWS JSON.
        let queryJSON: String
        /// The zone searched; nil for every zone.
        public let zoneID: RecordZone.ID?

        init(continuationMarker: String, query: WireQuery, zoneID: RecordZone.ID?) {
            self.continuationMarker = continuationMarker
            queryJSON = String(decoding: query.json.serialized(), as: UTF8.self)
            self.zoneID = zoneID
        }

        func query() throws -> WireQuery {
            do {
                return try WireQuery(json: try JSONValue.parse(Data(queryJSON.utf8)), path: "cursor.query")
            } catch {
                throw CloudKitError(.invalidArguments, "the query cursor is damaged: \(error)")
            }
        }
    }

    /// Let the server decide how many records a page holds (`CKQueryOperation.maximumResults`).
    public static let maximumResults = 0

    /// The query (ignored when ``cursor`` is set).
    @OperationLocked public var query: Query? = nil
    /// Where to continue a previous query.
    @OperationLocked public var cursor: Cursor? = nil
    /// The zone to search; nil searches every zone (`zoneWide`).
    @OperationLocked public var zoneID: RecordZone.ID? = nil
    /// The most records to return in this page (at most 200); ``maximumResults`` for the
    /// server's default.
    @OperationLocked public var resultsLimit: Int = QueryOperation.maximumResults
    /// The fields to fetch; nil for all.
    @OperationLocked public var desiredKeys: [Record.FieldKey]? = nil
    /// Called for every matching record, in the query's order.
    @OperationLocked public var recordMatchedBlock: (@Sendable (Record.ID, Result<Record, any Error>) -> Void)? = nil
    /// Called once at the end with the cursor for the next page (nil when there is none), or
    /// the error.
    @OperationLocked public var queryResultBlock: (@Sendable (Result<Cursor?, any Error>) -> Void)? = nil

    /// An empty operation.
    public override init() { super.init() }

    /// An operation that runs `query`.
    public convenience init(query: Query) {
        self.init()
        self.query = query
    }

    /// An operation that continues from `cursor`.
    public convenience init(cursor: Cursor) {
        self.init()
        self.cursor = cursor
    }

    override func report(_ result: Result<Void, CloudKitError>) {
        queryResultBlock?(result.map { nil }.mapError { $0 })
    }

    override func execute(in database: CloudDatabase) async throws {
        let matchBlock = recordMatchedBlock, resultBlock = queryResultBlock
        let query = self.query, cursor = self.cursor, zone = zoneID, limit = resultsLimit, keys = desiredKeys
        try await finishing({
            let wire: WireQuery
            let searchZone: RecordZone.ID?
            if let cursor {
                wire = try cursor.query()
                searchZone = cursor.zoneID
            } else {
                guard let query else { throw CloudKitError(.invalidArguments, "the query operation has neither a query nor a cursor") }
                wire = try query.wire()
                searchZone = zone
            }
            let marker = try await database.queryRecords(wire, zone: searchZone, marker: cursor?.continuationMarker, resultsLimit: limit,
                                                         desiredKeys: keys) { id, result in
                matchBlock?(id, result.mapError { $0 })
            }
            return (marker.map { Cursor(continuationMarker: $0, query: wire, zoneID: searchZone) }, [:])
        }, resultBlock: { result in resultBlock?(result.mapError { $0 }) })
    }
}
