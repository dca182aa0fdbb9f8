// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import HummingbirdCore
import HummingbirdWebSocket
import Logging
import NIOCore
import ServiceLifecycle
import UbiquityCore
import UbiquityWire

/// The request context of the WebSocket router: Hummingbird's, plus the connection's channel so
/// a client that stops reading can be disconnected.
struct PushWebSocketContext: RequestContext, WebSocketRequestContext {
    var coreContext: CoreRequestContextStorage
    let webSocket: WebSocketHandlerReference<PushWebSocketContext>
    let channel: any Channel

    init(source: ApplicationRequestContextSource) {
        coreContext = CoreRequestContextStorage(source: source)
        webSocket = WebSocketHandlerReference()
        channel = source.channel
    }
}

/// The delivery endpoints at the `webcourierURL` that `tokens/create` hands out,
/// `/push/1/{apnsToken}`:
///
/// * `GET` — long-poll: waits up to `timeout` seconds (at most the configured limit) for
///   notifications after the resume point and answers
///   `{"notifications": [payload…], "position": N, "resync": bool}`.
/// * `GET` with a WebSocket upgrade — text frames `{"type": "ready", "position": N}`, then
///   `{"type": "notification", "position": N, "notification": payload}` for each notification
///   and `{"type": "resync", "position": N}` when the client missed notifications the log no
///   longer has.
///
/// The resume point is `position=N` (from an earlier answer or frame) or `since=NOTIFICATION-ID`
/// (the last notification seen); with neither, delivery starts with the next notification.
struct PushRoutes: Sendable {
    let push: PushService
    let logger: Logger

    /// The path of both endpoints.
    static let path: RouterPath = "/push/1/:token"

    /// The resume point and time-out of a request's query string.
    struct Resume {
        var since: String?
        var position: Int64?
        var timeout: Int?

        init(_ uri: URI) {
            let query = uri.queryParameters
            since = query.get("since").flatMap { $0.isEmpty ? nil : $0 }
            position = query.get("position").flatMap { Int64($0) }
            timeout = query.get("timeout").flatMap { Int($0) }
        }
    }

    /// Registers the long-poll endpoint on the HTTP router.
    func register<Context: RequestContext>(on router: Router<Context>) {
        let push = self.push
        router.get(Self.path) { request, context -> Response in
            let token = context.parameters.get("token") ?? ""
            do {
                guard let key = try await push.logKey(forToken: token) else {
                    return Self.error(WireError(.authenticationFailed, "unknown or expired push token; create one with tokens/create"), status: .unauthorized)
                }
                let resume = Resume(request.uri)
                let timeout = max(0, min(resume.timeout ?? push.configuration.longPollTimeout, push.configuration.longPollTimeout))
                var feed = try await NotificationFeed.open(store: push.store, hub: push.hub, key: key, since: resume.since,
                                                           position: resume.position, configuration: push.configuration)
                let listener = feed.listener
                let deadline = ContinuousClock.now + .seconds(timeout)
                var notifications: [StoredNotification] = []
                var resync = false
                do {
                    try await withGracefulShutdownHandler {
                        loop: while true {
                            switch try await feed.next(deadline: deadline) {
                            case .notifications(let rows):
                                notifications = rows
                                break loop
                            case .resync:
                                // Say so now; what is still in the log comes with the next poll.
                                resync = true
                                break loop
                            case .closed, .timedOut:
                                break loop
                            }
                        }
                    } onGracefulShutdown: {
                        listener.close()
                    }
                } catch {
                    await feed.close()
                    throw error
                }
                await feed.close()
                let body: JSONValue = .object([
                    "notifications": .array(notifications.map(\.payload)),
                    "position": .integer(feed.position),
                    "resync": .bool(resync),
                ])
                return Self.json(body, status: .ok)
            } catch let error as WireError {
                return Self.error(error, status: HTTPResponse.Status(code: error.code.httpStatus))
            } catch {
                return Self.error(WireError(.tryAgainLater, "the notification log cannot be read now: \(error)", retryAfter: 1), status: .serviceUnavailable)
            }
        }
    }

    /// The WebSocket router (given to the server's HTTP/1 upgrade channel).
    func webSocketRouter() -> Router<PushWebSocketContext> {
        let router = Router(context: PushWebSocketContext.self)
        let push = self.push
        let logger = self.logger
        router.ws(Self.path) { request, context in
            let token = context.parameters.get("token") ?? ""
            guard (try? await push.logKey(forToken: token)) != nil else { return .dontUpgrade }
            return .upgrade([:])
        } onUpgrade: { inbound, outbound, context in
            let token = context.requestContext.parameters.get("token") ?? ""
            guard let key = try await push.logKey(forToken: token) else { return }
            let resume = Resume(context.request.uri)
            let channel = context.requestContext.channel
            let writeTimeout = Duration.seconds(max(1, push.configuration.webSocketWriteTimeout))
            // On graceful shutdown the connection is closed at once: the server waits for its
            // connections before the push service stops, and a client that never answers the
            // close frame must not hold the shutdown (it reconnects and resumes elsewhere).
            await withGracefulShutdownHandler {
            await withThrowingTaskGroup(of: Void.self) { group in
                // The client's frames are read (and dropped) so its close is seen.
                group.addTask {
                    for try await _ in inbound.messages(maxSize: 1 << 16) {}
                }
                group.addTask {
                    var feed = try await NotificationFeed.open(store: push.store, hub: push.hub, key: key, since: resume.since,
                                                               position: resume.position, configuration: push.configuration)
                    do {
                        try await Self.write(["type": "ready", "position": .integer(feed.position)], to: outbound, channel: channel, timeout: writeTimeout)
                        loop: while true {
                            switch try await feed.next() {
                            case .notifications(let rows):
                                for row in rows {
                                    try await Self.write(["type": "notification", "position": .integer(row.sequence), "notification": row.payload],
                                                         to: outbound, channel: channel, timeout: writeTimeout)
                                }
                            case .resync(let position):
                                try await Self.write(["type": "resync", "position": .integer(position)], to: outbound, channel: channel, timeout: writeTimeout)
                            case .closed, .timedOut:
                                break loop
                            }
                        }
                    } catch {
                        await feed.close()
                        throw error
                    }
                    await feed.close()
                }
                do {
                    try await group.next()
                } catch {
                    logger.debug("a push WebSocket ended", metadata: ["error": "\(error)"])
                }
                group.cancelAll()
            }
            } onGracefulShutdown: {
                channel.close(promise: nil)
            }
        }
        return router
    }

    /// Writes one text frame; a client that has not taken it within `timeout` (it stopped
    /// reading, and the socket's buffers are full) is disconnected.
    static func write(_ message: JSONValue, to outbound: WebSocketOutboundWriter, channel: any Channel, timeout: Duration) async throws {
        let text = String(decoding: message.serialized(), as: UTF8.self)
        let written = try await withThrowingTaskGroup(of: Bool.self) { group in
            group.addTask {
                try await outbound.write(.text(text))
                return true
            }
            group.addTask {
                try await Task.sleep(for: timeout)
                return false
            }
            let first = try await group.next() ?? false
            if !first { channel.close(promise: nil) }
            group.cancelAll()
            return first
        }
        if !written { throw UbiquityError(.timedOut, "the WebSocket client did not read for \(timeout); disconnected") }
    }

    static func json(_ value: JSONValue, status: HTTPResponse.Status) -> Response {
        Response(status: status, headers: [.contentType: "application/json; charset=UTF-8", .cacheControl: "no-store"],
                 body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.serialized())))
    }

    static func error(_ error: WireError, status: HTTPResponse.Status) -> Response {
        json(error.json(), status: status)
    }
}
