// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Synchronization

/// SIGTERM and SIGINT, caught from the moment this is made.
///
/// A command makes one before it says it is ready, and waits on it afterwards: a signal sent as
/// soon as "ready" is read (a test, systemd) then stops the command cleanly instead of killing it
/// with the default action, as it would if the handlers were installed only when the wait begins.
final class TerminationSignals: Sendable {
    private enum State {
        case waitingForSignal
        case signalled
        case waiting(CheckedContinuation<Void, Never>, @Sendable () -> Void)
        case done
    }
    private let state = Mutex(State.waitingForSignal)

    /// Ignores SIGTERM and SIGINT's default action and starts catching them.
    init() {
        signal(SIGTERM, SIG_IGN)
        signal(SIGINT, SIG_IGN)
        let queue = DispatchQueue(label: "ubiq.signals")
        let sources = [SIGTERM, SIGINT].map { DispatchSource.makeSignalSource(signal: $0, queue: queue) }
        for source in sources {
            source.setEventHandler { [weak self] in self?.fire() }
            source.resume()
        }
        SignalSources.keep(sources)  // for the life of the process
    }

    /// Returns once SIGTERM or SIGINT has arrived (at once if one came before), after running
    /// `onSignal` on the signal queue. Call it once.
    func wait(_ onSignal: @escaping @Sendable () -> Void) async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let signalled = state.withLock { state -> Bool in
                switch state {
                case .waitingForSignal:
                    state = .waiting(continuation, onSignal)
                    return false
                case .signalled, .done:
                    state = .done
                    return true
                case .waiting:
                    preconditionFailure("TerminationSignals.wait called twice")
                }
            }
            if signalled {
                onSignal()
                continuation.resume()
            }
        }
    }

    private func fire() {
        let waiter = state.withLock { state -> (CheckedContinuation<Void, Never>, @Sendable () -> Void)? in
            switch state {
            case .waitingForSignal:
                state = .signalled
                return nil
            case .waiting(let continuation, let onSignal):
                state = .done
                return (continuation, onSignal)
            case .signalled, .done:
                return nil
            }
        }
        guard let (continuation, onSignal) = waiter else { return }
        onSignal()
        continuation.resume()
    }
}
