// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// One producer's elements to any number of `AsyncStream` subscribers: each subscriber gets
/// every element yielded after it subscribed, in the order of the ``yield(_:)`` calls. A
/// subscription ends when its stream is dropped or cancelled, or at ``finish()``.
///
/// Elements are handed over outside the lock; callers that yield from several threads and need
/// one order across them serialise their own calls (as the identity monitor and the key-value
/// store do with their pending queues).
package final class Broadcaster<Element: Sendable>: Sendable {
    private struct State {
        var nextID: UInt64 = 0
        var continuations: [UInt64: AsyncStream<Element>.Continuation] = [:]
        var finished = false
    }
    private let state = Mutex(State())
    private let bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy

    /// A broadcaster whose subscriptions buffer as `bufferingPolicy` says.
    package init(bufferingPolicy: AsyncStream<Element>.Continuation.BufferingPolicy = .unbounded) {
        self.bufferingPolicy = bufferingPolicy
    }

    deinit { finish() }

    /// A new subscription, from the next element on (already finished after ``finish()``).
    package func subscribe() -> AsyncStream<Element> {
        let (stream, continuation) = AsyncStream.makeStream(of: Element.self, bufferingPolicy: bufferingPolicy)
        let id = state.withLock { state -> UInt64? in
            guard !state.finished else { return nil }
            state.nextID += 1
            state.continuations[state.nextID] = continuation
            return state.nextID
        }
        guard let id else {
            continuation.finish()
            return stream
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Hands `element` to every current subscriber.
    package func yield(_ element: Element) {
        for continuation in state.withLock({ Array($0.continuations.values) }) { continuation.yield(element) }
    }

    /// Ends every subscription, and those made later.
    package func finish() {
        let continuations = state.withLock { state in
            state.finished = true
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    /// The number of live subscriptions.
    package var subscriberCount: Int { state.withLock { $0.continuations.count } }
}
