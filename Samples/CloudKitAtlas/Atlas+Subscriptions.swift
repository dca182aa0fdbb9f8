// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// A query subscription and its notification (CloudKitAtlas's "Subscriptions" and
/// "Notifications" sections).
extension Atlas {
    /// How long to wait for the notification.
    static let notificationTimeout = Duration.seconds(30)

    /// The name of the record the subscription watches for.
    var watchedName: String { "Atlas notification \(run)" }

    /// Saves a query subscription: items created with this run's name, in any zone.
    func saveSubscription() async throws -> String {
        let subscription = QuerySubscription(recordType: Self.itemType, predicate: try Query.Predicate(format: "name == %@", watchedName),
                                             subscriptionID: "atlas-\(run)", options: [.firesOnRecordCreation])
        let saved = try await database.save(subscription)
        subscriptionID = saved.subscriptionID
        try check(saved.subscriptionID == subscription.subscriptionID, "saved as \(saved.subscriptionID), expected \(subscription.subscriptionID)")
        return saved.description
    }

    /// `fetch(withSubscriptionID:)` and `fetchAllSubscriptions()`.
    func fetchSubscriptions() async throws -> String {
        let id = try need(subscriptionID, from: "subscription-save")
        let fetched = try await database.subscription(for: id)
        let query = try need(fetched as? QuerySubscription, from: "subscription-save (the fetched subscription is not a query subscription)")
        try check(query.recordType == Self.itemType, "the fetched subscription's record type is \(query.recordType)")
        let all = try await database.allSubscriptions()
        try check(all.contains { $0.subscriptionID == id }, "fetchAllSubscriptions does not list \(id)")
        return "\(id) among \(all.count) subscription(s)"
    }

    /// Creates a matching record and waits for the query notification about it, from the
    /// container's notification stream (WebSocket, or long-poll).
    func receiveNotification() async throws -> String {
        let id = try need(subscriptionID, from: "subscription-save")
        var record = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-notified"))
        record["name"] = watchedName
        _ = try await database.save(record)
        madeRecords.append(record.recordID)
        // From the start of the user's notification log: the notification is there whether the
        // stream connects before or after the save.
        let stream = container.notifications(since: CloudContainer.NotificationCursor(position: 0))
        let recordName = record.recordID.recordName
        let timeout = Self.notificationTimeout
        let found = try await withThrowingTaskGroup(of: QueryNotification?.self) { group in
            group.addTask {
                for try await notification in stream {
                    if let query = notification as? QueryNotification, query.subscriptionID == id, query.recordID?.recordName == recordName {
                        return query
                    }
                }
                return nil
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return nil
            }
            defer { group.cancelAll() }
            return try await group.next() ?? nil
        }
        guard let found else { throw AtlasFailure("no notification for \(recordName) within \(timeout)") }
        try check(found.queryNotificationReason == .recordCreated, "the notification's reason is \(found.queryNotificationReason), expected recordCreated")
        try check(found.databaseScope == .private, "the notification's database is \(found.databaseScope), expected private")
        return "recordCreated \(recordName) from \(id)" + (found.position.map { " at position \($0)" } ?? "")
    }
}
