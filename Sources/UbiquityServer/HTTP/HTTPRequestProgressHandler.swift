// SPDX-License-Identifier: Apache-2.0
import HTTPTypes
import NIOCore
import NIOHTTPTypes

/// Follows each request of a connection behind the HTTP codec (one of Hummingbird's
/// `additionalChannelHandlers`):
///
/// - tells ``RequestHeadDeadlineHandler`` when a request's head has arrived and when the
///   connection waits for the next request (``RequestHeadEvent``);
/// - closes the connection after a response that went out before its request's body had
///   arrived (a request refused unread: a bad token, a body over a limit or over the
///   ``RequestBodyBudget``): the response says `Connection: close`, and the connection closes
///   when the body's end arrives or ``linger`` after the response, whichever is first. Without
///   it, Hummingbird would read (and drop) the rest of the body, however large, to keep the
///   connection alive.
final class HTTPRequestProgressHandler: ChannelDuplexHandler, RemovableChannelHandler {
    typealias InboundIn = HTTPRequestPart
    typealias InboundOut = HTTPRequestPart
    typealias OutboundIn = HTTPResponsePart
    typealias OutboundOut = HTTPResponsePart

    /// How long a connection stays open after a response sent before its request's body (for
    /// the client to read the response before the connection goes).
    static let linger: TimeAmount = .seconds(1)

    /// For each request read and not yet answered, oldest first: whether its body's end has
    /// arrived.
    private var requests: [Bool] = []
    /// Whether the response being written went out before its request's body.
    private var closing = false
    private var lingering: Scheduled<Void>?

    init() {}

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        switch unwrapInboundIn(data) {
        case .head:
            requests.append(false)
            context.triggerUserOutboundEvent(RequestHeadEvent.headReceived, promise: nil)
        case .body:
            break
        case .end:
            if !requests.isEmpty { requests[requests.count - 1] = true }
            if lingering != nil {
                // the body the early response did not wait for has ended: close now
                context.fireChannelRead(data)
                close(context)
                return
            }
        }
        context.fireChannelRead(data)
    }

    func write(context: ChannelHandlerContext, data: NIOAny, promise: EventLoopPromise<Void>?) {
        switch unwrapOutboundIn(data) {
        case .head(var response):
            if requests.first == false, !closing {
                closing = true
                response.headerFields[.connection] = "close"
                context.write(wrapOutboundOut(.head(response)), promise: promise)
                return
            }
            context.write(data, promise: promise)
        case .body:
            context.write(data, promise: promise)
        case .end:
            let bodyEnded = requests.isEmpty ? true : requests.removeFirst()
            guard closing else {
                context.write(data, promise: promise)
                if requests.isEmpty {
                    // (after the write: the deadline handler sees the response's last bytes first)
                    context.triggerUserOutboundEvent(RequestHeadEvent.awaitingNextRequest, promise: nil)
                }
                return
            }
            // close once the response is out: at once when the body has ended, else after the linger
            let written = context.eventLoop.makePromise(of: Void.self)
            if let promise { written.futureResult.cascade(to: promise) }
            context.writeAndFlush(data, promise: written)
            written.futureResult.assumeIsolated().whenComplete { [self] _ in
                if bodyEnded {
                    close(context)
                } else {
                    lingering = context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) { [self] in close(context) }
                }
            }
        }
    }

    private func close(_ context: ChannelHandlerContext) {
        lingering?.cancel()
        lingering = nil
        context.flush()
        context.close(promise: nil)
    }

    func channelInactive(context: ChannelHandlerContext) {
        lingering?.cancel()
        lingering = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        lingering?.cancel()
        lingering = nil
    }
}
