// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// One connected client's mailbox (a WebSocket or a long-poll request): the hub offers it
/// notifications, the connection's task takes them. It holds at most `capacity`
/// notifications: an offer that does not fit empties it and marks it overflowed, and the
/// connection then catches up from the log (so a client that does not read costs a bounded
/// amount of memory, and never slows the hub or the other clients).
final class NotificationListener: Sendable {
    /// What a connection finds in its mailbox.
    struct Mail: Sendable {
        var notifications: [StoredNotification]
        /// Notifications were dropped: read the log from the last position delivered.
        var overflowed: Bool
        /// The hub closed the mailbox (the server is stopping).
        var closed: Bool
    }

    private struct State {
        var queue: [StoredNotification] = []
        var overflowed = false
        var closed = false
        /// Set by a wake-up that found nobody waiting; consumed by the next wait.
        var signalled = false
        var waiter: CheckedContinuation<Void, Never>?
    }

    /// Whose log the client follows.
    let key: NotificationLogKey
    /// The most notifications held.
    let capacity: Int
    private let state = Mutex(State())

    init(key: NotificationLogKey, capacity: Int) {
        self.key = key
        self.capacity = max(1, capacity)
    }

    /// Adds notifications (in log order); past the capacity the mailbox is emptied and marked
    /// overflowed instead.
    func offer(_ notifications: [StoredNotification]) {
        guard !notifications.isEmpty else { return }
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.closed else { return nil }
            if state.overflowed || state.queue.count + notifications.count > capacity {
                state.queue = []
                state.overflowed = true
            } else {
                state.queue.append(contentsOf: notifications)
            }
            return wakeLocked(&state)
        }
        waiter?.resume()
    }

    /// Closes the mailbox: the connection's next `take()` says so.
    func close() {
        let waiter = state.withLock { state -> CheckedContinuation<Void, Never>? in
            state.closed = true
            return wakeLocked(&state)
        }
        waiter?.resume()
    }

    /// Whether the mailbox was closed.
    var isClosed: Bool { state.withLock { $0.closed } }

    /// Takes everything waiting.
    func take() -> Mail {
        state.withLock { state in
            defer {
                state.queue = []
                state.overflowed = false
            }
            return Mail(notifications: state.queue, overflowed: state.overflowed, closed: state.closed)
        }
    }

    /// Waits until something is offered, the mailbox is closed, or the task is cancelled.
    func wait() async {
        await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                let now = state.withLock { state -> Bool in
                    if state.signalled || state.closed || state.overflowed || !state.queue.isEmpty {
                        state.signalled = false
                        return true
                    }
                    state.waiter = continuation
                    return false
                }
                if now { continuation.resume() }
            }
        } onCancel: {
            let waiter = state.withLock { state in wakeLocked(&state) }
            waiter?.resume()
        }
    }

    /// The waiter to resume (outside the lock), or a signal for the next wait.
    private func wakeLocked(_ state: inout State) -> CheckedContinuation<Void, Never>? {
        if let waiter = state.waiter {
            state.waiter = nil
            return waiter
        }
        state.signalled = true
        return nil
    }
}
