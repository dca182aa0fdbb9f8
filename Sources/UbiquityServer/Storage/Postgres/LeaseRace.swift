// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// The race between a transaction's lease of a PostgreSQL connection and its deadline
/// (`PostgresRecordStore.withLeasedConnection`): the lease wins when it has its connection
/// first, the deadline when it passes first; the caller is resumed exactly once, with the
/// transaction's result or the deadline's error, and the loser's task is cancelled.
final class LeaseRace<T: Sendable>: Sendable {
    private enum Phase {
        case waiting
        /// The lease has its connection: the deadline no longer applies.
        case leased
        /// The deadline passed first: a connection granted now goes straight back.
        case abandoned
    }

    private struct State {
        var phase = Phase.waiting
        var continuation: CheckedContinuation<T, any Error>?
        /// A result that came before the caller's continuation was stored.
        var early: Result<T, any Error>?
        var lease: Task<Void, Never>?
        var timer: Task<Void, Never>?
        var finished = false
    }

    private let state = Mutex(State())

    /// Stores the caller's continuation and the two tasks (resuming at once when the race is
    /// already decided).
    func start(_ continuation: CheckedContinuation<T, any Error>, lease: Task<Void, Never>, timer: Task<Void, Never>) {
        let early: Result<T, any Error>? = state.withLock { state in
            state.lease = lease
            state.timer = timer
            if let early = state.early { return early }
            state.continuation = continuation
            return nil
        }
        if let early {
            timer.cancel()
            continuation.resume(with: early)
        }
    }

    /// The lease has its connection: true when the deadline has not passed (the body runs).
    func lease() -> Bool {
        state.withLock { state in
            guard state.phase == .waiting else { return false }
            state.phase = .leased
            return true
        }
    }

    /// Whether the lease has had its connection.
    var isLeased: Bool { state.withLock { $0.phase == .leased } }

    /// The deadline passed: true when it wins (no connection yet).
    func abandon() -> Bool {
        state.withLock { state in
            guard state.phase == .waiting else { return false }
            state.phase = .abandoned
            return true
        }
    }

    /// The caller was cancelled: the lease is cancelled (a body that runs sees its task cancelled).
    func cancel() {
        let lease = state.withLock { $0.lease }
        lease?.cancel()
    }

    /// Resumes the caller with `result`, the first time only, and stops the timer.
    func finish(_ result: Result<T, any Error>) {
        let (continuation, timer): (CheckedContinuation<T, any Error>?, Task<Void, Never>?) = state.withLock { state in
            guard !state.finished else { return (nil, nil) }
            state.finished = true
            guard let continuation = state.continuation else {
                state.early = result
                return (nil, state.timer)
            }
            state.continuation = nil
            return (continuation, state.timer)
        }
        timer?.cancel()
        continuation?.resume(with: result)
    }
}
