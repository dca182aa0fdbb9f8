// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// The notification payloads, in the form CloudKit pushes them through APNs and webcourier:
///
/// ```json
/// {"aps": {"content-available": 1},
///  "ck": {"ce": 2, "cid": "iCloud.com.example", "ckuserid": "_…", "nid": "UUID",
///         "qry": {"dbs": 2, "fo": 1, "rid": "recordName", "sid": "subscriptionID", "zid": "zone", "zoid": "_owner", "af": {…}}}}
/// ```
///
/// `qry` for query notifications (`fo`: 1 created, 2 updated, 3 deleted), `fet` for record-zone
/// notifications (`dbs`, `sid`, `zid`, `zoid`), `met` for database notifications (`dbs`, `sid`).
/// `dbs` is `CKDatabase.Scope`'s raw value: 1 public, 2 private, 3 shared.
enum NotificationPayload {
    /// What a notification is about.
    enum Kind: Sendable {
        /// A record change matched a query subscription.
        case query(RecordChange)
        /// A zone's contents changed.
        case zone(String)
        /// The database changed.
        case database
    }

    /// `CKDatabase.Scope` raw values.
    static func scopeCode(_ scope: CloudKitDatabaseScope) -> Int64 {
        switch scope {
        case .public: return 1
        case .private: return 2
        case .shared: return 3
        }
    }

    /// `CKQueryNotification.Reason` raw values.
    static func reasonCode(_ kind: RecordChange.Kind) -> Int64 {
        switch kind {
        case .created: return 1
        case .updated: return 2
        case .deleted: return 3
        }
    }

    /// The payload of one notification for the subscription's subscriber.
    static func make(_ kind: Kind, subscription: StoredSubscription, notificationID: String) -> JSONValue {
        let key = subscription.database
        let zoneOwner = key.scope == .public ? "_defaultOwner" : key.owner
        var ck: [String: JSONValue] = [
            "ce": .integer(2),
            "cid": .string(key.container),
            "ckuserid": .string(subscription.subscriber),
            "nid": .string(notificationID),
        ]
        switch kind {
        case .query(let change):
            var query: [String: JSONValue] = [
                "dbs": .integer(scopeCode(key.scope)),
                "fo": .integer(reasonCode(change.kind)),
                "rid": .string(change.record.recordName),
                "sid": .string(subscription.subscriptionID),
                "zid": .string(change.zoneName),
                "zoid": .string(zoneOwner),
            ]
            let fields = additionalFields(subscription.notificationInfo, record: change.kind == .deleted ? (change.previous ?? change.record) : change.record)
            if !fields.isEmpty { query["af"] = .object(fields) }
            ck["qry"] = .object(query)
        case .zone(let zoneName):
            ck["fet"] = .object([
                "dbs": .integer(scopeCode(key.scope)),
                "sid": .string(subscription.subscriptionID),
                "zid": .string(zoneName),
                "zoid": .string(zoneOwner),
            ])
        case .database:
            ck["met"] = .object(["dbs": .integer(scopeCode(key.scope)), "sid": .string(subscription.subscriptionID)])
        }
        return .object(["aps": aps(subscription.notificationInfo), "ck": .object(ck)])
    }

    /// The `aps` dictionary from the subscription's `notificationInfo` (alert, sound, badge,
    /// content-available, category); `{"content-available": 1}` for a silent notification.
    static func aps(_ info: JSONValue?) -> JSONValue {
        let members = info?.objectValue ?? [:]
        var aps: [String: JSONValue] = [:]
        var alert: [String: JSONValue] = [:]
        if let body = members["alertBody"]?.stringValue { alert["body"] = .string(body) }
        if let key = members["alertLocalizationKey"]?.stringValue { alert["loc-key"] = .string(key) }
        if let args = members["alertLocalizationArgs"]?.arrayValue { alert["loc-args"] = .array(args) }
        if let key = members["alertActionLocalizationKey"]?.stringValue { alert["action-loc-key"] = .string(key) }
        if let image = members["alertLaunchImage"]?.stringValue { alert["launch-image"] = .string(image) }
        if let title = members["title"]?.stringValue { alert["title"] = .string(title) }
        if !alert.isEmpty { aps["alert"] = .object(alert) }
        if let sound = members["soundName"]?.stringValue { aps["sound"] = .string(sound) }
        if members["shouldBadge"]?.boolValue == true { aps["badge"] = .integer(1) }
        if let category = members["category"]?.stringValue { aps["category"] = .string(category) }
        if members["shouldSendContentAvailable"]?.boolValue == true || aps.isEmpty { aps["content-available"] = .integer(1) }
        return .object(aps)
    }

    /// The record's values of the keys `notificationInfo` asks for (`desiredKeys`, CloudKit JS's
    /// `additionalFields`), as plain JSON values, at most 10 keys and 1 KiB of text each.
    static func additionalFields(_ info: JSONValue?, record: StoredRecord) -> [String: JSONValue] {
        let members = info?.objectValue ?? [:]
        let keys = (members["desiredKeys"]?.arrayValue ?? []) + (members["additionalFields"]?.arrayValue ?? [])
        var fields: [String: JSONValue] = [:]
        for key in keys.compactMap(\.stringValue).prefix(10) {
            guard let value = record.fields[key] else { continue }
            let json = value.valueJSON()
            if case .string(let text) = json, text.utf8.count > 1024 { continue }
            fields[key] = json
        }
        return fields
    }
}
