// SPDX-License-Identifier: Apache-2.0
import Foundation

extension CloudContainer {
    /// How a container retries requests the server refused for now: `THROTTLED` (HTTP 429) and
    /// `TRY_AGAIN_LATER` (HTTP 503). It waits the `retryAfter` the server asks for (or
    /// `Retry-After`), at most ``maximumDelay``, then sends the request again, at most
    /// ``maximumAttempts`` times in all. The wait ends early, with `operationCancelled`, when the
    /// task is cancelled. When attempts run out the error is thrown, with its
    /// ``CloudKitError/retryAfterSeconds``.
    public struct RetryPolicy: Sendable, Hashable {
        /// Attempts in all, the first included (1: never retry).
        public var maximumAttempts: Int
        /// The longest wait before one retry, in seconds (a longer `retryAfter` is cut to it).
        public var maximumDelay: Double
        /// The wait when the server names none, in seconds.
        public var defaultDelay: Double

        /// A policy; by default up to 4 attempts, waits of at most 30 s, 1 s when the server
        /// names none.
        public init(maximumAttempts: Int = 4, maximumDelay: Double = 30, defaultDelay: Double = 1) {
            self.maximumAttempts = max(1, maximumAttempts)
            self.maximumDelay = max(0, maximumDelay)
            self.defaultDelay = max(0, defaultDelay)
        }

        /// Never retry: every error is thrown at once.
        public static let never = RetryPolicy(maximumAttempts: 1)

        /// The wait before retrying after `error`, or nil when it is not one to retry.
        public func delay(for error: CloudKitError) -> Double? {
            let retryable = error.serverErrorCode == "THROTTLED" || error.serverErrorCode == "TRY_AGAIN_LATER"
                || error.httpStatus == 429 || error.httpStatus == 503
            guard retryable else { return nil }
            return min(max(0, error.retryAfterSeconds ?? defaultDelay), maximumDelay)
        }
    }
}
