// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityCore

/// One client process connected to the ``CoordinationService``.
final class ServiceConnection: Sendable {
    private struct State {
        var presenters: [UInt64: UInt64] = [:]      // client presenter id → engine id
        var claims: [UInt64: (engineID: UInt64, granted: Bool)] = [:]  // client claim id → engine claim
        var replies: [UInt64: @Sendable (UbiquityError?) -> Void] = [:]  // message id → reply
        var pid: Int32 = 0
        var closed = false
    }
    let socket: UnixSocket
    private let service: CoordinationService
    private let state = Mutex(State())

    init(socket: UnixSocket, service: CoordinationService) {
        self.socket = socket
        self.service = service
    }

    func send(_ message: WireMessage) {
        do { try socket.send(message.encoded()) } catch { socket.shutdown() }
    }

    /// The client's process id (from its hello).
    var pid: Int32 { state.withLock { $0.pid } }

    func send(_ messages: [WireMessage]) {
        do { try socket.send(lines: messages.map { $0.encoded() }) } catch { socket.shutdown() }
    }

    /// Registers a pending reply and returns its message id (0 when the connection is closed,
    /// in which case `reply` was already called: a gone presenter counts as having answered).
    func expectReply(_ reply: @escaping @Sendable (UbiquityError?) -> Void) -> UInt64? {
        let id = service.makeID()
        let open = state.withLock { state -> Bool in
            guard !state.closed else { return false }
            state.replies[id] = reply
            return true
        }
        if !open { reply(nil); return nil }
        return id
    }

    /// Serves the connection until the client goes away.
    func run() {
        let engine = service.engine
        while let line = socket.readLine() {
            let message: WireMessage
            do {
                message = try WireMessage(decoding: line)
            } catch {
                service.logger.debug("bad coordination message", metadata: ["ubiquity.error": "\(error)"])
                continue
            }
            switch message {
            case .hello(let pid):
                state.withLock { $0.pid = pid }
            case .addPresenter(let clientID, let purpose, let path):
                let engineID = service.makeID()
                // Registering the same presenter again (a reconnect race) replaces it: one
                // registration, one copy of every message.
                if let old = state.withLock({ $0.presenters.updateValue(engineID, forKey: clientID) }) {
                    engine.removePresenter(id: old)
                }
                engine.addPresenter(id: engineID, purpose: purpose, path: path,
                                    endpoint: RemotePresenterEndpoint(connection: self, clientID: clientID))
                send(.presenterAdded(id: clientID))
            case .removePresenter(let clientID):
                if let engineID = state.withLock({ $0.presenters.removeValue(forKey: clientID) }) { engine.removePresenter(id: engineID) }
            case .updatePresenter(let clientID, let path):
                if let engineID = state.withLock({ $0.presenters[clientID] }) { engine.updatePresenter(id: engineID, path: path) }
            case .claim(let clientID, let purpose, let isPrepare, let millis, let items):
                let engineID = service.makeID()
                state.withLock { $0.claims[clientID] = (engineID, false) }
                var request = ClaimRequest(id: engineID, purpose: purpose, items: items, isPrepare: isPrepare,
                                           timeout: .milliseconds(max(millis, 1)))
                request.origin = "process \(pid)"
                engine.request(request) { [self] error in
                    if let error {
                        self.state.withLock { _ = $0.claims.removeValue(forKey: clientID) }
                        self.send(.failed(id: clientID, error: UbiquityErrorWire(error)))
                    } else {
                        self.state.withLock { $0.claims[clientID]?.granted = true }
                        self.send(.granted(id: clientID))
                    }
                }
            case .cancel(let clientID):
                if let claim = state.withLock({ $0.claims[clientID] }) { engine.cancel(claim.engineID) }
            case .finish(let clientID):
                if let claim = state.withLock({ $0.claims.removeValue(forKey: clientID) }) { engine.finish(claim.engineID) }
            case .didMove(let from, let to, let purpose):
                engine.itemDidMove(from: from, to: to, purpose: purpose)
            case .reply(let messageID, let error):
                state.withLock { $0.replies.removeValue(forKey: messageID) }?(error?.error)
            case .version(let kind, let path, let versionID):
                engine.versionEvent(kind, path: path, versionID: versionID)
                service.versionSettled(path: path)  // gained too: sync shares a conflict version an app kept
            case .attributes(let path, let keys):
                engine.ubiquityAttributesChanged(path: path, keys: keys)
            case .presenterAdded, .granted, .failed, .message:
                continue  // daemon-to-client messages are not accepted from clients
            }
        }
        close()
    }

    private func close() {
        let engine = service.engine
        let (presenters, claims, replies, pid) = state.withLock { state in
            state.closed = true
            defer { state.presenters.removeAll(); state.claims.removeAll(); state.replies.removeAll() }
            return (Array(state.presenters.values), Array(state.claims.values), Array(state.replies.values), state.pid)
        }
        service.logger.debug("coordination client went away", metadata: [
            "ubiquity.pid": "\(pid)", "ubiquity.presenters": "\(presenters.count)", "ubiquity.claims": "\(claims.count)",
        ])
        for id in presenters { engine.removePresenter(id: id) }
        for reply in replies { reply(nil) }
        for claim in claims {
            if claim.granted { engine.finish(claim.engineID) } else { engine.cancel(claim.engineID) }
        }
    }
}

/// A presenter living in a client process: messages go over that process's connection.
final class RemotePresenterEndpoint: PresenterEndpoint {
    private let connection: ServiceConnection
    private let clientID: UInt64

    var location: String { "in process \(connection.pid)" }

    init(connection: ServiceConnection, clientID: UInt64) {
        self.connection = connection
        self.clientID = clientID
    }

    /// Several reply-less messages in one socket write.
    func deliver(_ messages: [PresenterMessage]) {
        connection.send(messages.map { .message(messageID: 0, presenterID: clientID, $0) })
    }

    func deliver(_ message: PresenterMessage, reply: (@Sendable (UbiquityError?) -> Void)?) {
        if let reply {
            guard let messageID = connection.expectReply(reply) else { return }
            connection.send(.message(messageID: messageID, presenterID: clientID, message))
        } else {
            connection.send(.message(messageID: 0, presenterID: clientID, message))
        }
    }
}
