// SPDX-License-Identifier: Apache-2.0
import Foundation
import HummingbirdWSClient
import Logging
import NIOCore
import Synchronization
import UbiquityWire
import UbiquityCore

extension CloudContainer {
    /// How ``notifications(since:transport:onConnect:)`` reaches the server.
    public enum NotificationTransport: Sendable, Hashable {
        /// A WebSocket, falling back to long-poll when the server (or a proxy) refuses the upgrade.
        case automatic
        /// Long-poll only (`GET webcourierURL`, as CloudKit JS does).
        case longPoll
        /// A WebSocket only.
        case webSocket
    }

    /// Where a notification stream starts: after a notification already seen, or from the next
    /// one.
    public struct NotificationCursor: Sendable, Hashable, Codable {
        /// The position in the user's notification log (``CloudKitNotification/position``).
        public var position: Int64?
        /// The notification ID (``CloudKitNotification/notificationID``), used when no position.
        public var notificationID: String?

        /// Resumes after `notification`.
        public init(after notification: CloudKitNotification) {
            position = notification.position
            notificationID = notification.notificationID
        }

        /// Resumes after the notification at `position` or with ID `notificationID`.
        public init(position: Int64? = nil, notificationID: String? = nil) {
            self.position = position
            self.notificationID = notificationID
        }
    }

    /// A push token and its delivery URL (`tokens/create`).
    public struct PushToken: Sendable, Hashable {
        /// The token (a bearer secret: it reads the user's notifications).
        public var apnsToken: String
        /// `development` or `production`.
        public var apnsEnvironment: String
        /// Long-poll with GET, WebSocket with an upgrade.
        public var webcourierURL: URL
    }

    /// Creates a push token for the signed-in user (`tokens/create`).
    public func createPushToken(apnsEnvironment: String? = nil) async throws -> PushToken {
        let body: JSONValue = .object(["apnsEnvironment": .string(apnsEnvironment ?? environment.rawValue)])
        let response = try await send(.private, "tokens/create", body: body)
        return try Self.unexpected("tokens/create") {
            let reader = try WireReader(response, path: "")
            let text = try reader.requiredString("webcourierURL")
            guard let url = URL(string: text) else { throw UbiquityError(.invalidArgument, "webcourierURL: not a URL") }
            return PushToken(apnsToken: try reader.requiredString("apnsToken"),
                             apnsEnvironment: try reader.string("apnsEnvironment") ?? environment.rawValue, webcourierURL: url)
        }
    }

    /// The signed-in user's notifications, from every subscription in this container, as they
    /// happen: an `AsyncSequence` that connects by itself (a WebSocket, or long-poll), resumes
    /// after the last notification it yielded when the connection drops, and retries with
    /// back-off while the server is unreachable. It ends when the iterating task is cancelled,
    /// and throws only what retrying cannot fix (not signed in, not allowed).
    ///
    /// ```swift
    /// for try await notification in container.notifications() {
    ///     if let query = notification as? QueryNotification { … fetch query.recordID … }
    /// }
    /// ```
    ///
    /// Delivery is at-least-once: pass the last notification seen (``NotificationCursor``) to
    /// get what arrived while the app was not listening. A notification of type
    /// ``CloudKitNotification/NotificationType/resyncRequired`` means some were lost (the app was
    /// away longer than the server keeps them): fetch changes with change tokens.
    ///
    /// - Parameter onConnect: called each time the stream is connected (a WebSocket's server
    ///   said it is ready; a long-poll connection's first request is about to be sent).
    ///   Notifications sent while no connection was up reach a stream started without a cursor
    ///   only from its next connection on: a client that fetches changes with change tokens
    ///   fetches once here, so nothing sent before the first connection waits for its next
    ///   periodic fetch.
    public func notifications(since cursor: NotificationCursor? = nil, transport: NotificationTransport = .automatic,
                              onConnect: (@Sendable () -> Void)? = nil) -> CloudKitNotifications {
        CloudKitNotifications(container: self, cursor: cursor, transport: transport, onConnect: onConnect)
    }
}

/// The notifications of ``CloudContainer/notifications(since:transport:onConnect:)``.
public struct CloudKitNotifications: AsyncSequence, Sendable {
    /// Each notification.
    public typealias Element = CloudKitNotification

    let container: CloudContainer
    let cursor: CloudContainer.NotificationCursor?
    let transport: CloudContainer.NotificationTransport
    let onConnect: (@Sendable () -> Void)?

    /// Starts connecting.
    public func makeAsyncIterator() -> Iterator {
        Iterator(driver: NotificationDriver(container: container, cursor: cursor, transport: transport, onConnect: onConnect))
    }

    /// Pulls notifications; dropping it disconnects.
    public final class Iterator: AsyncIteratorProtocol {
        let driver: NotificationDriver

        init(driver: NotificationDriver) {
            self.driver = driver
            driver.start()
        }

        /// The next notification; nil when the iterating task is cancelled.
        public func next() async throws -> CloudKitNotification? {
            try await driver.handoff.pop()
        }

        deinit { driver.stop() }
    }
}

/// A bounded queue between the connection task and the iterator: the connection waits when
/// the app does not keep up (so nothing is dropped, and the server's own bound applies).
final class NotificationHandoff: Sendable {
    private struct State {
        var buffer: [CloudKitNotification] = []
        var failure: (any Error)?
        var finished = false
        var consumer: CheckedContinuation<Void, Never>?
        var producer: CheckedContinuation<Void, Never>?
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 64) {
        self.capacity = capacity
    }

    /// Adds a notification, waiting while the queue is full; false once finished.
    func push(_ notification: CloudKitNotification) async -> Bool {
        while true {
            let (accepted, consumer) = state.withLock { state -> (Bool?, CheckedContinuation<Void, Never>?) in
                if state.finished { return (false, nil) }
                guard state.buffer.count < capacity else { return (nil, nil) }
                state.buffer.append(notification)
                defer { state.consumer = nil }
                return (true, state.consumer)
            }
            consumer?.resume()
            if let accepted { return accepted }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        if state.finished || state.buffer.count < capacity || Task.isCancelled { return true }
                        state.producer = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let producer = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    defer { state.producer = nil }
                    return state.producer
                }
                producer?.resume()
            }
            if Task.isCancelled { return false }
        }
    }

    /// Ends the sequence (with an error to throw after the buffered notifications).
    func finish(_ failure: (any Error)? = nil) {
        let (consumer, producer) = state.withLock { state -> (CheckedContinuation<Void, Never>?, CheckedContinuation<Void, Never>?) in
            if !state.finished {
                state.finished = true
                state.failure = failure
            }
            defer {
                state.consumer = nil
                state.producer = nil
            }
            return (state.consumer, state.producer)
        }
        consumer?.resume()
        producer?.resume()
    }

    /// The next notification; nil when finished (or the task is cancelled).
    func pop() async throws -> CloudKitNotification? {
        while true {
            let (item, producer, done) = state.withLock { state -> (CloudKitNotification?, CheckedContinuation<Void, Never>?, Bool) in
                if !state.buffer.isEmpty {
                    let item = state.buffer.removeFirst()
                    defer { state.producer = nil }
                    return (item, state.producer, false)
                }
                return (nil, nil, state.finished)
            }
            producer?.resume()
            if let item { return item }
            if done {
                let failure = state.withLock { state -> (any Error)? in
                    defer { state.failure = nil }
                    return state.failure
                }
                if let failure { throw failure }
                return nil
            }
            if Task.isCancelled { return nil }
            await withTaskCancellationHandler {
                await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
                    let now = state.withLock { state -> Bool in
                        if state.finished || !state.buffer.isEmpty || Task.isCancelled { return true }
                        state.consumer = continuation
                        return false
                    }
                    if now { continuation.resume() }
                }
            } onCancel: {
                let consumer = state.withLock { state -> CheckedContinuation<Void, Never>? in
                    defer { state.consumer = nil }
                    return state.consumer
                }
                consumer?.resume()
            }
            if Task.isCancelled { return nil }
        }
    }
}

/// The connection loop behind a ``CloudKitNotifications`` iterator.
final class NotificationDriver: Sendable {
    private struct Progress {
        var cursor: CloudContainer.NotificationCursor?
        var token: CloudContainer.PushToken?
        var transport: CloudContainer.NotificationTransport
        var task: Task<Void, Never>?
        var stopped = false
    }

    let container: CloudContainer
    let handoff = NotificationHandoff()
    private let progress: Mutex<Progress>
    /// The longest pause between reconnection attempts.
    static let maximumDelay = Duration.seconds(30)

    /// Called each time a connection is up (``CloudContainer/notifications(since:transport:onConnect:)``).
    let onConnect: (@Sendable () -> Void)?

    init(container: CloudContainer, cursor: CloudContainer.NotificationCursor?, transport: CloudContainer.NotificationTransport,
         onConnect: (@Sendable () -> Void)? = nil) {
        self.container = container
        self.onConnect = onConnect
        progress = Mutex(Progress(cursor: cursor, transport: transport))
    }

    func start() {
        let task = Task { [self] in await run() }
        let cancel = progress.withLock { progress -> Bool in
            progress.task = task
            return progress.stopped
        }
        if cancel { task.cancel() }
    }

    func stop() {
        let task = progress.withLock { progress -> Task<Void, Never>? in
            progress.stopped = true
            return progress.task
        }
        task?.cancel()
        handoff.finish()
    }

    /// Why a connection ended.
    private enum Ended: Error {
        /// The push token is unknown or expired: make another.
        case tokenRefused
        /// The WebSocket upgrade was refused: try long-poll.
        case upgradeRefused
    }

    private func run() async {
        var delay = Duration.milliseconds(100)
        while !Task.isCancelled {
            do {
                var token = progress.withLock { $0.token }
                if token == nil {
                    token = try await container.createPushToken()
                    progress.withLock { $0.token = token }
                }
                guard let token else { continue }
                let transport = progress.withLock { $0.transport }
                if transport == .longPoll {
                    try await longPoll(token)
                } else {
                    try await webSocket(token)
                }
                delay = .milliseconds(100)
                continue
            } catch Ended.tokenRefused {
                progress.withLock { $0.token = nil }
                continue
            } catch Ended.upgradeRefused {
                let fallback = progress.withLock { progress -> Bool in
                    guard progress.transport == .automatic else { return false }
                    progress.transport = .longPoll
                    return true
                }
                if fallback {
                    container.logger.debug("the WebSocket upgrade was refused; using long-poll")
                    continue
                }
            } catch let error as CloudKitError where [.notAuthenticated, .permissionFailure, .badContainer, .missingEntitlement].contains(error.code) {
                handoff.finish(error)
                return
            } catch {
                if Task.isCancelled { break }
                container.logger.debug("notification connection failed; retrying", metadata: ["error": "\(error)", "delay": "\(delay)"])
            }
            let jitter = Duration.milliseconds(Int.random(in: 0...50))
            do { try await Task.sleep(for: delay + jitter) } catch { break }
            delay = min(delay * 2, Self.maximumDelay)
        }
        handoff.finish()
    }

    /// Delivers a notification (or the resync notice) and moves the cursor past it; false when
    /// the iterator is gone.
    private func deliver(_ notification: CloudKitNotification) async -> Bool {
        guard await handoff.push(notification) else { return false }
        progress.withLock { progress in
            if let position = notification.position {
                progress.cursor = CloudContainer.NotificationCursor(position: position, notificationID: notification.notificationID)
            } else if let id = notification.notificationID {
                progress.cursor = CloudContainer.NotificationCursor(position: nil, notificationID: id)
            }
        }
        return true
    }

    private func resumeQuery() -> [URLQueryItem] {
        let cursor = progress.withLock { $0.cursor }
        if let position = cursor?.position { return [URLQueryItem(name: "position", value: String(position))] }
        if let id = cursor?.notificationID { return [URLQueryItem(name: "since", value: id)] }
        return []
    }

    private func url(_ base: URL, scheme: String?, extra: [URLQueryItem]) -> URL? {
        guard var components = URLComponents(url: base, resolvingAgainstBaseURL: false) else { return nil }
        if let scheme { components.scheme = scheme }
        components.queryItems = (components.queryItems ?? []) + resumeQuery() + extra
        return components.url
    }

    // MARK: Long-poll

    private func longPoll(_ token: CloudContainer.PushToken) async throws {
        var first = true
        while !Task.isCancelled {
            guard let url = url(token.webcourierURL, scheme: nil, extra: [URLQueryItem(name: "timeout", value: "25")]),
                  let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
                  let server = URL(string: "\(components.scheme ?? "http")://\(components.percentEncodedHost ?? "localhost")\(components.port.map { ":\($0)" } ?? "")") else {
                throw CloudKitError(.internalError, "the server's webcourierURL \(token.webcourierURL) is not usable")
            }
            let query = (components.queryItems ?? []).map { CloudKitHTTPRequest.QueryItem(name: $0.name, value: $0.value ?? "") }
            let request = CloudKitHTTPRequest(serverURL: server, method: "GET", path: components.percentEncodedPath, query: query)
            if first {
                first = false
                onConnect?()
            }
            let response = try await container.transport.send(request)
            if response.status == 401 || response.status == 421 { throw Ended.tokenRefused }
            guard (200..<300).contains(response.status) else {
                if let json = try? JSONValue.parse(response.body), let wire = WireError(json: json) {
                    throw CloudKitError(wire: wire, httpStatus: response.status)
                }
                throw CloudKitError.http(status: response.status, body: response.body)
            }
            let reader = try CloudContainer.unexpected("push long-poll") { try WireReader(JSONValue.parse(response.body), path: "") }
            let payloads = try CloudContainer.unexpected("push long-poll") { try reader.array("notifications") ?? [] }
            let last = try CloudContainer.unexpected("push long-poll") { try reader.integer("position") }
            if try CloudContainer.unexpected("push long-poll", { try reader.bool("resync") }) == true {
                guard await deliver(CloudKitNotification.resync(position: last)) else { return }
            }
            // A page is consecutive entries of the log, ending at `position`.
            for (index, payload) in payloads.enumerated() {
                let position = last.map { $0 - Int64(payloads.count - 1 - index) }
                guard let notification = CloudKitNotification.from(payload: payload, position: position) else { continue }
                guard await deliver(notification) else { return }
            }
            if let last, payloads.isEmpty {
                progress.withLock { progress in
                    if progress.cursor?.position == nil { progress.cursor = CloudContainer.NotificationCursor(position: last) }
                }
            }
        }
    }

    // MARK: WebSocket

    private func webSocket(_ token: CloudContainer.PushToken) async throws {
        let scheme = token.webcourierURL.scheme == "https" ? "wss" : "ws"
        guard let url = url(token.webcourierURL, scheme: scheme, extra: []) else {
            throw CloudKitError(.internalError, "the server's webcourierURL \(token.webcourierURL) is not usable")
        }
        var logger = container.logger
        logger.logLevel = max(logger.logLevel, .info)
        let refused = Mutex(false)
        do {
            try await WebSocketClient.connect(url: url.absoluteString, logger: logger) { [self] inbound, _, _ in
                for try await message in inbound.messages(maxSize: 1 << 22) {
                    guard case .text(let text) = message, let json = try? JSONValue.parse(Data(text.utf8)),
                          let members = json.objectValue else { continue }
                    let position = members["position"].flatMap { value -> Int64? in
                        if case .integer(let number) = value { return number }
                        return nil
                    }
                    switch members["type"]?.stringValue {
                    case "notification":
                        guard let payload = members["notification"],
                              let notification = CloudKitNotification.from(payload: payload, position: position) else { continue }
                        guard await deliver(notification) else { return }
                    case "resync":
                        guard await deliver(CloudKitNotification.resync(position: position)) else { return }
                    case "ready":
                        progress.withLock { progress in
                            if progress.cursor?.position == nil, let position { progress.cursor = CloudContainer.NotificationCursor(position: position) }
                        }
                        onConnect?()
                    default:
                        continue
                    }
                }
            }
        } catch let error as WebSocketClientError where error == .webSocketUpgradeFailed {
            refused.withLock { $0 = true }
        }
        if refused.withLock({ $0 }) {
            // A bad token and a server without WebSockets both refuse the upgrade: ask plainly.
            if try await tokenRefused(token) { throw Ended.tokenRefused }
            throw Ended.upgradeRefused
        }
    }

    /// Whether the delivery URL refuses the token (a zero-time-out long-poll).
    private func tokenRefused(_ token: CloudContainer.PushToken) async throws -> Bool {
        guard let url = url(token.webcourierURL, scheme: nil, extra: [URLQueryItem(name: "timeout", value: "0")]),
              let components = URLComponents(url: url, resolvingAgainstBaseURL: false),
              let server = URL(string: "\(components.scheme ?? "http")://\(components.percentEncodedHost ?? "localhost")\(components.port.map { ":\($0)" } ?? "")") else {
            return false
        }
        let query = (components.queryItems ?? []).map { CloudKitHTTPRequest.QueryItem(name: $0.name, value: $0.value ?? "") }
        let response = try await container.transport.send(CloudKitHTTPRequest(serverURL: server, method: "GET", path: components.percentEncodedPath, query: query))
        return response.status == 401 || response.status == 421
    }
}
