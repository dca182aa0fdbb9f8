// SPDX-License-Identifier: Apache-2.0
import Logging
import NIOCore

/// What ``HTTPRequestProgressHandler`` tells ``RequestHeadDeadlineHandler`` (as user outbound
/// events, which travel from the HTTP handlers back to the front of the pipeline).
enum RequestHeadEvent: Sendable {
    /// A request's head has been read whole.
    case headReceived
    /// Every request read so far has been answered: the next request's head is awaited.
    case awaitingNextRequest
}

/// The header-read timeout (issue 24, finding 5): a request's head must arrive whole within
/// ``timeout`` of the connection's start (TLS handshake included) or, on a kept-alive
/// connection, of the first byte of the next request; otherwise the connection is closed. A
/// client that trickles a header a byte at a time cannot keep a connection (and its file
/// descriptor) for ever. The wait between requests is the idle timeout's (Hummingbird's
/// `HTTPConnectionStateHandler`).
///
/// It sits before the HTTP handlers (after TLS), where no HTTP parsing is seen: the heads are
/// reported by ``HTTPRequestProgressHandler`` behind the HTTP codec. A response written before
/// any head was reported (the WebSocket upgrade's `101`, an HTTP parse error's `400`) ends the
/// deadline too.
final class RequestHeadDeadlineHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer
    typealias OutboundIn = IOData
    typealias OutboundOut = IOData

    private enum State {
        /// A head is awaited; `deadline` nil until its first byte (or the connection) starts it.
        case awaitingHead(deadline: Scheduled<Void>?)
        /// A request is being read or answered: no deadline.
        case inRequest
    }

    let timeout: TimeAmount
    let logger: Logger
    private var state: State = .awaitingHead(deadline: nil)
    /// Whether ``HTTPRequestProgressHandler`` has reported a head (then it reports each).
    private var reported = false

    init(timeout: TimeAmount, logger: Logger) {
        self.timeout = timeout
        self.logger = logger
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { arm(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        arm(context)
        context.fireChannelActive()
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        arm(context)
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        // an answer no head was reported for: the connection left HTTP/1 (upgrade) or is closing
        if !reported, case .awaitingHead = state { disarm(then: .inRequest) }
        context.write(data, promise: promise)
    }

    func triggerUserOutboundEvent(context: ChannelHandlerContext, event: Any, promise: EventLoopPromise<Void>?) {
        guard let event = event as? RequestHeadEvent else {
            context.triggerUserOutboundEvent(event, promise: promise)
            return
        }
        reported = true
        switch event {
        case .headReceived: disarm(then: .inRequest)
        case .awaitingNextRequest: disarm(then: .awaitingHead(deadline: nil))
        }
        promise?.succeed()
    }

    /// Starts the deadline when a head is awaited and none runs yet.
    private func arm(_ context: ChannelHandlerContext) {
        guard case .awaitingHead(nil) = state else { return }
        let timeout = self.timeout
        let logger = self.logger
        state = .awaitingHead(deadline: context.eventLoop.assumeIsolated().scheduleTask(in: timeout) {
            logger.debug("closing a connection whose request head did not arrive in time",
                         metadata: ["client": "\(context.channel.remoteAddress?.description ?? "?")",
                                    "timeout": "\(Double(timeout.nanoseconds) / 1e9) s"])
            context.closeAsClientGone()
        })
    }

    private func disarm(then next: State) {
        if case .awaitingHead(let deadline?) = state { deadline.cancel() }
        state = next
    }

    func channelInactive(context: ChannelHandlerContext) {
        disarm(then: .inRequest)
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        disarm(then: .inRequest)
    }
}
