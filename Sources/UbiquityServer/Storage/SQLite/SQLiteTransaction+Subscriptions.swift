// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityWire

/// Subscriptions, notification logs and push tokens in SQLite (tables of the `v3-subscriptions`
/// migration). GRDB's one writer serializes appends, so log sequences follow commit order.
extension SQLiteTransaction: SubscriptionStoreTransaction {
    private static let subscriptionColumns = """
        container, environment, scope, owner, subscriber, subscription_id, kind, query, zone_name, zone_wide, fires_on, fires_once, notification_info, created_at
        """

    private func subscription(_ row: Row) throws -> StoredSubscription {
        guard let environment = CloudKitEnvironment(rawValue: row["environment"]), let scope = CloudKitDatabaseScope(rawValue: row["scope"]) else {
            throw UbiquityError(.protocolError, "a stored subscription names an unknown environment or database")
        }
        let key = DatabaseKey(container: row["container"], environment: environment, scope: scope, owner: row["owner"])
        return try StoredSubscription.fromColumns(
            database: key, subscriber: row["subscriber"], subscriptionID: row["subscription_id"], kind: row["kind"], queryText: row["query"],
            zoneName: row["zone_name"], zoneWide: row["zone_wide"], firesOn: row["fires_on"], firesOnce: row["fires_once"],
            notificationInfoText: row["notification_info"], createdAt: row["created_at"])
    }

    private func databaseArguments(_ key: DatabaseKey) -> StatementArguments {
        [key.container, key.environment.rawValue, key.scope.rawValue, key.owner]
    }

    func subscriptions(database: DatabaseKey) throws -> [StoredSubscription] {
        try Row.fetchAll(db, sql: """
            SELECT \(Self.subscriptionColumns) FROM subscriptions
            WHERE container = ? AND environment = ? AND scope = ? AND owner = ? ORDER BY subscriber, subscription_id
            """, arguments: databaseArguments(database)).map(subscription)
    }

    func subscriptions(database: DatabaseKey, subscriber: String) throws -> [StoredSubscription] {
        try Row.fetchAll(db, sql: """
            SELECT \(Self.subscriptionColumns) FROM subscriptions
            WHERE container = ? AND environment = ? AND scope = ? AND owner = ? AND subscriber = ? ORDER BY subscription_id
            """, arguments: databaseArguments(database) + [subscriber]).map(subscription)
    }

    func subscription(database: DatabaseKey, subscriber: String, id: String) throws -> StoredSubscription? {
        try Row.fetchOne(db, sql: """
            SELECT \(Self.subscriptionColumns) FROM subscriptions
            WHERE container = ? AND environment = ? AND scope = ? AND owner = ? AND subscriber = ? AND subscription_id = ?
            """, arguments: databaseArguments(database) + [subscriber, id]).map(subscription)
    }

    func putSubscription(_ subscription: StoredSubscription) throws {
        try db.execute(sql: """
            INSERT OR REPLACE INTO subscriptions (\(Self.subscriptionColumns)) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)
            """, arguments: databaseArguments(subscription.database) + [
                subscription.subscriber, subscription.subscriptionID, subscription.kind.rawValue, subscription.queryText, subscription.zoneName,
                subscription.zoneWide, subscription.firesOn.rawValue, subscription.firesOnce, subscription.notificationInfoText, subscription.createdAt,
            ])
        try bumpGeneration(subscription.database)
    }

    func deleteSubscription(database: DatabaseKey, subscriber: String, id: String) throws -> Bool {
        try db.execute(sql: """
            DELETE FROM subscriptions WHERE container = ? AND environment = ? AND scope = ? AND owner = ? AND subscriber = ? AND subscription_id = ?
            """, arguments: databaseArguments(database) + [subscriber, id])
        guard db.changesCount > 0 else { return false }
        try bumpGeneration(database)
        return true
    }

    private func bumpGeneration(_ database: DatabaseKey) throws {
        try db.execute(sql: """
            INSERT INTO subscription_generations (container, environment, scope, owner, generation) VALUES (?, ?, ?, ?, 1)
            ON CONFLICT (container, environment, scope, owner) DO UPDATE SET generation = generation + 1
            """, arguments: databaseArguments(database))
    }

    func subscriptionGeneration(database: DatabaseKey) throws -> Int64 {
        try Int64.fetchOne(db, sql: """
            SELECT generation FROM subscription_generations WHERE container = ? AND environment = ? AND scope = ? AND owner = ?
            """, arguments: databaseArguments(database)) ?? 0
    }

    // MARK: Notification logs

    private func logArguments(_ key: NotificationLogKey) -> StatementArguments {
        [key.container, key.environment.rawValue, key.user]
    }

    func appendNotifications(_ notifications: [NewNotification], to key: NotificationLogKey, createdAt: Int64, retain: Int) throws -> NotificationLogHead {
        var current = try notificationHead(key)
        guard !notifications.isEmpty else { return current }
        let statement = try db.cachedStatement(sql: """
            INSERT INTO notifications (container, environment, user_name, sequence, notification_id, payload, created_at) VALUES (?, ?, ?, ?, ?, ?, ?)
            """)
        for notification in notifications {
            current.head += 1
            try statement.execute(arguments: logArguments(key) + [
                current.head, notification.notificationID, String(decoding: notification.payload.serialized(), as: UTF8.self), createdAt,
            ])
        }
        if current.head - current.floor > Int64(retain) {
            current.floor = current.head - Int64(retain)
            try db.execute(sql: "DELETE FROM notifications WHERE container = ? AND environment = ? AND user_name = ? AND sequence <= ?",
                           arguments: logArguments(key) + [current.floor])
        }
        try db.execute(sql: """
            INSERT INTO notification_logs (container, environment, user_name, head, floor) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (container, environment, user_name) DO UPDATE SET head = excluded.head, floor = excluded.floor
            """, arguments: logArguments(key) + [current.head, current.floor])
        return current
    }

    func notifications(_ key: NotificationLogKey, after sequence: Int64, limit: Int) throws -> [StoredNotification] {
        try Row.fetchAll(db, sql: """
            SELECT sequence, notification_id, payload, created_at FROM notifications
            WHERE container = ? AND environment = ? AND user_name = ? AND sequence > ? ORDER BY sequence LIMIT ?
            """, arguments: logArguments(key) + [sequence, limit]).map { row in
                let text: String = row["payload"]
                return StoredNotification(key: key, sequence: row["sequence"], notificationID: row["notification_id"],
                                          payload: try JSONValue.parse(Data(text.utf8)), createdAt: row["created_at"])
            }
    }

    func notificationHead(_ key: NotificationLogKey) throws -> NotificationLogHead {
        try Row.fetchOne(db.cachedStatement(sql: "SELECT head, floor FROM notification_logs WHERE container = ? AND environment = ? AND user_name = ?"),
                         arguments: logArguments(key)).map { NotificationLogHead(head: $0["head"], floor: $0["floor"]) }
            ?? NotificationLogHead(head: 0, floor: 0)
    }

    func notificationHeads(_ keys: [NotificationLogKey]) throws -> [NotificationLogKey: NotificationLogHead] {
        var heads: [NotificationLogKey: NotificationLogHead] = [:]
        let statement = try db.cachedStatement(sql: "SELECT head, floor FROM notification_logs WHERE container = ? AND environment = ? AND user_name = ?")
        for key in Set(keys) {
            if let row = try Row.fetchOne(statement, arguments: logArguments(key)) {
                heads[key] = NotificationLogHead(head: row["head"], floor: row["floor"])
            }
        }
        return heads
    }

    func notificationSequence(_ key: NotificationLogKey, notificationID: String) throws -> Int64? {
        try Int64.fetchOne(db, sql: """
            SELECT sequence FROM notifications WHERE container = ? AND environment = ? AND user_name = ? AND notification_id = ?
            """, arguments: logArguments(key) + [notificationID])
    }

    func pruneNotifications(createdBefore cutoff: Int64) throws -> Int {
        try db.execute(sql: """
            UPDATE notification_logs SET floor = max(floor, (
                SELECT max(sequence) FROM notifications n
                WHERE n.container = notification_logs.container AND n.environment = notification_logs.environment
                  AND n.user_name = notification_logs.user_name AND n.created_at < ?))
            WHERE EXISTS (SELECT 1 FROM notifications n
                WHERE n.container = notification_logs.container AND n.environment = notification_logs.environment
                  AND n.user_name = notification_logs.user_name AND n.created_at < ?)
            """, arguments: [cutoff, cutoff])
        try db.execute(sql: """
            DELETE FROM notifications WHERE sequence <= (SELECT floor FROM notification_logs l
                WHERE l.container = notifications.container AND l.environment = notifications.environment AND l.user_name = notifications.user_name)
            """)
        return db.changesCount
    }

    func announceNotifications(_ heads: [NotificationLogKey: Int64], channel: String?) throws {
        // Nothing inside the transaction: the hub tells the other processes after the commit.
    }

    // MARK: Push tokens

    func putPushToken(digest: String, token: StoredPushToken) throws -> Bool {
        if let existing = try Row.fetchOne(db, sql: "SELECT container, environment, user_name FROM push_tokens WHERE digest = ?", arguments: [digest]) {
            let owner = (existing["container"] as String, existing["environment"] as String, existing["user_name"] as String)
            guard owner == (token.key.container, token.key.environment.rawValue, token.key.user) else { return false }
        }
        try db.execute(sql: """
            INSERT OR REPLACE INTO push_tokens (digest, container, environment, user_name, apns_environment, created_at, expires_at)
            VALUES (?, ?, ?, ?, ?, ?, ?)
            """, arguments: [digest] + logArguments(token.key) + [token.apnsEnvironment, token.createdAt, token.expiresAt])
        return true
    }

    func pushToken(digest: String, now: Int64) throws -> StoredPushToken? {
        guard let row = try Row.fetchOne(db, sql: """
            SELECT container, environment, user_name, apns_environment, created_at, expires_at FROM push_tokens WHERE digest = ? AND expires_at > ?
            """, arguments: [digest, now]) else { return nil }
        guard let environment = CloudKitEnvironment(rawValue: row["environment"]) else { return nil }
        return StoredPushToken(key: NotificationLogKey(container: row["container"], environment: environment, user: row["user_name"]),
                               apnsEnvironment: row["apns_environment"], createdAt: row["created_at"], expiresAt: row["expires_at"])
    }
}
