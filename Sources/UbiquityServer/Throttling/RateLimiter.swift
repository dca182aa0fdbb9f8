// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Synchronization

/// Per-caller request rate limits: a `TokenBucket` per caller key in a Mutex-protected dictionary
/// of bounded size. When a new caller would exceed `maximumCallers`, the buckets that have filled
/// up again are forgotten (which changes nothing for them), and if that is not enough the least
/// recently used half goes (those callers start again with a full bucket).
package final class RateLimiter: Sendable {
    /// Requests per second per caller.
    package let rate: Double
    /// Requests a caller may make at once.
    package let burst: Int
    /// The most callers tracked at once.
    package let maximumCallers: Int
    let clock: @Sendable () -> Double
    let buckets = Mutex<[String: TokenBucket]>([:])

    /// A limiter of `rate` (> 0) requests per second per caller; `clock` gives seconds on a
    /// monotonic clock (injectable for tests).
    package init(rate: Double, burst: Int, maximumCallers: Int = 10_000,
                clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        precondition(rate > 0, "a rate limiter needs a positive rate (no limiter means no limit)")
        self.rate = rate
        self.burst = burst
        self.maximumCallers = max(1, maximumCallers)
        self.clock = clock
    }

    /// Takes a token for `caller`.
    package func take(_ caller: String) -> TokenBucket.Decision {
        let now = clock()
        return buckets.withLock { table in
            if table[caller] == nil, table.count >= maximumCallers { RateLimiter.evict(&table, now: now, keeping: maximumCallers) }
            var bucket = table[caller] ?? TokenBucket(rate: rate, burst: burst, now: now)
            let decision = bucket.take(now: now)
            table[caller] = bucket
            return decision
        }
    }

    /// How many callers are tracked.
    package var callerCount: Int { buckets.withLock { $0.count } }

    static func evict(_ table: inout [String: TokenBucket], now: Double, keeping limit: Int) {
        table = table.filter { !$0.value.isFull(at: now) }
        guard table.count >= limit else { return }
        let keep = table.sorted { $0.value.updated > $1.value.updated }.prefix(limit / 2)
        table = Dictionary(uniqueKeysWithValues: keep.map { ($0.key, $0.value) })
    }

    /// The whole seconds a client should wait, as `retryAfter` and `Retry-After` say it (≥ 1).
    package static func wholeSeconds(_ seconds: Double) -> Int {
        max(1, Int(seconds.rounded(.up)))
    }
}
