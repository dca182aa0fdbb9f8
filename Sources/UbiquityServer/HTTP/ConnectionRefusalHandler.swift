// SPDX-License-Identifier: Apache-2.0
import NIOCore

/// The first handler of a connection over ``ConnectionCap/limit``: writes the 503 answer as soon
/// as the connection is active, reads nothing on to the HTTP handlers, and closes the connection
/// once the client has closed its side or ``linger`` has passed (so that the answer is not lost
/// to a reset while the client is still sending its request).
final class ConnectionRefusalHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    /// How long the refused connection stays open for the answer to arrive.
    static let linger: TimeAmount = .seconds(1)

    private let answer: ByteBuffer
    private var answered = false
    private var deadline: Scheduled<Void>?

    init(answer: ByteBuffer) {
        self.answer = answer
    }

    func handlerAdded(context: ChannelHandlerContext) {
        if context.channel.isActive { refuse(context) }
    }

    func channelActive(context: ChannelHandlerContext) {
        refuse(context)
        context.fireChannelActive()
    }

    private func refuse(_ context: ChannelHandlerContext) {
        guard !answered else { return }
        answered = true
        context.writeAndFlush(NIOAny(answer), promise: nil)
        deadline = context.eventLoop.assumeIsolated().scheduleTask(in: Self.linger) {
            context.closeAsClientGone()
        }
    }

    /// The request is dropped: no HTTP handler hears of it.
    func channelRead(context: ChannelHandlerContext, data: NIOAny) {}

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        if let event = event as? ChannelEvent, event == .inputClosed {
            context.closeAsClientGone()
        } else {
            context.fireUserInboundEventTriggered(event)
        }
    }

    func channelInactive(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
        context.fireChannelInactive()
    }

    func handlerRemoved(context: ChannelHandlerContext) {
        deadline?.cancel()
        deadline = nil
    }
}
