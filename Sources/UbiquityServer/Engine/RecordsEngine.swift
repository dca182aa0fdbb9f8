// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityCore
import UbiquityWire

/// CloudKit's database semantics over a `RecordStore`: save policies and change tags, atomic
/// zone commits, references, queries, zones and change tokens. Each public method takes a decoded
/// request and returns the response body; request-wide failures are thrown as `WireError`s, item
/// failures are inside the body, as CloudKit Web Services does.
package struct RecordsEngine: Sendable {
    /// The zones Ubiquity itself uses in every private database, created on first use.
    package enum ReservedZone {
        /// One record per document of the mounted sync folder.
        package static let documents = DocumentItemRecord.zoneName
        /// The key-value store's entries.
        package static let keyValueStore = "_ubiquityKeyValueStore"
        /// All reserved names.
        package static let all: Set<String> = [documents, keyValueStore]
    }

    /// The storage.
    package let store: any RecordStore
    let logger: Logger
    let now: @Sendable () -> Int64
    /// Told of every committed change (subscriptions and push); nil for none.
    package let changeObserver: (any RecordChangeObserver)?
    /// The asset side: with it, saved assets need receipts, fetched ones get download URLs and
    /// `assets/upload`/`assets/rereference` work; nil stores asset values as given.
    package let assets: AssetService?
    /// The storage quotas of the databases.
    package let quotas: StorageQuotas
    /// Adds and builds the query indexes development's queries ask for.
    package let queryIndexBuilder: QueryIndexBuilder

    /// Makes an engine. `now` gives milliseconds since 1970 (injectable for tests);
    /// `changeObserver` is told of every change; `assets` checks and serves asset fields;
    /// `quotas` limits what each database may hold.
    package init(store: any RecordStore, logger: Logger, changeObserver: (any RecordChangeObserver)? = nil,
                assets: AssetService? = nil, quotas: StorageQuotas = StorageQuotas(),
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.store = store
        self.logger = logger
        self.changeObserver = changeObserver
        self.assets = assets
        self.quotas = quotas
        self.now = now
        self.queryIndexBuilder = QueryIndexBuilder(store: store, logger: logger)
    }

    /// Where a request goes: the database and who asks.
    package struct Context: Sendable {
        package var container: String
        package var environment: CloudKitEnvironment
        package var scope: CloudKitDatabaseScope
        package var caller: RecordsCaller
        /// The server's public base URL (`https://host:port`), for asset upload and download
        /// URLs; nil gives none.
        package var baseURL: String?

        /// Makes a context.
        package init(container: String, environment: CloudKitEnvironment, scope: CloudKitDatabaseScope, caller: RecordsCaller,
                    baseURL: String? = nil) {
            self.container = container
            self.environment = environment
            self.scope = scope
            self.caller = caller
            self.baseURL = baseURL
        }

        /// The database key, after checking the caller may use the database at all: the public
        /// database is open to every caller; private needs a signed-in user (server keys reach
        /// only the public database, as in CloudKit).
        func databaseKey(forWriting: Bool) throws -> DatabaseKey {
            switch scope {
            case .public:
                if forWriting, !caller.isAuthenticated {
                    throw WireError(.authenticationRequired, "writing to the public database needs a signed-in user")
                }
                return DatabaseKey(container: container, environment: environment, scope: .public, owner: "")
            case .private, .shared:
                switch caller.identity {
                case .anonymous:
                    throw WireError(.authenticationRequired, "the \(scope.rawValue) database needs a signed-in user")
                case .serverKey:
                    throw WireError(.accessDenied, "server-to-server keys can use the public database only")
                case .user(_, let name):
                    return DatabaseKey(container: container, environment: environment, scope: .private, owner: name)
                }
            }
        }

        /// Checks a zone ID's owner: in a private database only the caller's own zones exist;
        /// the shared database holds zones others shared, and none are shared yet.
        func checkOwner(_ zoneID: WireZoneID) throws {
            switch scope {
            case .private:
                if let owner = zoneID.ownerRecordName, owner != "__defaultOwner__", owner != caller.userRecordName {
                    throw WireError(.accessDenied, "zone \(zoneID.zoneName) belongs to another user; other users' zones are reached through the shared database")
                }
            case .shared:
                throw WireError(.zoneNotFound, "zone \(zoneID.zoneName) is not shared with you")
            case .public:
                break
            }
        }
    }

    /// Milliseconds since 1970, now.
    var timestamp: Int64 { now() }

    /// Resolves a zone for reading: nil zone = default. The default zone reads as empty before
    /// it is written.
    static func readZone(_ tx: any RecordStoreTransaction, key: DatabaseKey, zoneID: WireZoneID) async throws -> StoredZone? {
        if let zone = try await tx.zone(key: key, name: zoneID.zoneName) { return zone }
        try checkMissingZone(key: key, zoneID: zoneID)
        return nil
    }

    /// A read of a zone the database does not have: fine for the default and reserved zones
    /// (made on first write: nothing in them yet), else ZONE_NOT_FOUND.
    static func checkMissingZone(key: DatabaseKey, zoneID: WireZoneID) throws {
        if zoneID.isDefault || (key.scope == .private && ReservedZone.all.contains(zoneID.zoneName)) { return }
        throw WireError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")
    }

    /// Resolves a zone for writing, creating the default and reserved zones on first use.
    func writeZone(_ tx: any RecordStoreTransaction, database: StoredDatabase, zoneID: WireZoneID) async throws -> StoredZone {
        if let zone = try await tx.zone(database: database.id, name: zoneID.zoneName) { return zone }
        if zoneID.isDefault || (database.key.scope == .private && ReservedZone.all.contains(zoneID.zoneName)) {
            return try await tx.createZone(database: database.id, name: zoneID.zoneName, createdAt: timestamp)
        }
        if database.key.scope == .public {
            throw WireError(.zoneNotFound, "the public database has only the default zone (\(WireZoneID.defaultZoneName))")
        }
        throw WireError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")
    }

    /// The zone ID dictionary of a zone for responses.
    static func wireZoneID(_ name: String, key: DatabaseKey) -> WireZoneID {
        WireZoneID(zoneName: name, ownerRecordName: key.scope == .public ? "_defaultOwner" : key.owner)
    }

    /// The zone dictionary: `{zoneID, syncToken, atomic, deleted}`.
    static func zoneJSON(_ zone: StoredZone?, name: String, key: DatabaseKey) -> JSONValue {
        var writer = WireWriter()
        writer.set("zoneID", wireZoneID(name, key: key).json)
        writer.set("syncToken", SyncToken.zone(id: zone?.id ?? 0, sequence: zone?.sequence ?? 0))
        writer.set("atomic", name != WireZoneID.defaultZoneName)
        writer.set("deleted", zone?.deleted ?? false)
        return writer.json
    }
}
