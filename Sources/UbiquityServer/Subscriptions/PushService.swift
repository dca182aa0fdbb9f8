// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import ServiceLifecycle
import UbiquityCore

/// Subscriptions and push for one server process: the matcher the engine calls in every write
/// transaction, the hub that delivers to the clients connected here, the endpoints, and the
/// cross-process signal (PostgreSQL `LISTEN/NOTIFY`, or datagrams between processes sharing a
/// SQLite data directory). As a `Service` it runs the signal, the periodic sweep of connected
/// logs and the pruning of old log entries; on graceful shutdown it closes every feed so
/// long-polls and WebSockets end at once.
package final class PushService: Service, Sendable {
    /// The `RecordChangeObserver` to give the engine.
    package let matcher: SubscriptionMatcher
    /// `subscriptions/*` and `tokens/*`.
    package let endpoint: SubscriptionsEndpoint
    /// The storage.
    package let store: any RecordStore
    /// Limits and timings.
    package let configuration: PushConfiguration
    let hub: NotificationHub
    let signal: (any PushSignal)?
    let logger: Logger

    /// Sets up push over `store` (signals between processes for the two built-in stores).
    package init(store: any RecordStore, configuration: PushConfiguration = PushConfiguration(), logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
        var channel: String?
        var signal: (any PushSignal)?
        if let postgres = store as? PostgresRecordStore {
            let postgresSignal = PostgresPushSignal(store: postgres, logger: logger)
            channel = postgresSignal.channel
            signal = postgresSignal
        } else if let sqlite = store as? SQLiteRecordStore {
            do {
                signal = try SQLitePushSignal(dataDirectory: URL(fileURLWithPath: sqlite.path).deletingLastPathComponent(), logger: logger)
            } catch {
                logger.warning("no push signal between processes sharing the data directory; other processes' saves arrive by the sweep",
                               metadata: ["error": "\(error)"])
            }
        }
        self.signal = signal
        matcher = SubscriptionMatcher(configuration: configuration, channel: channel, logger: logger)
        endpoint = SubscriptionsEndpoint(store: store, configuration: configuration)
        let hub = NotificationHub(store: store, configuration: configuration, logger: logger)
        self.hub = hub
        matcher.onLogsMoved { [signal] heads in
            signal?.announce(heads)
            await hub.logsMoved(heads)
        }
    }

    /// Runs the signal, the sweep and the pruning until graceful shutdown or cancellation.
    package func run() async throws {
        let hub = self.hub
        let signal = self.signal
        let configuration = self.configuration
        let store = self.store
        let logger = self.logger
        await withGracefulShutdownHandler {
            await cancelWhenGracefulShutdown {
                await withTaskGroup(of: Void.self) { group in
                    if let signal {
                        group.addTask {
                            await signal.run { heads in
                                if let heads { await hub.logsMoved(heads) } else { await hub.sweep() }
                            }
                        }
                    }
                    group.addTask {
                        while !Task.isCancelled {
                            do { try await Task.sleep(for: .seconds(max(1, configuration.sweepInterval))) } catch { return }
                            await hub.sweep()
                        }
                    }
                    group.addTask {
                        while !Task.isCancelled {
                            let cutoff = Int64(Date().timeIntervalSince1970 * 1000) - configuration.maximumAge * 1000
                            do {
                                let pruned = try await store.write { tx in try await tx.subscriptionStore().pruneNotifications(createdBefore: cutoff) }
                                if pruned > 0 { logger.debug("pruned old notifications", metadata: ["count": "\(pruned)"]) }
                            } catch {
                                logger.warning("pruning old notifications failed", metadata: ["error": "\(error)"])
                            }
                            do { try await Task.sleep(for: .seconds(600)) } catch { return }
                        }
                    }
                    await group.waitForAll()
                }
            }
        } onGracefulShutdown: {
            signal?.stop()
            Task { await hub.shutdown() }
        }
        signal?.stop()
        await hub.shutdown()
    }

    /// Closes every feed and stops the signal (also done by `run` on graceful shutdown).
    package func shutdown() async {
        signal?.stop()
        await hub.shutdown()
    }

    /// How many clients are connected to this process (WebSockets and long-polls).
    package var connectedClients: Int {
        get async { await hub.listenerCount }
    }

    /// The user and environment a push token stands for, or nil when unknown or expired.
    func logKey(forToken token: String) async throws -> NotificationLogKey? {
        guard !token.isEmpty, token.utf8.count <= 512 else { return nil }
        let digest = SecretToken.digest(token)
        let now = Int64(Date().timeIntervalSince1970 * 1000)
        return try await store.read { tx in try await tx.subscriptionStore().pushToken(digest: digest, now: now)?.key }
    }
}
