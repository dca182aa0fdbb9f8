// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// One database's subscriptions, indexed for matching: query subscriptions by record type,
/// zone subscriptions by zone, database subscriptions apart. A change is checked only against
/// the subscriptions of its record type (and its zone's), so the cost of a save does not grow
/// with the subscriptions on other types.
struct SubscriptionIndex: Sendable {
    /// The database's subscription generation the index was built at.
    let generation: Int64
    let byRecordType: [String: [StoredSubscription]]
    let byZone: [String: [StoredSubscription]]
    let database: [StoredSubscription]

    init(generation: Int64, subscriptions: [StoredSubscription]) {
        self.generation = generation
        var byRecordType: [String: [StoredSubscription]] = [:]
        var byZone: [String: [StoredSubscription]] = [:]
        var database: [StoredSubscription] = []
        for subscription in subscriptions {
            switch subscription.kind {
            case .query:
                if let type = subscription.query?.recordType { byRecordType[type, default: []].append(subscription) }
            case .zone:
                if let zone = subscription.zoneName { byZone[zone, default: []].append(subscription) }
            case .database:
                database.append(subscription)
            }
        }
        self.byRecordType = byRecordType
        self.byZone = byZone
        self.database = database
    }

    /// Whether the database has no subscription at all.
    var isEmpty: Bool { byRecordType.isEmpty && byZone.isEmpty && database.isEmpty }

    /// What fired: a subscription and the notification it makes.
    struct Firing: Sendable {
        var subscription: StoredSubscription
        var kind: NotificationPayload.Kind
    }

    /// The notifications a transaction's changes to this database make, in change order: one
    /// per matching record change and query subscription, one per changed zone and zone
    /// subscription, one per database subscription. A `firesOnce` subscription fires at most once.
    func match(_ changes: [StoreChange]) -> [Firing] {
        var firings: [Firing] = []
        var firedOnce: Set<String> = []
        var zonesNotified: Set<[String]> = []
        var databaseNotified: Set<String> = []
        func id(_ subscription: StoredSubscription) -> String { subscription.subscriber + "\n" + subscription.subscriptionID }

        for change in changes {
            let zoneName: String
            switch change {
            case .record(let record):
                zoneName = record.zoneName
                for subscription in byRecordType[record.record.recordType] ?? [] where QueryMatch.fires(subscription, on: record) {
                    if subscription.firesOnce {
                        guard firedOnce.insert(id(subscription)).inserted else { continue }
                    }
                    firings.append(Firing(subscription: subscription, kind: .query(record)))
                }
            case .zone(let zone):
                zoneName = zone.zone.name
            }
            for subscription in byZone[zoneName] ?? [] where zonesNotified.insert([id(subscription), zoneName]).inserted {
                firings.append(Firing(subscription: subscription, kind: .zone(zoneName)))
            }
            for subscription in database where databaseNotified.insert(id(subscription)).inserted {
                firings.append(Firing(subscription: subscription, kind: .database))
            }
        }
        return firings
    }
}

/// Whether a query subscription fires on a record change.
enum QueryMatch {
    /// The record type, zone, `firesOn` and every filter (on the record after the change; for a
    /// deletion, on the record as it was).
    static func fires(_ subscription: StoredSubscription, on change: RecordChange) -> Bool {
        guard let query = subscription.query, query.recordType == change.record.recordType else { return false }
        guard subscription.firesOn.contains(change.kind) else { return false }
        if !subscription.zoneWide, let zone = subscription.zoneName, zone != change.zoneName { return false }
        let subject: StoredRecord
        if change.kind == .deleted {
            guard let previous = change.previous else { return query.filterBy.isEmpty }
            subject = previous
        } else {
            subject = change.record
        }
        return query.filterBy.allSatisfy { RecordFilter.matches($0, record: subject, zoneName: change.zoneName) }
    }
}
