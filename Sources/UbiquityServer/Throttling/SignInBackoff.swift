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

    /// Takes back one failure recorded for `key` before its outcome was known (the attempt
    /// turned out right), lifting the block that failure set.
    public mutating func forgive(_ key: String) {
        guard var entry = entries[key] else { return }
        entry.failures -= 1
        if entry.failures <= 0 {
            entries[key] = nil
            return
        }
        if entry.failures <= freeFailures { entry.blockedUntil = 0 }
        entries[key] = entry
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
///
/// An attempt counts as a failure from the moment it is let through (``begin(user:address:)``,
/// one check-and-count under one lock) until its outcome is known (``finish(user:address:success:)``):
/// concurrent guesses cannot all pass the check before any is counted, so no more than the free
/// failures are ever evaluated at once. The state is this process's memory: a restart forgets
/// it, and each server process keeps its own.
public final class SignInGuard: Sendable {
    struct Backoffs: Sendable {
        var perAccount = SignInBackoff(freeFailures: 5)
        var perAddress = SignInBackoff(freeFailures: 20)
    }

    let state = Mutex(Backoffs())
    let clock: @Sendable () -> Double

    /// A guard; `clock` gives seconds on a monotonic clock (injectable for tests).
    public init(clock: @escaping @Sendable () -> Double = { Double(DispatchTime.now().uptimeNanoseconds) / 1e9 }) {
        self.clock = clock
    }

    static func key(_ user: String, _ address: String) -> String { address + "\u{0}" + user }

    /// Whole seconds to wait before `user` may try again from `address`, or nil.
    public func wait(user: String, address: String) -> Int? {
        let now = clock()
        return state.withLock { Self.wait(in: $0, key: Self.key(user, address), address: address, now: now) }
    }

    static func wait(in backoffs: Backoffs, key: String, address: String, now: Double) -> Int? {
        let seconds = max(backoffs.perAccount.wait(key, now: now) ?? 0, backoffs.perAddress.wait(address, now: now) ?? 0)
        return seconds > 0 ? Int(seconds.rounded(.up)) : nil
    }

    /// Lets an attempt of `user` from `address` through and counts it as a failure until
    /// ``finish(user:address:success:)`` says otherwise; or, when they must wait, the whole
    /// seconds to wait (nothing counted).
    public func begin(user: String, address: String) -> Int? {
        let now = clock()
        let key = Self.key(user, address)
        return state.withLock { backoffs in
            if let seconds = Self.wait(in: backoffs, key: key, address: address, now: now) { return seconds }
            backoffs.perAccount.failed(key, now: now)
            backoffs.perAddress.failed(address, now: now)
            return nil
        }
    }

    /// The outcome of an attempt let through by ``begin(user:address:)``: a right password
    /// forgets the account's failures and takes back the address's count of this attempt (a
    /// guesser's own account must not reset the address's other failures).
    public func finish(user: String, address: String, success: Bool) {
        guard success else { return }
        let key = Self.key(user, address)
        state.withLock { backoffs in
            backoffs.perAccount.succeeded(key)
            backoffs.perAddress.forgive(address)
        }
    }
}
