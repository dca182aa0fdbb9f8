// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// A connected client's way through its notification log: its position (the sequence of the
/// last notification delivered), its mailbox at the hub, and the log to catch up from. Used by
/// both the WebSocket channel and long-poll.
///
/// Delivery is at-least-once and in log order: a client resumes after the last notification it
/// saw (`since` = notification ID, or `position`); a position the log no longer holds (pruned,
/// unknown) gives one `.resync` (fetch changes with change tokens), then the feed goes on from
/// the oldest entry still there.
struct NotificationFeed {
    /// What `next` found.
    enum Event: Sendable {
        /// Notifications after the position, in order (the position moved to the last).
        case notifications([StoredNotification])
        /// Notifications were lost to the client (pruned, or an unknown resume point): it should
        /// fetch changes with its change tokens. The position moved to `position`.
        case resync(position: Int64)
        /// The hub closed the feed (the server is stopping).
        case closed
        /// Nothing arrived before the deadline.
        case timedOut
    }

    let store: any RecordStore
    let hub: NotificationHub
    let listener: NotificationListener
    let pageSize: Int
    /// The sequence of the last notification delivered.
    private(set) var position: Int64
    private var mustRead = true
    private var pendingResync: Bool

    /// Opens a feed of `key`'s log. The resume point is `position` if given, else the entry with
    /// notification ID `since`, else the log's head (only notifications from now on). A resume
    /// point the log no longer holds makes the first event `.resync`.
    static func open(store: any RecordStore, hub: NotificationHub, key: NotificationLogKey, since: String?, position requested: Int64?,
                     configuration: PushConfiguration) async throws -> NotificationFeed {
        let (head, found) = try await store.read { tx -> (NotificationLogHead, Int64?) in
            let subscriptions = try tx.subscriptionStore()
            let head = try await subscriptions.notificationHead(key)
            if requested == nil, let since, !since.isEmpty { return (head, try await subscriptions.notificationSequence(key, notificationID: since)) }
            return (head, nil)
        }
        var start = head.head
        var resync = false
        if let requested {
            if requested < head.floor || requested > head.head { resync = true } else { start = requested }
        } else if let since, !since.isEmpty {
            if let found { start = found } else { resync = true }
        }
        if resync { start = requested.map { $0 < head.floor ? head.floor : head.head } ?? head.head }
        let listener = NotificationListener(key: key, capacity: configuration.connectionQueueCapacity)
        guard await hub.register(listener, position: start) else { throw UbiquityError(.serviceUnavailable, "the server is stopping") }
        return NotificationFeed(store: store, hub: hub, listener: listener, pageSize: configuration.pageSize, position: start, pendingResync: resync)
    }

    private init(store: any RecordStore, hub: NotificationHub, listener: NotificationListener, pageSize: Int, position: Int64, pendingResync: Bool) {
        self.store = store
        self.hub = hub
        self.listener = listener
        self.pageSize = pageSize
        self.position = position
        self.pendingResync = pendingResync
    }

    /// The next event; waits (until `deadline`, or for ever) when nothing is new.
    mutating func next(deadline: ContinuousClock.Instant? = nil) async throws -> Event {
        if pendingResync {
            pendingResync = false
            return .resync(position: position)
        }
        let key = listener.key
        while true {
            if Task.isCancelled { return .closed }
            let mail = listener.take()
            if mail.closed { return .closed }
            let fresh = mail.notifications.filter { $0.sequence > position }
            if mail.overflowed || (fresh.first.map { $0.sequence != position + 1 } ?? false) { mustRead = true }
            if mustRead {
                let after = position
                let limit = pageSize
                let (page, head) = try await store.read { tx in
                    let subscriptions = try tx.subscriptionStore()
                    return (try await subscriptions.notifications(key, after: after, limit: limit), try await subscriptions.notificationHead(key))
                }
                if head.floor > position {
                    position = head.floor
                    return .resync(position: position)
                }
                mustRead = page.count >= limit
                if let last = page.last {
                    position = last.sequence
                    return .notifications(page)
                }
            } else if let last = fresh.last {
                position = last.sequence
                return .notifications(fresh)
            }
            if let deadline {
                if ContinuousClock.now >= deadline { return .timedOut }
                let listener = self.listener
                await withTaskGroup(of: Void.self) { group in
                    group.addTask { await listener.wait() }
                    group.addTask { try? await Task.sleep(until: deadline, clock: .continuous) }
                    await group.next()
                    group.cancelAll()
                }
            } else {
                await listener.wait()
            }
        }
    }

    /// Leaves the hub.
    func close() async {
        await hub.unregister(listener)
    }
}
