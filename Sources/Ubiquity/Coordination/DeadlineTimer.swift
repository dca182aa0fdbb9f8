// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Runs actions at deadlines on one background thread (not the cooperative pool); used for
/// coordination time-outs, which must fire even when every other thread is blocked.
///
/// All state is guarded by `condition`'s lock, so a deadline scheduled while the thread is about
/// to sleep cannot be missed. The thread is woken only when a new deadline comes before the one
/// it sleeps towards, which is never more than a second away.
package final class DeadlineTimer: @unchecked Sendable {  // @unchecked because every field is guarded by `condition`
    private struct Entry { var deadline: ContinuousClock.Instant; var action: @Sendable () -> Void }
    private let condition = NSCondition()
    private var entries: [UInt64: Entry] = [:]
    private var next: UInt64 = 1
    private var started = false
    /// The deadline the thread sleeps towards (nil while it runs actions or has not started).
    private var sleepingUntil: ContinuousClock.Instant?

    package static let shared = DeadlineTimer()

    package init() {}

    /// Schedules `action` after `delay`; returns a token for ``cancel(_:)``.
    package func schedule(after delay: Duration, _ action: @escaping @Sendable () -> Void) -> UInt64 {
        let deadline = ContinuousClock.now.advanced(by: delay)
        condition.lock()
        defer { condition.unlock() }
        let token = next
        next += 1
        entries[token] = Entry(deadline: deadline, action: action)
        if !started {
            started = true
            let thread = Thread { [self] in self.loop() }
            thread.name = "ubiquity.timer"
            thread.start()
        } else if let sleepingUntil, deadline < sleepingUntil {
            condition.signal()
        }
        return token
    }

    /// Cancels a scheduled action (no effect if it already ran).
    package func cancel(_ token: UInt64) {
        condition.lock()
        entries.removeValue(forKey: token)
        condition.unlock()
    }

    private func loop() {
        condition.lock()
        while true {
            let now = ContinuousClock.now
            var due: [@Sendable () -> Void] = []
            var earliest: ContinuousClock.Instant?
            for (token, entry) in entries {
                if entry.deadline <= now {
                    due.append(entry.action)
                    entries.removeValue(forKey: token)
                } else if earliest.map({ entry.deadline < $0 }) ?? true {
                    earliest = entry.deadline
                }
            }
            if !due.isEmpty {
                sleepingUntil = nil
                condition.unlock()
                for action in due { action() }
                condition.lock()
                continue
            }
            // Sleep at most 1 s: deadlines further away than that never need to wake the thread
            // (most are 30 s time-outs cancelled long before), which keeps claims cheap.
            let cap = now.advanced(by: .seconds(1))
            let until = earliest.map { min($0, cap) } ?? cap
            sleepingUntil = until
            let wait = now.duration(to: until)
            let seconds = Double(wait.components.seconds) + Double(wait.components.attoseconds) / 1e18
            _ = condition.wait(until: Date(timeIntervalSinceNow: max(seconds, 0.0005)))
        }
    }
}
