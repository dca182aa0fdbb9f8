// SPDX-License-Identifier: Apache-2.0

/// Limits and timings of subscriptions and push delivery.
package struct PushConfiguration: Sendable {
    /// The most entries a user's notification log keeps; older ones are pruned when newer ones
    /// arrive (a client behind them is told to resync with change tokens).
    package var retainPerUser: Int
    /// How long log entries are kept, in seconds.
    package var maximumAge: Int64
    /// The most notifications waiting for one connection; past it the connection drops them and
    /// catches up from the log when it can write again.
    package var connectionQueueCapacity: Int
    /// How long a long-poll request waits for a notification, in seconds (a client may ask for
    /// less with `timeout=`).
    package var longPollTimeout: Int
    /// How long one WebSocket write may wait for a client that does not read before the
    /// connection is closed, in seconds.
    package var webSocketWriteTimeout: Int
    /// How often connected users' logs are checked even without a wake-up (a lost `NOTIFY` or
    /// datagram costs at most this much latency), in seconds.
    package var sweepInterval: Int
    /// How long a push token from `tokens/create` lives, in seconds.
    package var tokenLifetime: Int64
    /// The most notifications one delivery (a long-poll answer, a WebSocket catch-up page)
    /// carries.
    package var pageSize: Int

    /// Makes a configuration.
    package init(retainPerUser: Int = 10_000, maximumAge: Int64 = 7 * 24 * 3600, connectionQueueCapacity: Int = 256,
                longPollTimeout: Int = 25, webSocketWriteTimeout: Int = 10, sweepInterval: Int = 5,
                tokenLifetime: Int64 = 30 * 24 * 3600, pageSize: Int = 100) {
        self.retainPerUser = retainPerUser
        self.maximumAge = maximumAge
        self.connectionQueueCapacity = connectionQueueCapacity
        self.longPollTimeout = longPollTimeout
        self.webSocketWriteTimeout = webSocketWriteTimeout
        self.sweepInterval = sweepInterval
        self.tokenLifetime = tokenLifetime
        self.pageSize = pageSize
    }
}
