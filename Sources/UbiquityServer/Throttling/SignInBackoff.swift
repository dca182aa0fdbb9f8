// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Synchronization

/// Slows password guessing (a pure state machine; ``SignInGuard`` is its thread-safe holder).
/// Each key (an account name from one address, or one address for any account) may fail
/// `freeFailures` times in a row; after that every further failure blocks the key for twice as
/// long as the one before (1 s, 2 s, 4 s … at most `maximumDelay`). A success forgets the key;
/// so does a quiet spell of `maximumDelay` since the last failure.
public struct SignInBackoff: Sendable {
    struct Entry: Sendable {
        var failures: Int
        var blockedUntil: Double
        var lastFailure: Double
    }

    /// Failures in a row before attempts are slowed.
    public let freeFailures: Int
    /// The longest wait, in seconds.
    public let maximumDelay: Double
    /// The most keys tracked; beyond it, the keys not blocked and idle longest are forgotten.
    public let maximumKeys: Int
    var entries: [String: Entry] = [:]

    /// A backoff allowing `freeFailures` failures per key before slowing it.
    public init(freeFailures: Int, maximumDelay: Double = 900, maximumKeys: Int = 10_000) {
        self.freeFailures = max(1, freeFailures)
        self.maximumDelay = maximumDelay
        self.maximumKeys = max(1, maximumKeys)
    }

    /// Seconds `key` must still wait before its next attempt, or nil when it may try now.
    public func wait(_ key: String, now: Double) -> Double? {
        guard let entry = entries[key], entry.blockedUntil > now else { return nil }
        return entry.blockedUntil - now
    }

    /// Records a wrong password for `key`.
    public mutating func failed(_ key: String, now: Double) {
        if entries[key] == nil, entries.count >= maximumKeys { prune(now: now) }
        var entry = entries[key] ?? Entry(failures: 0, blockedUntil: 0, lastFailure: now)
        if entry.blockedUntil <= now, now - entry.lastFailure >= maximumDelay { entry.failures = 0 }
        entry.failures += 1
        entry.lastFailure = now
        if entry.failures > freeFailures {
            let exponent = min(entry.failures - freeFailures - 1, 30)
            entry.blockedUntil = now + min(maximumDelay, Double(1 << exponent))
        }
        entries[key] = entry
    }

    /// Records a correct password for `key`: it starts afresh.
    public mutating func succeeded(_ key: String) {
        entries[key] = nil
    }

    /// The number of keys tracked.
    public var count: Int { entries.count }

    mutating func prune(now: Double) {
        entries = entries.filter { $0.value.blockedUntil > now || now - $0.value.lastFailure < maximumDelay }
        guard entries.count >= maximumKeys else { return }
        let kept = entries.sorted { $0.value.lastFailure > $1.value.lastFailure }.prefix(maximumKeys / 2)
        entries = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
    }
}

/// The sign-in endpoints' guard against password guessing: per account name and address
/// (5 free failures), and per address for any account (20).
public final class SignInGuard: Sendable {
    let perAccount = Mutex(SignInBackoff(freeFailures: 5))
    let perAddress = Mutex(SignInBackoff(freeFailures: 20))
    let clock: @Sendable () -> Double

    /// A guard; `clock` gives seconds on a monotonic clock (injectable for tests).
    public init(clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        self.clock = clock
    }

    /// Whole seconds to wait before `user` may try again from `address`, or nil.
    public func wait(user: String, address: String) -> Int? {
        let now = clock()
        let seconds = max(perAccount.withLock { $0.wait(address + "\u{0}" + user, now: now) } ?? 0,
                          perAddress.withLock { $0.wait(address, now: now) } ?? 0)
        return seconds > 0 ? Int(seconds.rounded(.up)) : nil
    }

    /// Records the outcome of a password check.
    public func record(user: String, address: String, success: Bool) {
        let now = clock()
        let key = address + "\u{0}" + user
        if success {
            // (the address's count stays: a guesser's own account must not reset it)
            perAccount.withLock { $0.succeeded(key) }
        } else {
            perAccount.withLock { $0.failed(key, now: now) }
            perAddress.withLock { $0.failed(address, now: now) }
        }
    }
}
