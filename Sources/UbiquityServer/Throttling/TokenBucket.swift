// SPDX-License-Identifier: Apache-2.0

/// One caller's token bucket, as a pure state machine over an injected clock: it fills at `rate`
/// tokens per second up to `burst`, and every request takes one token. A request that finds less
/// than one token is refused, with how long until one is there.
///
/// Times are seconds on any monotonic clock (the limiter's; tests pass plain numbers).
package struct TokenBucket: Sendable, Hashable {
    /// What `take(now:)` decided.
    package enum Decision: Sendable, Hashable {
        /// The request may go on (a token was taken).
        case allowed
        /// The request is refused; a token will be there after `retryAfter` seconds.
        case limited(retryAfter: Double)
    }

    /// Tokens added per second (> 0).
    package let rate: Double
    /// The most tokens the bucket holds: how many requests may come at once (≥ 1).
    package let burst: Double
    /// Tokens in the bucket at `updated`.
    package private(set) var tokens: Double
    /// When `tokens` was last brought up to date.
    package private(set) var updated: Double

    /// A full bucket at `now`. A `burst` below 1 is taken as 1; `rate` must be positive.
    package init(rate: Double, burst: Int, now: Double) {
        precondition(rate > 0, "a token bucket needs a positive rate")
        self.rate = rate
        self.burst = Double(max(1, burst))
        tokens = self.burst
        updated = now
    }

    /// The tokens there would be at `now` (a clock going backwards adds none).
    package func available(at now: Double) -> Double {
        min(burst, tokens + max(0, now - updated) * rate)
    }

    /// Takes a token at `now`, or says how long until one is there.
    package mutating func take(now: Double) -> Decision {
        tokens = available(at: now)
        updated = max(updated, now)
        if tokens >= 1 {
            tokens -= 1
            return .allowed
        }
        return .limited(retryAfter: (1 - tokens) / rate)
    }

    /// Whether the bucket is full at `now`: forgetting it changes nothing (a new one is full).
    package func isFull(at now: Double) -> Bool { available(at: now) >= burst }
}
