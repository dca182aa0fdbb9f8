// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// A subscription as the server keeps it: what it watches (a database, a record type and
/// filters, a zone), who it notifies (its subscriber) and how.
///
/// In the public database every signed-in user has subscriptions of their own; in a private
/// database the owner is the only subscriber. Notifications go to the subscriber's log
/// (`NotificationLogKey`), whatever database they came from.
package struct StoredSubscription: Sendable, Hashable {
    /// The three kinds of CloudKit subscription.
    package enum Kind: String, Sendable, Hashable, CaseIterable {
        /// `CKQuerySubscription`: records of a type matching filters, on create, update, delete.
        case query
        /// `CKRecordZoneSubscription`: any change in one zone.
        case zone
        /// `CKDatabaseSubscription`: any change in the (private) database.
        case database
    }

    /// What a query subscription fires on (`firesOn`).
    package struct FiresOn: OptionSet, Sendable, Hashable {
        package let rawValue: Int
        /// Makes a set.
        package init(rawValue: Int) { self.rawValue = rawValue }
        /// `create`.
        package static let create = FiresOn(rawValue: 1)
        /// `update`.
        package static let update = FiresOn(rawValue: 2)
        /// `delete`.
        package static let delete = FiresOn(rawValue: 4)
        /// All three.
        package static let all: FiresOn = [.create, .update, .delete]

        /// The wire names, in CloudKit's order.
        package var names: [String] {
            var names: [String] = []
            if contains(.create) { names.append("create") }
            if contains(.update) { names.append("update") }
            if contains(.delete) { names.append("delete") }
            return names
        }

        /// Whether the set holds the kind of change.
        package func contains(_ kind: RecordChange.Kind) -> Bool {
            switch kind {
            case .created: return contains(.create)
            case .updated: return contains(.update)
            case .deleted: return contains(.delete)
            }
        }
    }

    /// The database whose changes the subscription watches.
    package var database: DatabaseKey
    /// The user the notifications go to.
    package var subscriber: String
    /// The subscription's ID, unique per database and subscriber.
    package var subscriptionID: String
    package var kind: Kind
    /// For query subscriptions: the record type and the filters (sort descriptors are ignored).
    package var query: WireQuery?
    /// For zone subscriptions, and query subscriptions that are not zone-wide: the zone.
    package var zoneName: String?
    /// For query subscriptions: every zone of the database (`zoneWide`, CloudKit's default).
    package var zoneWide: Bool
    /// For query subscriptions.
    package var firesOn: FiresOn
    /// For query subscriptions: deleted after it fires once.
    package var firesOnce: Bool
    /// The `notificationInfo` dictionary as the client sent it.
    package var notificationInfo: JSONValue?
    /// Milliseconds since 1970.
    package var createdAt: Int64

    /// Makes a subscription.
    package init(database: DatabaseKey, subscriber: String, subscriptionID: String, kind: Kind, query: WireQuery? = nil,
                zoneName: String? = nil, zoneWide: Bool = true, firesOn: FiresOn = .all, firesOnce: Bool = false,
                notificationInfo: JSONValue? = nil, createdAt: Int64) {
        self.database = database
        self.subscriber = subscriber
        self.subscriptionID = subscriptionID
        self.kind = kind
        self.query = query
        self.zoneName = zoneName
        self.zoneWide = zoneWide
        self.firesOn = firesOn
        self.firesOnce = firesOnce
        self.notificationInfo = notificationInfo
        self.createdAt = createdAt
    }

    /// The subscription dictionary for responses (CloudKit's shape: `zone` subscriptions carry
    /// no `query`, `firesOn` or `firesOnce`; `query` ones carry `zoneWide`).
    package func json(ownerRecordName: String) -> JSONValue {
        var writer = WireWriter()
        writer.set("subscriptionID", subscriptionID)
        writer.set("subscriptionType", kind.rawValue)
        switch kind {
        case .query:
            writer.set("query", query?.json)
            writer.set("firesOn", .array(firesOn.names.map { .string($0) }))
            writer.set("firesOnce", firesOnce)
            writer.set("zoneWide", zoneWide)
            if !zoneWide, let zoneName {
                writer.set("zoneID", WireZoneID(zoneName: zoneName, ownerRecordName: ownerRecordName).json)
            }
        case .zone:
            if let zoneName { writer.set("zoneID", WireZoneID(zoneName: zoneName, ownerRecordName: ownerRecordName).json) }
        case .database:
            break
        }
        writer.set("notificationInfo", notificationInfo)
        return writer.json
    }

    /// The `query` and `notificationInfo` as stored (compact JSON), for the stores.
    var queryText: String? { query.map { String(decoding: $0.json.serialized(), as: UTF8.self) } }
    var notificationInfoText: String? { notificationInfo.map { String(decoding: $0.serialized(), as: UTF8.self) } }

    /// Rebuilds a subscription from a stored row's columns.
    static func fromColumns(database: DatabaseKey, subscriber: String, subscriptionID: String, kind: String, queryText: String?,
                            zoneName: String?, zoneWide: Bool, firesOn: Int, firesOnce: Bool, notificationInfoText: String?,
                            createdAt: Int64) throws -> StoredSubscription {
        guard let kind = Kind(rawValue: kind) else {
            throw UbiquityError(.protocolError, "stored subscription \(subscriptionID) has an unknown kind \(kind)")
        }
        let query = try queryText.map { try WireQuery(json: JSONValue.parse(Data($0.utf8)), path: "query") }
        let info = try notificationInfoText.map { try JSONValue.parse(Data($0.utf8)) }
        return StoredSubscription(database: database, subscriber: subscriber, subscriptionID: subscriptionID, kind: kind, query: query,
                                  zoneName: zoneName, zoneWide: zoneWide, firesOn: FiresOn(rawValue: firesOn), firesOnce: firesOnce,
                                  notificationInfo: info, createdAt: createdAt)
    }
}

/// Whose notification log: a user in one container's environment. Notifications from the
/// public database and from the user's private database go to the same log.
package struct NotificationLogKey: Sendable, Hashable, Comparable, CustomStringConvertible {
    package var container: String
    package var environment: CloudKitEnvironment
    /// The user record name.
    package var user: String

    /// Makes a key.
    package init(container: String, environment: CloudKitEnvironment, user: String) {
        self.container = container
        self.environment = environment
        self.user = user
    }

    /// Orders keys so that locks on several logs are always taken in the same order.
    package static func < (lhs: NotificationLogKey, rhs: NotificationLogKey) -> Bool {
        (lhs.container, lhs.environment.rawValue, lhs.user) < (rhs.container, rhs.environment.rawValue, rhs.user)
    }

    /// `container/environment/user`.
    package var description: String { "\(container)/\(environment.rawValue)/\(user)" }
}

/// One entry of a notification log.
package struct StoredNotification: Sendable, Hashable {
    /// The log it is in.
    package var key: NotificationLogKey
    /// Its position in the log: 1, 2, 3, … in commit order, without gaps.
    package var sequence: Int64
    /// CloudKit's notification ID (a UUID), `ck.nid` in the payload.
    package var notificationID: String
    /// The payload: `{"aps": {…}, "ck": {…}}`, as CloudKit pushes it.
    package var payload: JSONValue
    /// Milliseconds since 1970.
    package var createdAt: Int64

    /// Makes an entry.
    package init(key: NotificationLogKey, sequence: Int64, notificationID: String, payload: JSONValue, createdAt: Int64) {
        self.key = key
        self.sequence = sequence
        self.notificationID = notificationID
        self.payload = payload
        self.createdAt = createdAt
    }
}

/// A notification about to be appended (its sequence comes from the log).
package struct NewNotification: Sendable, Hashable {
    package var notificationID: String
    package var payload: JSONValue
    /// Makes one.
    package init(notificationID: String, payload: JSONValue) {
        self.notificationID = notificationID
        self.payload = payload
    }
}

/// The state of a notification log: the last sequence handed out, and the last one pruned
/// (entries up to `floor` are gone; a client behind it must resync with change tokens).
package struct NotificationLogHead: Sendable, Hashable {
    package var head: Int64
    package var floor: Int64
    /// Makes a head.
    package init(head: Int64, floor: Int64) {
        self.head = head
        self.floor = floor
    }
}

/// A push token (`tokens/create`, `tokens/register`): a bearer secret bound to a user of a
/// container's environment; it names the long-poll and WebSocket delivery URL.
package struct StoredPushToken: Sendable, Hashable {
    package var key: NotificationLogKey
    /// `development` or `production`, as the client asked (kept and echoed).
    package var apnsEnvironment: String
    /// Milliseconds since 1970.
    package var createdAt: Int64
    /// Milliseconds since 1970.
    package var expiresAt: Int64

    /// Makes a token row.
    package init(key: NotificationLogKey, apnsEnvironment: String, createdAt: Int64, expiresAt: Int64) {
        self.key = key
        self.apnsEnvironment = apnsEnvironment
        self.createdAt = createdAt
        self.expiresAt = expiresAt
    }
}
