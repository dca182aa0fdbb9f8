// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import HummingbirdCore
import Logging
import NIOCore

/// Wraps the server's child channel (HTTP/1 with the WebSocket upgrade) so graceful shutdown
/// reaches every connection.
///
/// Hummingbird tells connections to quiesce with `ChannelShouldQuiesceEvent`, which its
/// `HTTPConnectionStateHandler` turns into "close now" (idle) or "close after this response".
/// With the WebSocket upgrade that handler is only added once the first request head has
/// arrived, so a connection opened but not yet used when the signal came never heard of it:
/// it was served afterwards and then kept alive, and the server waited for it for ever.
/// ``QuiesceGuardHandler``, added before the HTTP handlers (after TLS), closes such connections,
/// tells handlers added later, and closes whatever is still open after the grace period.
struct QuiescingChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    /// Seconds after the shutdown began when a connection is closed whatever it is doing.
    let gracePeriod: Double

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let gracePeriod = self.gracePeriod
        return channel.eventLoop.makeCompletedFuture {
            try channel.pipeline.syncOperations.addHandler(QuiesceGuardHandler(gracePeriod: gracePeriod))
        }.flatMap {
            self.base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}

/// The handler before a connection's HTTP handlers; see ``QuiescingChildChannel``.
final class QuiesceGuardHandler: ChannelInboundHandler, RemovableChannelHandler {
    typealias InboundIn = ByteBuffer
    typealias InboundOut = ByteBuffer

    let gracePeriod: Double
    /// Whether the client has sent anything (a connection that has not is closed at once).
    private var received = false
    private var quiescing = false
    private var deadline: Scheduled<Void>?

    init(gracePeriod: Double) {
        self.gracePeriod = gracePeriod
    }

    func channelRead(context: ChannelHandlerContext, data: NIOAny) {
        received = true
        context.fireChannelRead(data)
    }

    func channelReadComplete(context: ChannelHandlerContext) {
        context.fireChannelReadComplete()
        // Handlers added by what was just read (the HTTP state handler, once the first request
        // head is parsed) hear of the shutdown too.
        if quiescing { context.fireUserInboundEventTriggered(ChannelShouldQuiesceEvent()) }
    }

    func userInboundEventTriggered(context: ChannelHandlerContext, event: Any) {
        guard event is ChannelShouldQuiesceEvent else {
            context.fireUserInboundEventTriggered(event)
            return
        }
        if !quiescing {
            quiescing = true
            let seconds = max(0, gracePeriod)
            deadline = context.eventLoop.assumeIsolated().scheduleTask(in: .milliseconds(Int64(seconds * 1000))) {
                context.closeAsClientGone()
            }
        }
        if !received {
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
