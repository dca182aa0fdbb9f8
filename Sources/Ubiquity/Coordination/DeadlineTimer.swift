// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// Runs actions at deadlines on one background thread (not the cooperative pool); used for
/// coordination time-outs, which must fire even when every other thread is blocked.
package final class DeadlineTimer: Sendable {
    private struct Entry { var deadline: ContinuousClock.Instant; var action: @Sendable () -> Void }
    private struct State {
        var entries: [UInt64: Entry] = [:]
        var next: UInt64 = 1
        var started = false
        /// When the timer thread will next wake up by itself.
        var wake: ContinuousClock.Instant?
    }
    private let state = Mutex(State())
    private let condition = NSCondition()

    package static let shared = DeadlineTimer()

    package init() {}

    /// Schedules `action` after `delay`; returns a token for ``cancel(_:)``.
    package func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let deadline = ContinuousClock.now.advanced(by: delay)
        let (token, start, earlier) = state.withLock { state -> (UInt64, Bool, Bool) in
            let token = state.next
            state.next += 1
            state.entries[token] = Entry(deadline: deadline, action: action)
            let start = !state.started
            state.started = true
            // Wake the timer thread only if this deadline comes before its planned wake-up.
            let earlier = state.wake.map { deadline < $0 } ?? true
            if earlier { state.wake = deadline }
            return (token, start, earlier)
        }
        if start {
            let thread = Thread { [self] in self.loop() }
            thread.name = "ubiquity.timer"
            thread.start()
        } else if earlier {
            condition.lock()
            condition.signal()
            condition.unlock()
        }
        return token
    }

    /// Cancels a scheduled action (no effect if it already ran).
    package func cancel(_ token: UInt64) {
        _ = state.withLock { $0.entries.removeValue(forKey: token) }
    }

    private func loop() {
        while true {
            let now = ContinuousClock.now
            let (due, earliest) = state.withLock { state -> ([@Sendable () -> Void], ContinuousClock.Instant?) in
                var due: [@Sendable () -> Void] = []
                var earliest: ContinuousClock.Instant?
                for (token, entry) in state.entries {
                    if entry.deadline <= now {
                        due.append(entry.action)
                        state.entries.removeValue(forKey: token)
                    } else if earliest == nil || entry.deadline < earliest! {
                        earliest = entry.deadline
                    }
                }
                return (due, earliest)
            }
            for action in due { action() }
            let wait = min(earliest.map { now.duration(to: $0) } ?? .seconds(1), .seconds(1))
            state.withLock { $0.wake = now.advanced(by: wait) }
            condition.lock()
            let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
            _ = condition.wait(until: Date(timeIntervalSinceNow: min(max(seconds, 0.001), 1)))
            condition.unlock()
        }
    }
}
