// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore
import UbiquityWire

/// Subscriptions, notification logs and push tokens in PostgreSQL (tables of the
/// `v3-subscriptions` migration). Appending to a log takes its head row `FOR UPDATE` (through
/// `INSERT … ON CONFLICT DO UPDATE`), which serializes the appenders of one log across processes
/// until they commit, so sequences follow commit order without gaps.
extension PostgresTransaction: SubscriptionStoreTransaction {
    private static let subscriptionColumns = """
        container, environment, scope, owner, subscriber, subscription_id, kind, query, zone_name, zone_wide, fires_on, fires_once, notification_info, created_at
        """

    private func subscription(_ row: PostgresRandomAccessRow) throws -> StoredSubscription {
        guard let environment = CloudKitEnvironment(rawValue: try row.value("environment")),
              let scope = CloudKitDatabaseScope(rawValue: try row.value("scope")) else {
            throw UbiquityError(.protocolError, "a stored subscription names an unknown environment or database")
        }
        let key = DatabaseKey(container: try row.value("container"), environment: environment, scope: scope, owner: try row.value("owner"))
        return try StoredSubscription.fromColumns(
            database: key, subscriber: try row.value("subscriber"), subscriptionID: try row.value("subscription_id"), kind: try row.value("kind"),
            queryText: try row.value("query"), zoneName: try row.value("zone_name"), zoneWide: try row.value("zone_wide"),
            firesOn: Int(try row.value("fires_on", as: Int64.self)), firesOnce: try row.value("fires_once"),
            notificationInfoText: try row.value("notification_info"), createdAt: try row.value("created_at"))
    }

    private func databaseParameters(_ key: DatabaseKey) -> [PostgresParameter] {
        [.text(key.container), .text(key.environment.rawValue), .text(key.scope.rawValue), .text(key.owner)]
    }

    func subscriptions(database: DatabaseKey) async throws -> [StoredSubscription] {
        try await session.rows("""
            SELECT \(Self.subscriptionColumns) FROM subscriptions
            WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4 ORDER BY subscriber, subscription_id
            """, databaseParameters(database)).map(subscription)
    }

    func subscriptions(database: DatabaseKey, subscriber: String) async throws -> [StoredSubscription] {
        try await session.rows("""
            SELECT \(Self.subscriptionColumns) FROM subscriptions
            WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4 AND subscriber = $5 ORDER BY subscription_id
            """, databaseParameters(database) + [.text(subscriber)]).map(subscription)
    }

    func subscription(database: DatabaseKey, subscriber: String, id: String) async throws -> StoredSubscription? {
        try await session.row("""
            SELECT \(Self.subscriptionColumns) FROM subscriptions
            WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4 AND subscriber = $5 AND subscription_id = $6
            """, databaseParameters(database) + [.text(subscriber), .text(id)]).map(subscription)
    }

    func putSubscription(_ subscription: StoredSubscription) async throws {
        try await session.execute("""
            INSERT INTO subscriptions (\(Self.subscriptionColumns)) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14)
            ON CONFLICT (container, environment, scope, owner, subscriber, subscription_id) DO UPDATE SET
                kind = excluded.kind, query = excluded.query, zone_name = excluded.zone_name, zone_wide = excluded.zone_wide,
                fires_on = excluded.fires_on, fires_once = excluded.fires_once, notification_info = excluded.notification_info,
                created_at = excluded.created_at
            """, databaseParameters(subscription.database) + [
                .text(subscription.subscriber), .text(subscription.subscriptionID), .text(subscription.kind.rawValue), .text(subscription.queryText),
                .text(subscription.zoneName), .bool(subscription.zoneWide), .int(Int64(subscription.firesOn.rawValue)), .bool(subscription.firesOnce),
                .text(subscription.notificationInfoText), .int(subscription.createdAt),
            ])
        try await bumpGeneration(subscription.database)
    }

    func deleteSubscription(database: DatabaseKey, subscriber: String, id: String) async throws -> Bool {
        let deleted = try await session.row("""
            DELETE FROM subscriptions WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4 AND subscriber = $5 AND subscription_id = $6
            RETURNING 1 AS one
            """, databaseParameters(database) + [.text(subscriber), .text(id)])
        guard deleted != nil else { return false }
        try await bumpGeneration(database)
        return true
    }

    private func bumpGeneration(_ database: DatabaseKey) async throws {
        try await session.execute("""
            INSERT INTO subscription_generations (container, environment, scope, owner, generation) VALUES ($1, $2, $3, $4, 1)
            ON CONFLICT (container, environment, scope, owner) DO UPDATE SET generation = subscription_generations.generation + 1
            """, databaseParameters(database))
    }

    func subscriptionGeneration(database: DatabaseKey) async throws -> Int64 {
        try await session.row("""
            SELECT generation FROM subscription_generations WHERE container = $1 AND environment = $2 AND scope = $3 AND owner = $4
            """, databaseParameters(database)).map { try $0.value("generation") } ?? 0
    }

    // MARK: Notification logs

    private func logParameters(_ key: NotificationLogKey) -> [PostgresParameter] {
        [.text(key.container), .text(key.environment.rawValue), .text(key.user)]
    }

    func appendNotifications(_ notifications: [NewNotification], to key: NotificationLogKey, createdAt: Int64, retain: Int) async throws -> NotificationLogHead {
        guard !notifications.isEmpty else { return try await notificationHead(key) }
        // Moving the head first locks the log's row until commit: other appenders wait here.
        guard let row = try await session.row("""
            INSERT INTO notification_logs (container, environment, user_name, head, floor) VALUES ($1, $2, $3, $4, 0)
            ON CONFLICT (container, environment, user_name) DO UPDATE SET head = notification_logs.head + $4
            RETURNING head, floor
            """, logParameters(key) + [.int(Int64(notifications.count))]) else {
            throw UbiquityError(.protocolError, "appending to the notification log of \(key) returned no head")
        }
        var current = NotificationLogHead(head: try row.value("head"), floor: try row.value("floor"))
        let first = current.head - Int64(notifications.count) + 1
        try await session.execute("""
            INSERT INTO notifications (container, environment, user_name, sequence, notification_id, payload, created_at)
            SELECT $1, $2, $3, s, n, p, $7 FROM unnest($4::BIGINT[], $5::TEXT[], $6::TEXT[]) AS t(s, n, p)
            """, logParameters(key) + [
                .ints(notifications.indices.map { first + Int64($0) }),
                .texts(notifications.map(\.notificationID)),
                .texts(notifications.map { String(decoding: $0.payload.serialized(), as: UTF8.self) }),
                .int(createdAt),
            ])
        if current.head - current.floor > Int64(retain) {
            current.floor = current.head - Int64(retain)
            try await session.execute("DELETE FROM notifications WHERE container = $1 AND environment = $2 AND user_name = $3 AND sequence <= $4",
                                logParameters(key) + [.int(current.floor)])
            try await session.execute("UPDATE notification_logs SET floor = $4 WHERE container = $1 AND environment = $2 AND user_name = $3",
                                logParameters(key) + [.int(current.floor)])
        }
        return current
    }

    func notifications(_ key: NotificationLogKey, after sequence: Int64, limit: Int) async throws -> [StoredNotification] {
        try await session.rows("""
            SELECT sequence, notification_id, payload, created_at FROM notifications
            WHERE container = $1 AND environment = $2 AND user_name = $3 AND sequence > $4 ORDER BY sequence LIMIT $5
            """, logParameters(key) + [.int(sequence), .int(Int64(limit))]).map { row in
                let text: String = try row.value("payload")
                return StoredNotification(key: key, sequence: try row.value("sequence"), notificationID: try row.value("notification_id"),
                                          payload: try JSONValue.parse(Data(text.utf8)), createdAt: try row.value("created_at"))
            }
    }

    func notificationHead(_ key: NotificationLogKey) async throws -> NotificationLogHead {
        try await session.row("SELECT head, floor FROM notification_logs WHERE container = $1 AND environment = $2 AND user_name = $3",
                        logParameters(key)).map { NotificationLogHead(head: try $0.value("head"), floor: try $0.value("floor")) }
            ?? NotificationLogHead(head: 0, floor: 0)
    }

    func notificationHeads(_ keys: [NotificationLogKey]) async throws -> [NotificationLogKey: NotificationLogHead] {
        let unique = Array(Set(keys))
        guard !unique.isEmpty else { return [:] }
        let rows = try await session.rows("""
            SELECT l.container, l.environment, l.user_name, l.head, l.floor
            FROM unnest($1::TEXT[], $2::TEXT[], $3::TEXT[]) AS k(c, e, u)
            JOIN notification_logs l ON l.container = k.c AND l.environment = k.e AND l.user_name = k.u
            """, [.texts(unique.map(\.container)), .texts(unique.map(\.environment.rawValue)), .texts(unique.map(\.user))])
        var heads: [NotificationLogKey: NotificationLogHead] = [:]
        for row in rows {
            guard let environment = CloudKitEnvironment(rawValue: try row.value("environment")) else { continue }
            let key = NotificationLogKey(container: try row.value("container"), environment: environment, user: try row.value("user_name"))
            heads[key] = NotificationLogHead(head: try row.value("head"), floor: try row.value("floor"))
        }
        return heads
    }

    func notificationSequence(_ key: NotificationLogKey, notificationID: String) async throws -> Int64? {
        try await session.row("""
            SELECT sequence FROM notifications WHERE container = $1 AND environment = $2 AND user_name = $3 AND notification_id = $4
            """, logParameters(key) + [.text(notificationID)]).map { try $0.value("sequence") }
    }

    func pruneNotifications(createdBefore cutoff: Int64) async throws -> Int {
        try await session.execute("""
            UPDATE notification_logs l SET floor = GREATEST(l.floor, old.last)
            FROM (SELECT container, environment, user_name, max(sequence) AS last FROM notifications WHERE created_at < $1
                  GROUP BY container, environment, user_name) AS old
            WHERE l.container = old.container AND l.environment = old.environment AND l.user_name = old.user_name
            """, [.int(cutoff)])
        let deleted = try await session.rows("""
            DELETE FROM notifications n USING notification_logs l
            WHERE l.container = n.container AND l.environment = n.environment AND l.user_name = n.user_name AND n.sequence <= l.floor
            RETURNING 1 AS one
            """)
        return deleted.count
    }

    /// The largest `pg_notify` payload PostgreSQL takes is just under 8000 bytes; heads are sent
    /// in as many notifications as they need.
    static let notifyPayloadLimit = 7_000

    func announceNotifications(_ heads: [NotificationLogKey: Int64], channel: String?) async throws {
        guard !heads.isEmpty, let channel else { return }
        for payload in PushAnnouncement.encode(heads, limit: Self.notifyPayloadLimit) {
            try await session.execute("SELECT pg_notify($1, $2)", [.text(channel), .text(payload)])
        }
    }

    // MARK: Push tokens

    func putPushToken(digest: String, token: StoredPushToken) async throws -> Bool {
        let row = try await session.row("""
            INSERT INTO push_tokens (digest, container, environment, user_name, apns_environment, created_at, expires_at)
            VALUES ($1, $2, $3, $4, $5, $6, $7)
            ON CONFLICT (digest) DO UPDATE SET apns_environment = excluded.apns_environment, expires_at = excluded.expires_at
            WHERE push_tokens.container = excluded.container AND push_tokens.environment = excluded.environment
              AND push_tokens.user_name = excluded.user_name
            RETURNING 1 AS one
            """, [.text(digest)] + logParameters(token.key) + [.text(token.apnsEnvironment), .int(token.createdAt), .int(token.expiresAt)])
        return row != nil
    }

    func pushToken(digest: String, now: Int64) async throws -> StoredPushToken? {
        guard let row = try await session.row("""
            SELECT container, environment, user_name, apns_environment, created_at, expires_at FROM push_tokens WHERE digest = $1 AND expires_at > $2
            """, [.text(digest), .int(now)]) else { return nil }
        guard let environment = CloudKitEnvironment(rawValue: try row.value("environment")) else { return nil }
        return StoredPushToken(key: NotificationLogKey(container: try row.value("container"), environment: environment, user: try row.value("user_name")),
                               apnsEnvironment: try row.value("apns_environment"), createdAt: try row.value("created_at"),
                               expiresAt: try row.value("expires_at"))
    }
}

/// The `LISTEN`/`NOTIFY` channel of a PostgreSQL record store: one per schema, since
/// notifications are per database (several stores, and tests, share one database in different
/// schemas).
enum PostgresPushChannel {
    /// `ubiquity_push_` and a hash of the schema name (or `public`), a valid unquoted identifier.
    static func name(schema: String?) -> String {
        let text = schema ?? "public"
        var hash: UInt64 = 0xcbf2_9ce4_8422_2325
        for byte in text.utf8 {
            hash ^= UInt64(byte)
            hash = hash &* 0x0000_0100_0000_01b3
        }
        return "ubiquity_push_" + String(hash, radix: 16)
    }
}
