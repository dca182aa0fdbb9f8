// SPDX-License-Identifier: Apache-2.0

/// Slows password guessing (a pure state machine; ``SignInGuard`` keeps its entries in the
/// record store). Each key (an account name from one address, or one address for any account)
/// may fail `freeFailures` times in a row; after that every further failure blocks the key for
/// twice as long as the one before (1 s, 2 s, 4 s … at most `maximumDelay`). A success forgets
/// the key; so does a quiet spell of `maximumDelay` since the last failure.
package struct SignInBackoff: Sendable {
    /// One key's state. Times are seconds on the clock the backoff is used with.
    package struct Entry: Sendable, Hashable {
        /// Failures in a row.
        package var failures: Int
        /// Until when the key must wait.
        package var blockedUntil: Double
        /// When it last failed.
        package var lastFailure: Double

        /// Makes an entry.
        package init(failures: Int, blockedUntil: Double, lastFailure: Double) {
            self.failures = failures
            self.blockedUntil = blockedUntil
            self.lastFailure = lastFailure
        }
    }

    /// Failures in a row before attempts are slowed.
    package let freeFailures: Int
    /// The longest wait, in seconds.
    package let maximumDelay: Double
    /// The most keys tracked in memory; beyond it, the keys not blocked and idle longest are
    /// forgotten.
    package let maximumKeys: Int
    var entries: [String: Entry] = [:]

    /// A backoff allowing `freeFailures` failures per key before slowing it.
    package init(freeFailures: Int, maximumDelay: Double = 900, maximumKeys: Int = 10_000) {
        self.freeFailures = max(1, freeFailures)
        self.maximumDelay = maximumDelay
        self.maximumKeys = max(1, maximumKeys)
    }

    // MARK: One entry

    /// Seconds `entry` must still wait at `now`, or nil when it may try.
    package static func wait(_ entry: Entry?, now: Double) -> Double? {
        guard let entry, entry.blockedUntil > now else { return nil }
        return entry.blockedUntil - now
    }

    /// `entry` after a wrong password at `now`.
    package func failing(_ entry: Entry?, now: Double) -> Entry {
        var entry = entry ?? Entry(failures: 0, blockedUntil: 0, lastFailure: now)
        if entry.blockedUntil <= now, now - entry.lastFailure >= maximumDelay { entry.failures = 0 }
        entry.failures += 1
        entry.lastFailure = now
        if entry.failures > freeFailures { entry.blockedUntil = now + delay(afterFailures: entry.failures) }
        return entry
    }

    /// `entry`, counted as failing when its attempt began, once the password is known to be
    /// wrong at `now`: its wait runs from the answer, not from the start of a check that may
    /// take seconds (scrypt on a busy machine); nil stays nil.
    package func confirmingFailure(_ entry: Entry?, now: Double) -> Entry? {
        guard var entry else { return nil }
        entry.lastFailure = max(entry.lastFailure, now)
        if entry.failures > freeFailures { entry.blockedUntil = max(entry.blockedUntil, now + delay(afterFailures: entry.failures)) }
        return entry
    }

    /// The wait after `failures` failures in a row (more than the free ones): 1 s, doubling, at
    /// most ``maximumDelay``.
    func delay(afterFailures failures: Int) -> Double {
        min(maximumDelay, Double(1 << min(failures - freeFailures - 1, 30)))
    }

    /// `entry` with one failure recorded before its outcome was known taken back (the attempt
    /// turned out right), lifting the block that failure set; nil when nothing is left.
    package func forgiving(_ entry: Entry?) -> Entry? {
        guard var entry else { return nil }
        entry.failures -= 1
        if entry.failures <= 0 { return nil }
        if entry.failures <= freeFailures { entry.blockedUntil = 0 }
        return entry
    }

    // MARK: Keys in memory

    /// Seconds `key` must still wait before its next attempt, or nil when it may try now.
    package func wait(_ key: String, now: Double) -> Double? { Self.wait(entries[key], now: now) }

    /// Records a wrong password for `key`.
    package mutating func failed(_ key: String, now: Double) {
        if entries[key] == nil, entries.count >= maximumKeys { prune(now: now) }
        entries[key] = failing(entries[key], now: now)
    }

    /// Records a correct password for `key`: it starts afresh.
    package mutating func succeeded(_ key: String) {
        entries[key] = nil
    }

    /// Takes back one failure recorded for `key` before its outcome was known.
    package mutating func forgive(_ key: String) {
        entries[key] = forgiving(entries[key])
    }

    /// The number of keys tracked.
    package var count: Int { entries.count }

    mutating func prune(now: Double) {
        entries = entries.filter { $0.value.blockedUntil > now || now - $0.value.lastFailure < maximumDelay }
        guard entries.count >= maximumKeys else { return }
        let kept = entries.sorted { $0.value.lastFailure > $1.value.lastFailure }.prefix(maximumKeys / 2)
        entries = Dictionary(uniqueKeysWithValues: kept.map { ($0.key, $0.value) })
    }
}
