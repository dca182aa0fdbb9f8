// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// A subscription (`CKSubscription`): a persistent query on the server whose matches send the
/// subscriber notifications. Save one with ``CloudDatabase/save(_:)-(Subscription)``; receive
/// its notifications with ``CloudContainer/notifications(since:)``.
///
/// The three kinds are ``QuerySubscription`` (records of a type matching a predicate),
/// ``RecordZoneSubscription`` (any change in a zone of the private database) and
/// ``DatabaseSubscription`` (any change in the private database).
public protocol Subscription: Sendable, CustomStringConvertible {
    /// The subscription's ID, unique per database and user.
    var subscriptionID: String { get }
    /// Which kind of subscription this is.
    var subscriptionType: SubscriptionType { get }
    /// How notifications look (alert, sound, badge, silent, extra fields).
    var notificationInfo: NotificationInfo? { get set }
}

/// The kinds of subscription (`CKSubscription.SubscriptionType`, with Apple's raw values).
public enum SubscriptionType: Int, Sendable, Hashable {
    case query = 1
    case recordZone = 2
    case database = 3
}

/// How a subscription's notifications are presented (`CKSubscription.NotificationInfo`). With
/// only ``shouldSendContentAvailable`` set (or nothing) notifications are silent.
public struct NotificationInfo: Sendable, Hashable {
    /// The alert's text.
    public var alertBody: String?
    /// A localization key for the alert's text.
    public var alertLocalizationKey: String?
    /// Field names whose values fill the localized alert's placeholders.
    public var alertLocalizationArgs: [String]?
    /// The alert's title.
    public var title: String?
    /// A localization key for the alert's action button.
    public var alertActionLocalizationKey: String?
    /// An image shown when the app launches from the alert.
    public var alertLaunchImage: String?
    /// A sound to play.
    public var soundName: String?
    /// Whether the app's badge is incremented.
    public var shouldBadge: Bool
    /// Whether the notification is a background (content-available) one.
    public var shouldSendContentAvailable: Bool
    /// Fields of the changed record to include in query notifications (`recordFields`).
    public var desiredKeys: [String]?
    /// The notification's category.
    public var category: String?

    /// An empty (silent) notification info.
    public init(alertBody: String? = nil, title: String? = nil, soundName: String? = nil, shouldBadge: Bool = false,
                shouldSendContentAvailable: Bool = false, desiredKeys: [String]? = nil, category: String? = nil) {
        self.alertBody = alertBody
        self.title = title
        self.soundName = soundName
        self.shouldBadge = shouldBadge
        self.shouldSendContentAvailable = shouldSendContentAvailable
        self.desiredKeys = desiredKeys
        self.category = category
    }

    /// The Notification Info dictionary of CloudKit Web Services.
    var json: JSONValue {
        var writer = WireWriter()
        writer.set("alertBody", alertBody)
        writer.set("alertLocalizationKey", alertLocalizationKey)
        writer.set("alertLocalizationArgs", alertLocalizationArgs.map { .array($0.map { .string($0) }) })
        writer.set("title", title)
        writer.set("alertActionLocalizationKey", alertActionLocalizationKey)
        writer.set("alertLaunchImage", alertLaunchImage)
        writer.set("soundName", soundName)
        writer.set("shouldBadge", shouldBadge)
        writer.set("shouldSendContentAvailable", shouldSendContentAvailable)
        writer.set("desiredKeys", desiredKeys.map { .array($0.map { .string($0) }) })
        writer.set("category", category)
        return writer.json
    }

    /// Reads a Notification Info dictionary (unknown keys ignored).
    init(json: JSONValue) {
        let members = json.objectValue ?? [:]
        alertBody = members["alertBody"]?.stringValue
        alertLocalizationKey = members["alertLocalizationKey"]?.stringValue
        alertLocalizationArgs = members["alertLocalizationArgs"]?.arrayValue?.compactMap(\.stringValue)
        title = members["title"]?.stringValue
        alertActionLocalizationKey = members["alertActionLocalizationKey"]?.stringValue
        alertLaunchImage = members["alertLaunchImage"]?.stringValue
        soundName = members["soundName"]?.stringValue
        shouldBadge = members["shouldBadge"]?.boolValue ?? false
        shouldSendContentAvailable = members["shouldSendContentAvailable"]?.boolValue ?? false
        desiredKeys = (members["desiredKeys"] ?? members["additionalFields"])?.arrayValue?.compactMap(\.stringValue)
        category = members["category"]?.stringValue
    }
}

/// A subscription to records of one type that match a predicate (`CKQuerySubscription`).
///
/// ```swift
/// let subscription = QuerySubscription(recordType: "Note", predicate: try Query.Predicate(format: "tags CONTAINS %@", "home"),
///                                      subscriptionID: "home-notes", options: [.firesOnRecordCreation, .firesOnRecordUpdate])
/// try await database.save(subscription)
/// ```
public struct QuerySubscription: Subscription, Hashable {
    /// When a query subscription fires (`CKQuerySubscription.Options`).
    public struct Options: OptionSet, Sendable, Hashable {
        /// The raw bits (Apple's values).
        public let rawValue: UInt
        /// Makes options from raw bits.
        public init(rawValue: UInt) { self.rawValue = rawValue }
        /// A matching record is created.
        public static let firesOnRecordCreation = Options(rawValue: 1 << 0)
        /// A matching record is updated.
        public static let firesOnRecordUpdate = Options(rawValue: 1 << 1)
        /// A matching record is deleted.
        public static let firesOnRecordDeletion = Options(rawValue: 1 << 2)
        /// The subscription is deleted after it fires once.
        public static let firesOnce = Options(rawValue: 1 << 3)
    }

    public let subscriptionID: String
    /// Always ``SubscriptionType/query``.
    public var subscriptionType: SubscriptionType { .query }
    public var notificationInfo: NotificationInfo?
    /// The records' type.
    public let recordType: Record.RecordType
    /// The predicate's format string.
    public let predicateFormat: String
    /// When it fires.
    public let querySubscriptionOptions: Options
    /// Only this zone's records; nil watches every zone of the database.
    public var zoneID: RecordZone.ID?
    let filters: Result<[WireFilter], CloudKitError>

    /// A subscription with a translated predicate.
    public init(recordType: Record.RecordType, predicate: Query.Predicate, subscriptionID: String = UUID().uuidString,
                options: Options = [.firesOnRecordCreation, .firesOnRecordUpdate, .firesOnRecordDeletion]) {
        self.recordType = recordType
        predicateFormat = predicate.predicateFormat
        filters = .success(predicate.filters)
        self.subscriptionID = subscriptionID
        querySubscriptionOptions = options
    }

    /// A subscription with an `NSPredicate` (in the subset ``Query`` translates); an
    /// untranslatable one makes saving fail with ``CloudKitError/Code/invalidArguments``.
    public init(recordType: Record.RecordType, predicate: NSPredicate, subscriptionID: String = UUID().uuidString,
                options: Options = [.firesOnRecordCreation, .firesOnRecordUpdate, .firesOnRecordDeletion]) {
        self.init(query: Query(recordType: recordType, predicate: predicate), subscriptionID: subscriptionID, options: options)
    }

    /// A subscription to a query's matches (its sort descriptors are ignored).
    public init(query: Query, subscriptionID: String = UUID().uuidString,
                options: Options = [.firesOnRecordCreation, .firesOnRecordUpdate, .firesOnRecordDeletion]) {
        recordType = query.recordType
        predicateFormat = query.predicateFormat
        filters = query.translated
        self.subscriptionID = subscriptionID
        querySubscriptionOptions = options
    }

    init(recordType: String, predicateFormat: String, filters: [WireFilter], subscriptionID: String, options: Options) {
        self.recordType = recordType
        self.predicateFormat = predicateFormat
        self.filters = .success(filters)
        self.subscriptionID = subscriptionID
        querySubscriptionOptions = options
    }

    /// `QuerySubscription(id: Note where …)`.
    public var description: String { "QuerySubscription(\(subscriptionID): \(recordType) where \(predicateFormat))" }

    /// Compares IDs, types, predicates, options, zones and notification infos.
    public static func == (lhs: QuerySubscription, rhs: QuerySubscription) -> Bool {
        lhs.subscriptionID == rhs.subscriptionID && lhs.recordType == rhs.recordType && lhs.predicateFormat == rhs.predicateFormat
            && lhs.querySubscriptionOptions == rhs.querySubscriptionOptions && lhs.zoneID == rhs.zoneID && lhs.notificationInfo == rhs.notificationInfo
    }

    /// Hashes the ID, type and predicate.
    public func hash(into hasher: inout Hasher) {
        hasher.combine(subscriptionID)
        hasher.combine(recordType)
        hasher.combine(predicateFormat)
    }
}

/// A subscription to every change in one zone of the private database
/// (`CKRecordZoneSubscription`).
public struct RecordZoneSubscription: Subscription, Hashable {
    public let subscriptionID: String
    /// Always ``SubscriptionType/recordZone``.
    public var subscriptionType: SubscriptionType { .recordZone }
    public var notificationInfo: NotificationInfo?
    /// The zone.
    public let zoneID: RecordZone.ID

    /// A subscription to `zoneID` (its ID defaults to a new UUID).
    public init(zoneID: RecordZone.ID, subscriptionID: String = UUID().uuidString) {
        self.zoneID = zoneID
        self.subscriptionID = subscriptionID
    }

    /// `RecordZoneSubscription(id: zone)`.
    public var description: String { "RecordZoneSubscription(\(subscriptionID): \(zoneID))" }
}

/// A subscription to every change in the private database (`CKDatabaseSubscription`).
public struct DatabaseSubscription: Subscription, Hashable {
    public let subscriptionID: String
    /// Always ``SubscriptionType/database``.
    public var subscriptionType: SubscriptionType { .database }
    public var notificationInfo: NotificationInfo?

    /// A database subscription (its ID defaults to a new UUID).
    public init(subscriptionID: String = UUID().uuidString) {
        self.subscriptionID = subscriptionID
    }

    /// `DatabaseSubscription(id)`.
    public var description: String { "DatabaseSubscription(\(subscriptionID))" }
}

/// The Subscription dictionary of CloudKit Web Services, both ways.
enum SubscriptionCoding {
    /// The dictionary to save.
    static func json(_ subscription: any Subscription) throws -> JSONValue {
        var writer = WireWriter()
        writer.set("subscriptionID", subscription.subscriptionID)
        writer.set("notificationInfo", subscription.notificationInfo?.json)
        switch subscription {
        case let query as QuerySubscription:
            guard !query.recordType.isEmpty else { throw CloudKitError(.invalidArguments, "a query subscription needs a record type") }
            writer.set("subscriptionType", "query")
            writer.set("query", WireQuery(recordType: query.recordType, filterBy: try query.filters.get()).json)
            var firesOn: [JSONValue] = []
            if query.querySubscriptionOptions.contains(.firesOnRecordCreation) { firesOn.append("create") }
            if query.querySubscriptionOptions.contains(.firesOnRecordUpdate) { firesOn.append("update") }
            if query.querySubscriptionOptions.contains(.firesOnRecordDeletion) { firesOn.append("delete") }
            guard !firesOn.isEmpty else {
                throw CloudKitError(.invalidArguments, "a query subscription must fire on record creation, update or deletion")
            }
            writer.set("firesOn", .array(firesOn))
            writer.set("firesOnce", query.querySubscriptionOptions.contains(.firesOnce))
            if let zone = query.zoneID {
                writer.set("zoneID", zoneJSON(zone))
                writer.set("zoneWide", false)
            } else {
                writer.set("zoneWide", true)
            }
        case let zone as RecordZoneSubscription:
            writer.set("subscriptionType", "zone")
            writer.set("zoneID", zoneJSON(zone.zoneID))
        case is DatabaseSubscription:
            writer.set("subscriptionType", "database")
        default:
            throw CloudKitError(.invalidArguments, "unknown subscription type \(type(of: subscription))")
        }
        return writer.json
    }

    static func zoneJSON(_ zone: RecordZone.ID) -> JSONValue {
        var members: [String: JSONValue] = ["zoneName": .string(zone.zoneName)]
        if zone.ownerName != RecordZone.ID.currentUserOwnerName { members["ownerRecordName"] = .string(zone.ownerName) }
        return .object(members)
    }

    static func zone(_ json: JSONValue?) -> RecordZone.ID? {
        guard let members = json?.objectValue, let name = members["zoneName"]?.stringValue else { return nil }
        return RecordZone.ID(zoneName: name, ownerName: members["ownerRecordName"]?.stringValue ?? RecordZone.ID.currentUserOwnerName)
    }

    /// Reads a subscription the server sent.
    static func decode(_ json: JSONValue) throws -> any Subscription {
        let reader = try WireReader(json, path: "subscription")
        let id = try reader.requiredString("subscriptionID")
        let info = try reader.value("notificationInfo").map(NotificationInfo.init(json:))
        switch try reader.requiredString("subscriptionType") {
        case "query":
            let query = try WireQuery(json: reader.value("query") ?? .object([:]), path: "subscription.query")
            var options = QuerySubscription.Options()
            for name in try reader.strings("firesOn") ?? [] {
                switch name {
                case "create": options.insert(.firesOnRecordCreation)
                case "update": options.insert(.firesOnRecordUpdate)
                case "delete": options.insert(.firesOnRecordDeletion)
                default: break
                }
            }
            if try reader.bool("firesOnce") == true { options.insert(.firesOnce) }
            var subscription = QuerySubscription(recordType: query.recordType, predicateFormat: predicateFormat(query.filterBy),
                                                 filters: query.filterBy, subscriptionID: id, options: options)
            if try reader.bool("zoneWide") == false { subscription.zoneID = zone(try reader.value("zoneID")) ?? .default }
            subscription.notificationInfo = info
            return subscription
        case "zone":
            var subscription = RecordZoneSubscription(zoneID: zone(try reader.value("zoneID")) ?? .default, subscriptionID: id)
            subscription.notificationInfo = info
            return subscription
        case "database":
            var subscription = DatabaseSubscription(subscriptionID: id)
            subscription.notificationInfo = info
            return subscription
        case let other:
            throw CloudKitError(.internalError, "the server sent a subscription of unknown type \(other)")
        }
    }

    /// A readable predicate for filters the server sent (`TRUEPREDICATE` for none).
    static func predicateFormat(_ filters: [WireFilter]) -> String {
        guard !filters.isEmpty else { return "TRUEPREDICATE" }
        return filters.map { filter in
            let value = String(decoding: filter.fieldValue.valueJSON().serialized(), as: UTF8.self)
            return "\(filter.key) \(filter.comparator.rawValue) \(value)"
        }.joined(separator: " AND ")
    }
}
