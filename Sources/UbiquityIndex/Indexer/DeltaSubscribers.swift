import Synchronization
import UbiquityStore

/// The subscribers to an indexer's deltas: each gets every non-empty delta, in order.
final class DeltaSubscribers: Sendable {
    private struct State {
        var nextID = 0
        var continuations: [Int: AsyncStream<IndexDelta>.Continuation] = [:]
    }
    private let state = Mutex(State())

    /// A new subscription; it ends when the stream is dropped or cancelled.
    func subscribe() -> AsyncStream<IndexDelta> {
        let (stream, continuation) = AsyncStream.makeStream(of: IndexDelta.self, bufferingPolicy: .unbounded)
        let id = state.withLock { state in
            defer { state.nextID += 1 }
            state.continuations[state.nextID] = continuation
            return state.nextID
        }
        continuation.onTermination = { [weak self] _ in
            _ = self?.state.withLock { $0.continuations.removeValue(forKey: id) }
        }
        return stream
    }

    /// Whether nobody subscribes now.
    var isEmpty: Bool { state.withLock { $0.continuations.isEmpty } }

    /// Hands `delta` to every subscriber (unless it is empty).
    func publish(_ delta: IndexDelta) {
        guard !delta.isEmpty else { return }
        let continuations = state.withLock { Array($0.continuations.values) }
        for continuation in continuations { continuation.yield(delta) }
    }

    /// Ends every subscription.
    func finishAll() {
        let continuations = state.withLock { state in
            defer { state.continuations.removeAll() }
            return Array(state.continuations.values)
        }
        for continuation in continuations { continuation.finish() }
    }

    /// The number of live subscriptions.
    var count: Int { state.withLock { $0.continuations.count } }
}
