// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// A number that only grows, and tasks waiting for it to reach theirs: whoever makes progress
/// calls ``advance(to:)``, and each waiter whose mark is reached resumes then, with no polling.
/// The index host uses one for the watcher batches it has applied (read-your-writes) and one
/// for changes to its roots (a root becoming ready).
///
/// Concurrency: every member may be called from any thread or task; the value and the waiters
/// are behind one mutex, and continuations are resumed outside it.
package final class ProgressMark: Sendable {
    private struct Waiter {
        let id: UInt64
        let target: UInt64
        let continuation: CheckedContinuation<Bool, Never>
    }

    private struct State {
        var value: UInt64 = 0
        var nextID: UInt64 = 0
        var waiters: [Waiter] = []
        /// Waiters numbered but not registered yet, and those of them cancelled or timed out
        /// before they were.
        var pending: Set<UInt64> = []
        var abandoned: Set<UInt64> = []
    }

    private let state = Mutex(State())

    /// A mark at 0.
    package init() {}

    /// The mark now.
    package var value: UInt64 { state.withLock { $0.value } }

    /// How many tasks wait now.
    package var waiting: Int { state.withLock { $0.waiters.count } }

    /// Raises the mark to `value` (a lower value changes nothing) and resumes the waiters it
    /// reaches.
    package func advance(to value: UInt64) {
        raise { max($0, value) }
    }

    /// Raises the mark by one (a change happened) and resumes the waiters it reaches; two
    /// increments at once raise it by two.
    package func increment() {
        raise { $0 + 1 }
    }

    /// Sets the mark to `next(mark)` in one step under the lock (a lower value changes
    /// nothing) and resumes, outside it, the waiters it reaches.
    private func raise(_ next: (UInt64) -> UInt64) {
        let reached: [Waiter] = state.withLock { state in
            let value = next(state.value)
            guard value > state.value else { return [] }
            state.value = value
            let (done, waiting) = state.waiters.reduce(into: ([Waiter](), [Waiter]())) { parts, waiter in
                if waiter.target <= value { parts.0.append(waiter) } else { parts.1.append(waiter) }
            }
            state.waiters = waiting
            return done
        }
        for waiter in reached { waiter.continuation.resume(returning: true) }
    }

    /// Waits until the mark is at least `target`; true when it got there, false when `timeout`
    /// passed first or the task was cancelled. The time-out is a deadline, not a poll: one timer
    /// that resumes this waiter if nothing else did.
    package func wait(until target: UInt64, timeout: Duration) async -> Bool {
        let id: UInt64? = state.withLock { state in
            guard state.value < target else { return nil }
            state.nextID += 1
            state.pending.insert(state.nextID)
            return state.nextID
        }
        guard let id else { return true }
        let timer = Task { [weak self] in
            guard (try? await Task.sleep(for: timeout)) != nil else { return }
            self?.abandon(id)
        }
        defer { timer.cancel() }
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Bool, Never>) in
                let resumeNow: Bool? = state.withLock { state in
                    state.pending.remove(id)
                    if state.abandoned.remove(id) != nil { return false }
                    if state.value >= target { return true }
                    state.waiters.append(Waiter(id: id, target: target, continuation: continuation))
                    return nil
                }
                if let resumeNow { continuation.resume(returning: resumeNow) }
            }
        } onCancel: {
            abandon(id)
        }
    }

    /// Resumes waiter `id` with false, or, when it is not registered yet, marks it so that it
    /// returns false as it registers; a waiter already resumed is left alone.
    private func abandon(_ id: UInt64) {
        let waiter: Waiter? = state.withLock { state in
            if let index = state.waiters.firstIndex(where: { $0.id == id }) { return state.waiters.remove(at: index) }
            if state.pending.remove(id) != nil { state.abandoned.insert(id) }
            return nil
        }
        waiter?.continuation.resume(returning: false)
    }
}
