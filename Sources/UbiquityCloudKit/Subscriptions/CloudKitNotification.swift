// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// A notification a subscription sent (`CKNotification`), read from CloudKit's push payload
/// (`{"aps": {…}, "ck": {…}}`). The subclasses say what changed: ``QueryNotification`` (a
/// record matching a query subscription), ``RecordZoneNotification`` (a zone's contents),
/// ``DatabaseNotification`` (the database).
///
/// Notifications are hints: fetch the changes (with change tokens, or the query) to act on
/// them. A notification with ``notificationType`` ``NotificationType/resyncRequired`` (this
/// server's addition) says the client was away longer than the server keeps notifications:
/// fetch every database's changes with its change tokens.
///
/// Immutable, so `@unchecked Sendable`: every stored property is a `let` of a Sendable type.
public class CloudKitNotification: @unchecked Sendable, CustomStringConvertible {
    /// What kind of notification this is (`CKNotification.NotificationType`, Apple's raw values).
    public enum NotificationType: Int, Sendable, Hashable {
        case query = 1
        case recordZone = 2
        case readNotification = 3
        case database = 4
        /// Not Apple's: notifications were lost to this client (it was away longer than the
        /// server keeps them); fetch changes with change tokens.
        case resyncRequired = 100
    }

    /// The kind.
    public let notificationType: NotificationType
    /// The notification's ID (`ck.nid`), nil for a resync notice.
    public let notificationID: String?
    /// The container it came from.
    public let containerIdentifier: String?
    /// The subscription that fired.
    public let subscriptionID: String?
    /// The user the subscription belongs to.
    public let subscriptionOwnerUserRecordID: Record.ID?
    /// Whether the server left out some of the payload.
    public let isPruned: Bool
    /// The alert's text.
    public let alertBody: String?
    /// The alert's title.
    public let title: String?
    /// The sound to play.
    public let soundName: String?
    /// The badge number.
    public let badge: Int?
    /// The category.
    public let category: String?
    /// The notification's position in the user's notification log on the server (where a
    /// reconnecting client resumes).
    public let position: Int64?
    /// The whole payload as received.
    public let payload: JSONValue

    init(type: NotificationType, payload: JSONValue, position: Int64?, subscriptionID: String?) {
        let members = payload.objectValue ?? [:]
        let ck = members["ck"]?.objectValue ?? [:]
        let aps = members["aps"]?.objectValue ?? [:]
        notificationType = type
        notificationID = ck["nid"]?.stringValue
        containerIdentifier = ck["cid"]?.stringValue
        self.subscriptionID = subscriptionID
        subscriptionOwnerUserRecordID = ck["ckuserid"]?.stringValue.map { Record.ID(recordName: $0) }
        isPruned = ck["p"]?.boolValue ?? false
        let alert = aps["alert"]
        alertBody = alert?.stringValue ?? alert?.objectValue?["body"]?.stringValue
        title = alert?.objectValue?["title"]?.stringValue
        soundName = aps["sound"]?.stringValue
        badge = aps["badge"]?.doubleValue.map { Int($0) }
        category = aps["category"]?.stringValue
        self.position = position
        self.payload = payload
    }

    /// Reads a push payload (`{"aps": …, "ck": …}`); nil when it is not a CloudKit notification.
    public static func from(payload: JSONValue, position: Int64? = nil) -> CloudKitNotification? {
        guard let ck = payload.objectValue?["ck"]?.objectValue else { return nil }
        if let query = ck["qry"]?.objectValue { return QueryNotification(payload: payload, query: query, position: position) }
        if let zone = ck["fet"]?.objectValue { return RecordZoneNotification(payload: payload, zone: zone, position: position) }
        if let database = ck["met"]?.objectValue { return DatabaseNotification(payload: payload, database: database, position: position) }
        return nil
    }

    /// Reads the `userInfo` of a remote notification (`CKNotification(fromRemoteNotificationDictionary:)`).
    public static func from(remoteNotificationDictionary dictionary: [String: any Sendable]) -> CloudKitNotification? {
        guard JSONSerialization.isValidJSONObject(dictionary),
              let data = try? JSONSerialization.data(withJSONObject: dictionary),
              let payload = try? JSONValue.parse(data) else { return nil }
        return from(payload: payload)
    }

    /// The notice that notifications were lost: resync with change tokens.
    static func resync(position: Int64?) -> CloudKitNotification {
        CloudKitNotification(type: .resyncRequired, payload: .object([:]), position: position, subscriptionID: nil)
    }

    /// `CloudKitNotification(query, id, subscription s)`.
    public var description: String {
        "\(Swift.type(of: self))(\(notificationType), id \(notificationID ?? "-"), subscription \(subscriptionID ?? "-"))"
    }

    static func scope(_ code: JSONValue?) -> CloudKitDatabaseScope {
        switch code?.doubleValue.map({ Int($0) }) {
        case 1: return .public
        case 3: return .shared
        default: return .private
        }
    }

    static func zoneID(_ members: [String: JSONValue]) -> RecordZone.ID? {
        guard let name = members["zid"]?.stringValue else { return nil }
        return RecordZone.ID(zoneName: name, ownerName: members["zoid"]?.stringValue ?? RecordZone.ID.currentUserOwnerName)
    }
}

/// A record matching a query subscription was created, updated or deleted (`CKQueryNotification`).
public final class QueryNotification: CloudKitNotification, @unchecked Sendable {
    /// Why it fired (`CKQueryNotification.Reason`, Apple's raw values).
    public enum Reason: Int, Sendable, Hashable {
        case recordCreated = 1
        case recordUpdated = 2
        case recordDeleted = 3
    }

    /// Why it fired.
    public let queryNotificationReason: Reason
    /// The record that changed.
    public let recordID: Record.ID?
    /// The fields the subscription's `desiredKeys` asked for, as plain JSON values.
    public let recordFields: [String: JSONValue]?
    /// The database the record is in.
    public let databaseScope: CloudKitDatabaseScope

    init(payload: JSONValue, query: [String: JSONValue], position: Int64?) {
        queryNotificationReason = Reason(rawValue: query["fo"]?.doubleValue.map { Int($0) } ?? 2) ?? .recordUpdated
        let zone = CloudKitNotification.zoneID(query) ?? .default
        recordID = query["rid"]?.stringValue.map { Record.ID(recordName: $0, zoneID: zone) }
        recordFields = query["af"]?.objectValue
        databaseScope = CloudKitNotification.scope(query["dbs"])
        super.init(type: .query, payload: payload, position: position, subscriptionID: query["sid"]?.stringValue)
    }
}

/// A zone's contents changed (`CKRecordZoneNotification`).
public final class RecordZoneNotification: CloudKitNotification, @unchecked Sendable {
    /// The zone.
    public let recordZoneID: RecordZone.ID?
    /// The database the zone is in.
    public let databaseScope: CloudKitDatabaseScope

    init(payload: JSONValue, zone: [String: JSONValue], position: Int64?) {
        recordZoneID = CloudKitNotification.zoneID(zone)
        databaseScope = CloudKitNotification.scope(zone["dbs"])
        super.init(type: .recordZone, payload: payload, position: position, subscriptionID: zone["sid"]?.stringValue)
    }
}

/// The database changed (`CKDatabaseNotification`).
public final class DatabaseNotification: CloudKitNotification, @unchecked Sendable {
    /// The database.
    public let databaseScope: CloudKitDatabaseScope

    init(payload: JSONValue, database: [String: JSONValue], position: Int64?) {
        databaseScope = CloudKitNotification.scope(database["dbs"])
        super.init(type: .database, payload: payload, position: position, subscriptionID: database["sid"]?.stringValue)
    }
}
