// SPDX-License-Identifier: Apache-2.0
import Foundation
import HummingbirdCore
import Logging
import Metrics
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

/// The server's limit on open connections (issue 24, finding 5).
///
/// Up to ``limit`` connections are served. A connection over it is answered at once with
/// HTTP 503 `TRY_AGAIN_LATER` (`retryAfter` 1, `Connection: close`) without reading its request,
/// and closed (``ConnectionRefusalHandler``); refusals are logged at most once a minute and
/// counted (`ubiquity_connections_refused_total`). So that refused connections cannot use up
/// file descriptors either, the server stops accepting while ``acceptLimit`` connections (served
/// and being refused) are open (Hummingbird's `MaximumAvailableConnections`): further clients
/// wait in the listen backlog until some close.
package final class ConnectionCap: Sendable {
    /// Connections served at once.
    package let limit: Int
    private let open = Atomic<Int>(0)
    private let refusals = Mutex<(lastLog: ContinuousClock.Instant?, unlogged: Int)>((nil, 0))
    private let logger: Logger

    /// A cap of `limit` connections (at least 1).
    package init(limit: Int, logger: Logger) {
        self.limit = max(1, limit)
        self.logger = logger
    }

    /// Connections that may be open at all, served or being refused: ``limit`` plus an eighth
    /// (at least 8) for refusals, which last about a second each.
    package var acceptLimit: Int { limit + max(8, limit / 8) }

    /// The connections served now.
    package var openConnections: Int { open.load(ordering: .relaxed) }

    /// Takes a slot for a new connection; false when ``limit`` are open (nothing taken).
    package func acquire() -> Bool {
        var current = open.load(ordering: .relaxed)
        while true {
            guard current < limit else { return false }
            let (exchanged, original) = open.compareExchange(expected: current, desired: current + 1, ordering: .relaxed)
            if exchanged { return true }
            current = original
        }
    }

    /// Gives back a slot taken by ``acquire()``.
    package func release() {
        open.subtract(1, ordering: .relaxed)
    }

    /// Counts a refused connection and logs it (once a minute at most, with the number refused
    /// since the last line).
    package func noteRefusal() {
        Counter(label: "ubiquity_connections_refused_total").increment()
        let now = ContinuousClock.now
        let count: Int? = refusals.withLock { state in
            state.unlogged += 1
            if let last = state.lastLog, now - last < .seconds(60) { return nil }
            let count = state.unlogged
            state = (now, 0)
            return count
        }
        if let count {
            logger.warning("refusing connections: \(limit) are open, the limit (--max-connections); answered 503",
                           metadata: ["connections.refused": "\(count)"])
        }
    }

    /// The whole HTTP/1.1 answer to a connection over the limit.
    package var refusal: ByteBuffer {
        let json = WireError(.tryAgainLater, "the server has \(limit) connections open, its limit; try again later", retryAfter: 1)
            .json().serializedBytes()
        var buffer = ByteBuffer()
        buffer.writeString("HTTP/1.1 503 Service Unavailable\r\nContent-Type: application/json; charset=UTF-8\r\n"
            + "Retry-After: 1\r\nConnection: close\r\nContent-Length: \(json.count)\r\n\r\n")
        buffer.writeBytes(json)
        return buffer
    }

    /// Hummingbird's accept limit at ``acceptLimit``.
    package var availableConnections: MaximumAvailableConnections {
        MaximumAvailableConnections(acceptLimit, logger: logger)
    }
}
