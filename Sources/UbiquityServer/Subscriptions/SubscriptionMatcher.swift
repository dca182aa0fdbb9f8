// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore

/// The `RecordChangeObserver` of subscriptions: inside each write transaction it matches the
/// changes against the subscriptions of the databases they touch and appends the notifications
/// to the subscribers' logs (so they commit with the change, or not at all); after the commit it
/// wakes the hub, which delivers them.
///
/// Each database's subscriptions are cached as a `SubscriptionIndex` and reloaded when the
/// database's subscription generation (one indexed row, read in the transaction) moved, which
/// any process's `subscriptions/modify` does. A save thus costs one small read plus the
/// subscriptions of its record type.
package final class SubscriptionMatcher: RecordChangeObserver {
    let configuration: PushConfiguration
    let logger: Logger
    /// The PostgreSQL `NOTIFY` channel (nil on SQLite).
    let channel: String?
    let now: @Sendable () -> Int64
    /// Database → its index.
    private let cache = Mutex<[DatabaseKey: SubscriptionIndex]>([:])
    /// The logs a transaction moved, from `changesWillCommit` to `changesDidCommit` (keyed by
    /// ``ChangesKey``; entries of transactions that rolled back are dropped when it grows).
    private let moved = Mutex<[ChangesKey: [NotificationLogKey: Int64]]>([:])
    /// Told after each commit that moved logs.
    private let listener = Mutex(CallbackSlot<@Sendable ([NotificationLogKey: Int64]) async -> Void>())

    /// The most databases whose index is cached.
    static let cacheLimit = 10_000

    /// Makes a matcher. `channel` is the store's PostgreSQL push channel (nil for SQLite).
    package init(configuration: PushConfiguration = PushConfiguration(), channel: String? = nil, logger: Logger,
                now: @escaping @Sendable () -> Int64 = { Int64(Date().timeIntervalSince1970 * 1000) }) {
        self.configuration = configuration
        self.channel = channel
        self.logger = logger
        self.now = now
    }

    /// Sets what is called after a commit that moved logs (the hub's wake-up).
    func onLogsMoved(_ body: @escaping @Sendable ([NotificationLogKey: Int64]) async -> Void) {
        listener.withLock { $0.callback = body }
    }

    /// Matches and appends notifications, inside the write transaction.
    package func changesWillCommit(_ changes: [StoreChange], in tx: any RecordStoreTransaction) async throws {
        guard let store = tx as? any SubscriptionStoreTransaction else { return }
        var byDatabase: [DatabaseKey: [StoreChange]] = [:]
        var order: [DatabaseKey] = []
        for change in changes {
            let key: DatabaseKey
            switch change {
            case .record(let record): key = record.database
            case .zone(let zone): key = zone.database
            }
            if byDatabase[key] == nil { order.append(key) }
            byDatabase[key, default: []].append(change)
        }
        var pending: [NotificationLogKey: [NewNotification]] = [:]
        for key in order {
            let index = try await self.index(for: key, in: store)
            guard !index.isEmpty, let databaseChanges = byDatabase[key] else { continue }
            let firings = index.match(databaseChanges)
            var spent: [StoredSubscription] = []
            // In the public database a subscriber hears only of records its security roles let it read.
            var readers: [String: RecordAccess] = [:]
            var types: [String: RecordTypeSchema?] = [:]  // read once for all subscribers
            for firing in firings {
                if key.scope == .public, case .query(let change) = firing.kind {
                    let subscriber = firing.subscription.subscriber
                    var access = readers[subscriber]
                        ?? RecordAccess(key: key, caller: RecordsCaller(identity: .user(accountID: 0, userRecordName: subscriber)), types: types)
                    let readable = try await access.canRead(change.kind == .deleted ? (change.previous ?? change.record) : change.record, tx: tx)
                    readers[subscriber] = access
                    types.merge(access.readTypes) { current, _ in current }
                    guard readable else { continue }
                }
                let notificationID = UUID().uuidString.lowercased()
                let payload = NotificationPayload.make(firing.kind, subscription: firing.subscription, notificationID: notificationID)
                let log = NotificationLogKey(container: key.container, environment: key.environment, user: firing.subscription.subscriber)
                pending[log, default: []].append(NewNotification(notificationID: notificationID, payload: payload))
                if firing.subscription.firesOnce { spent.append(firing.subscription) }
            }
            for subscription in spent {
                _ = try await store.deleteSubscription(database: key, subscriber: subscription.subscriber, id: subscription.subscriptionID)
            }
            if !spent.isEmpty { _ = cache.withLock { $0.removeValue(forKey: key) } }
        }
        guard !pending.isEmpty else {
            _ = moved.withLock { $0.removeValue(forKey: ChangesKey(changes)) }
            return
        }
        let timestamp = now()
        var heads: [NotificationLogKey: Int64] = [:]
        // Always in the same order, so two transactions appending to the same logs cannot deadlock.
        for log in pending.keys.sorted() {
            heads[log] = try await store.appendNotifications(pending[log] ?? [], to: log, createdAt: timestamp, retain: configuration.retainPerUser).head
        }
        try await store.announceNotifications(heads, channel: channel)
        let key = ChangesKey(changes)
        moved.withLock { table in
            if table.count > 256 { table.removeAll() }
            table[key] = heads
        }
    }

    /// Wakes the hub for the logs the transaction moved.
    package func changesDidCommit(_ changes: [StoreChange]) async {
        let key = ChangesKey(changes)
        guard let heads = moved.withLock({ $0.removeValue(forKey: key) }), !heads.isEmpty else { return }
        await listener.withLock({ $0.callback })?(heads)
    }

    /// The index of a database's subscriptions, from the cache when its generation still holds.
    func index(for key: DatabaseKey, in store: any SubscriptionStoreTransaction) async throws -> SubscriptionIndex {
        let generation = try await store.subscriptionGeneration(database: key)
        if let cached = cache.withLock({ $0[key] }), cached.generation == generation { return cached }
        let index = SubscriptionIndex(generation: generation, subscriptions: generation == 0 ? [] : try await store.subscriptions(database: key))
        cache.withLock { cache in
            if cache.count >= Self.cacheLimit { cache.removeAll() }
            cache[key] = index
        }
        return index
    }
}

/// What tells one transaction's changes from another's in ``SubscriptionMatcher``: each record
/// change's zone and sequence number (unique per change) and each zone change's zone — not the
/// changes themselves, whose records (with their fields, inline content and all) would be
/// hashed and compared whole at every commit (a few percent of the server's CPU on a batch of
/// 200 small files).
struct ChangesKey: Hashable {
    private var parts: [Int64] = []

    init(_ changes: [StoreChange]) {
        parts.reserveCapacity(changes.count * 2)
        for change in changes {
            switch change {
            case .record(let change):
                parts.append(change.record.zone)
                parts.append(change.record.sequence)
            case .zone(let change):
                parts.append(change.zone.id)
                parts.append(change.deleted ? -2 : -1)
            }
        }
    }
}
