// SPDX-License-Identifier: Apache-2.0
import Logging
import UbiquityCore

/// Fans committed notifications out to the clients connected to this process.
///
/// When a log moves (a local commit, another process's announcement, or the periodic sweep),
/// the hub reads the new entries once — only for logs someone here follows — and offers them
/// to each of that log's listeners. Listeners are bounded (`NotificationListener`): one that
/// overflows, or sees a gap, reads the log itself from the last position it delivered. The hub
/// never waits for a client.
actor NotificationHub {
    let store: any RecordStore
    let configuration: PushConfiguration
    let logger: Logger
    private var listeners: [NotificationLogKey: [ObjectIdentifier: NotificationListener]] = [:]
    /// Per followed log: the last sequence read and offered.
    private var fetched: [NotificationLogKey: Int64] = [:]
    /// Logs being read, and the head to read up to after the read in flight.
    private var fetching: [NotificationLogKey: Int64] = [:]
    private var closed = false

    init(store: any RecordStore, configuration: PushConfiguration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    /// Starts offering `listener` the notifications of its log after `position` (the caller
    /// catches up to the current head from the log itself). False once the hub is shut down.
    func register(_ listener: NotificationListener, position: Int64) -> Bool {
        guard !closed else { return false }
        listeners[listener.key, default: [:]][ObjectIdentifier(listener)] = listener
        fetched[listener.key] = max(fetched[listener.key] ?? 0, position)
        return true
    }

    /// Stops offering to `listener`.
    func unregister(_ listener: NotificationListener) {
        listeners[listener.key]?[ObjectIdentifier(listener)] = nil
        if listeners[listener.key]?.isEmpty == true {
            listeners[listener.key] = nil
            fetched[listener.key] = nil
        }
    }

    /// How many clients are connected (for tests and metrics).
    var listenerCount: Int { listeners.values.reduce(0) { $0 + $1.count } }

    /// The logs someone here follows.
    var followedLogs: [NotificationLogKey] { Array(listeners.keys) }

    /// Logs moved to these heads: read and offer what is new in those that are followed here.
    func logsMoved(_ heads: [NotificationLogKey: Int64]) async {
        await withTaskGroup(of: Void.self) { group in
            for (key, head) in heads where listeners[key] != nil && head > (fetched[key] ?? 0) {
                group.addTask { await self.deliver(key, upTo: head) }
            }
        }
    }

    /// Checks the heads of every followed log (after a reconnection, and periodically, so a lost
    /// announcement costs at most the sweep interval).
    func sweep() async {
        let keys = followedLogs
        guard !keys.isEmpty else { return }
        do {
            let heads = try await store.read { tx in try await tx.subscriptionStore().notificationHeads(keys) }
            await logsMoved(heads.mapValues(\.head))
        } catch {
            logger.warning("checking notification logs failed", metadata: ["error": "\(error)"])
        }
    }

    private func deliver(_ key: NotificationLogKey, upTo head: Int64) async {
        if let pending = fetching[key] {
            fetching[key] = max(pending, head)
            return
        }
        fetching[key] = head
        var target = head
        while true {
            guard let from = fetched[key], listeners[key] != nil else { break }
            if target > from {
                // Only the newest `capacity` entries are worth reading: listeners further behind
                // overflow and read the log themselves.
                let start = max(from, target - Int64(configuration.connectionQueueCapacity))
                let limit = configuration.connectionQueueCapacity
                do {
                    let rows = try await store.read { tx in try await tx.subscriptionStore().notifications(key, after: start, limit: limit) }
                    if fetched[key] != nil { fetched[key] = max(fetched[key] ?? 0, rows.last?.sequence ?? target, target) }
                    for listener in listeners[key].map({ Array($0.values) }) ?? [] { listener.offer(rows) }
                } catch {
                    logger.warning("reading a notification log failed", metadata: ["log": "\(key)", "error": "\(error)"])
                    break
                }
            }
            guard let next = fetching[key], next > (fetched[key] ?? next) else { break }
            target = next
        }
        fetching[key] = nil
    }

    /// Closes every listener (their connections end) and refuses new ones.
    func shutdown() {
        closed = true
        for listener in listeners.values.flatMap(\.values) { listener.close() }
        listeners = [:]
        fetched = [:]
    }
}
