// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// Work that takes turns: one body at a time, in the order they asked (first come, first
/// served), each awaited without holding a thread — the mutual exclusion async code needs where
/// an actor's reentrancy lets two tasks interleave across their awaits (a sync pass, an
/// eviction, an on-demand download of one folder).
package final class AsyncTurns: Sendable {
    private struct State {
        var held = false
        var waiting: [CheckedContinuation<Void, Never>] = []
    }

    private let state = Mutex(State())

    /// Turns, none taken.
    package init() {}

    /// Runs `body` once no other body runs, after those that asked before (on the caller's
    /// actor: an actor's method takes turns with the others without leaving it).
    package func run<T>(isolation: isolated (any Actor)? = #isolation, _ body: () async throws -> T) async rethrows -> T {
        await take()
        defer { give() }
        return try await body()
    }

    /// Whether a body runs now.
    package var isHeld: Bool { state.withLock { $0.held } }

    private func take() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let now = state.withLock { state -> Bool in
                if state.held {
                    state.waiting.append(continuation)
                    return false
                }
                state.held = true
                return true
            }
            if now { continuation.resume() }
        }
    }

    /// Hands the turn to the next in line (it stays taken), or frees it.
    private func give() {
        let next = state.withLock { state -> CheckedContinuation<Void, Never>? in
            guard !state.waiting.isEmpty else {
                state.held = false
                return nil
            }
            return state.waiting.removeFirst()
        }
        next?.resume()
    }
}
