// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

/// This process's connection to the coordination service (`ubiq daemon`). Claims, presenter
/// registrations and events go to the daemon; messages for this process's presenters come back
/// and are delivered on the presenters' queues. If the daemon goes away, waiting claims fail
/// with `serviceUnavailable` and the process falls back to in-process coordination.
package final class DaemonClient: CoordinationBackend {
    private struct State {
        var connected = true
        var pending: [UInt64: CoordinationEngine.Completion] = [:]
        var presenterAcks: [UInt64: DispatchSemaphore] = [:]
    }
    private let socket: UnixSocket
    private let state = Mutex(State())
    private let runtime: CoordinationRuntime

    private init(socket: UnixSocket, runtime: CoordinationRuntime) {
        self.socket = socket
        self.runtime = runtime
    }

    /// Connects and starts the reader thread.
    package static func connect(path: String, runtime: CoordinationRuntime) throws -> DaemonClient {
        let client = DaemonClient(socket: try UnixSocket.connect(to: path), runtime: runtime)
        try client.socket.send(WireMessage.hello(pid: getpid()).encoded())
        let thread = Thread { client.readLoop() }
        thread.name = "ubiquity.coordination.client"
        thread.start()
        return client
    }

    package var isConnected: Bool { state.withLock { $0.connected } }

    package func close() { socket.shutdown() }

    private func send(_ message: WireMessage) {
        do { try socket.send(message.encoded()) } catch { socket.shutdown() }
    }

    // MARK: CoordinationBackend

    package func request(_ request: ClaimRequest, completion: @escaping CoordinationEngine.Completion) {
        let accepted = state.withLock { state -> Bool in
            guard state.connected else { return false }
            state.pending[request.id] = completion
            return true
        }
        guard accepted else {
            completion(UbiquityError(.serviceUnavailable, "the coordination daemon is not connected"))
            return
        }
        let millis = request.timeout.components.seconds * 1000 + request.timeout.components.attoseconds / 1_000_000_000_000_000
        send(.claim(id: request.id, purpose: request.purpose, isPrepare: request.isPrepare, timeoutMilliseconds: millis, items: request.items))
    }

    package func finish(_ id: UInt64) { send(.finish(id: id)) }
    package func cancel(_ id: UInt64) { send(.cancel(id: id)) }
    package func itemDidMove(from old: String, to new: String, purpose: String) { send(.didMove(from: old, to: new, purpose: purpose)) }
    package func versionEvent(_ kind: VersionEventKind, path: String, versionID: String) { send(.version(kind, path: path, versionID: versionID)) }
    package func ubiquityAttributesChanged(path: String, keys: [String]) { send(.attributes(path: path, keys: keys)) }

    // MARK: Presenters

    /// Registers a presenter and waits (briefly) until the daemon has it, so that a coordinated
    /// access from another process right after `addFilePresenter` messages it.
    package func addPresenter(_ entry: PresenterRegistry.Entry) {
        let ack = DispatchSemaphore(value: 0)
        state.withLock { $0.presenterAcks[entry.id] = ack }
        send(.addPresenter(id: entry.id, purpose: entry.purpose, path: entry.path))
        _ = ack.wait(timeout: .now() + 2)
        state.withLock { _ = $0.presenterAcks.removeValue(forKey: entry.id) }
    }

    package func removePresenter(id: UInt64) { send(.removePresenter(id: id)) }
    package func updatePresenter(id: UInt64, path: String?) { send(.updatePresenter(id: id, path: path)) }

    // MARK: Reading

    private func readLoop() {
        // Reply-less messages for one presenter that arrive together are delivered together
        // (one operation on the presenter's queue).
        var batch: (presenter: UInt64, messages: [PresenterMessage])?
        func flush() {
            if let (presenter, messages) = batch { deliver(messages, presenterID: presenter) }
            batch = nil
        }
        while let line = socket.readLine() {
            guard let message = try? WireMessage(decoding: line) else { continue }
            if case .message(0, let presenterID, let presenterMessage) = message {
                if let current = batch, current.presenter != presenterID { flush() }
                batch = (presenterID, (batch?.messages ?? []) + [presenterMessage])
                if !socket.hasBufferedLine { flush() }
                continue
            }
            flush()
            switch message {
            case .granted(let id):
                state.withLock { $0.pending.removeValue(forKey: id) }?(nil)
            case .failed(let id, let error):
                state.withLock { $0.pending.removeValue(forKey: id) }?(error.error)
            case .presenterAdded(let id):
                state.withLock { $0.presenterAcks[id] }?.signal()
            case .message(let messageID, let presenterID, let presenterMessage):
                deliver(presenterMessage, messageID: messageID, presenterID: presenterID)
            default:
                continue
            }
        }
        let pending = state.withLock { state -> [CoordinationEngine.Completion] in
            state.connected = false
            defer { state.pending.removeAll() }
            return Array(state.pending.values)
        }
        runtime.clientDisconnected(self)
        for completion in pending {
            completion(UbiquityError(.serviceUnavailable,
                "the coordination daemon went away while this coordinated access waited; retry (coordination continues in-process)"))
        }
    }

    private func deliver(_ messages: [PresenterMessage], presenterID: UInt64) {
        guard let entry = runtime.registry.entry(id: presenterID) else { return }
        for case .didMove(let to) in messages { runtime.presenterMoved(id: presenterID, to: to) }
        entry.endpoint.deliver(messages)
    }

    private func deliver(_ message: PresenterMessage, messageID: UInt64, presenterID: UInt64) {
        guard let entry = runtime.registry.entry(id: presenterID) else {
            if message.needsReply { send(.reply(messageID: messageID, error: nil)) }
            return
        }
        if case .didMove(let to) = message { runtime.presenterMoved(id: presenterID, to: to) }
        if message.needsReply {
            entry.endpoint.deliver(message) { [self] error in
                self.send(.reply(messageID: messageID, error: error.map(UbiquityErrorWire.init)))
            }
        } else {
            entry.endpoint.deliver(message, reply: nil)
        }
    }
}
