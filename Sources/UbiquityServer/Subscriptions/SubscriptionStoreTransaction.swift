// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// The storage primitives of subscriptions and push, inside one store transaction. Both record
/// stores' transactions conform (`SQLiteTransaction+Subscriptions.swift`,
/// `PostgresTransaction+Subscriptions.swift`); the tables come from the `v3-subscriptions`
/// migration.
///
/// Notification logs are per user (`NotificationLogKey`): `appendNotifications` takes the log's
/// head row for update, so sequences are handed out in commit order without gaps, across
/// processes too (PostgreSQL holds the row lock until commit; SQLite has one writer).
package protocol SubscriptionStoreTransaction {
    // MARK: Subscriptions

    /// Every subscription on a database (all subscribers), for matching changes.
    func subscriptions(database: DatabaseKey) async throws -> [StoredSubscription]
    /// A subscriber's subscriptions on a database, by ID.
    func subscriptions(database: DatabaseKey, subscriber: String) async throws -> [StoredSubscription]
    /// One subscription.
    func subscription(database: DatabaseKey, subscriber: String, id: String) async throws -> StoredSubscription?
    /// Inserts or replaces a subscription (by database, subscriber and ID) and bumps the
    /// database's subscription generation.
    func putSubscription(_ subscription: StoredSubscription) async throws
    /// Deletes a subscription (and bumps the generation); false when there was none.
    func deleteSubscription(database: DatabaseKey, subscriber: String, id: String) async throws -> Bool
    /// A counter that changes whenever a subscription of the database is saved or deleted, by any
    /// process: matchers cache a database's subscriptions and reload them when it moves.
    func subscriptionGeneration(database: DatabaseKey) async throws -> Int64

    // MARK: Notification logs

    /// Appends notifications to a user's log, in order, and returns the new head. Locks the log's
    /// head until the transaction ends. When the log then holds more than `retain` entries the
    /// oldest are pruned (and the floor moves).
    func appendNotifications(_ notifications: [NewNotification], to key: NotificationLogKey, createdAt: Int64, retain: Int) async throws -> NotificationLogHead
    /// Entries of a log after `sequence`, oldest first, at most `limit`.
    func notifications(_ key: NotificationLogKey, after sequence: Int64, limit: Int) async throws -> [StoredNotification]
    /// The log's head and floor (zeros for a log never written).
    func notificationHead(_ key: NotificationLogKey) async throws -> NotificationLogHead
    /// The heads of several logs (logs never written are absent).
    func notificationHeads(_ keys: [NotificationLogKey]) async throws -> [NotificationLogKey: NotificationLogHead]
    /// The sequence of the entry with this notification ID in the log, if it is still there.
    func notificationSequence(_ key: NotificationLogKey, notificationID: String) async throws -> Int64?
    /// Deletes entries created before `cutoff` (ms since 1970) from every log, moving floors.
    /// Returns how many were deleted.
    func pruneNotifications(createdBefore cutoff: Int64) async throws -> Int

    /// Tells the other server processes on the same store, when the transaction commits, that
    /// these logs moved (PostgreSQL: `pg_notify` on `channel`, the store's push channel; SQLite:
    /// nothing, the hub announces after the commit).
    func announceNotifications(_ heads: [NotificationLogKey: Int64], channel: String?) async throws

    // MARK: Push tokens

    /// Stores a push token's digest for a user (`tokens/create`, `tokens/register`). Returns
    /// false, storing nothing, when the digest is already bound to another user.
    func putPushToken(digest: String, token: StoredPushToken) async throws -> Bool
    /// The live push token with this digest (not expired at `now`).
    func pushToken(digest: String, now: Int64) async throws -> StoredPushToken?
}

/// The stores whose transactions can hold subscriptions.
extension RecordStoreTransaction {
    /// This transaction as a subscription store transaction, or an error naming the store type.
    func subscriptionStore() throws -> any SubscriptionStoreTransaction {
        guard let tx = self as? any SubscriptionStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store (\(type(of: self))) does not keep subscriptions")
        }
        return tx
    }
}
