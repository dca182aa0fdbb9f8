// SPDX-License-Identifier: Apache-2.0
import HummingbirdCore
import Logging
import NIOCore

/// Wraps the server's child channel with the connection limits (issue 24, finding 5): a
/// connection over the ``ConnectionCap`` is answered 503 and closed
/// (``ConnectionRefusalHandler``); one under it holds a slot until it closes and must send each
/// request head within the header timeout (``RequestHeadDeadlineHandler``). Its handler goes
/// first (after TLS, when the wrapped channel is inside ``TLSChannel``).
struct LimitedChildChannel<Base: ServerChildChannel>: ServerChildChannel {
    typealias Value = Base.Value

    let base: Base
    /// The connection cap; nil: unlimited.
    let cap: ConnectionCap?
    /// The header-read timeout; nil: none.
    let headerTimeout: TimeAmount?
    let logger: Logger

    func setup(channel: any Channel, logger: Logger) -> EventLoopFuture<Value> {
        let cap = self.cap, headerTimeout = self.headerTimeout, serverLogger = self.logger
        return channel.eventLoop.makeCompletedFuture {
            let operations = channel.pipeline.syncOperations
            if let cap {
                guard cap.acquire() else {
                    cap.noteRefusal()
                    try operations.addHandler(ConnectionRefusalHandler(answer: cap.refusal))
                    return
                }
                channel.closeFuture.whenComplete { _ in cap.release() }
            }
            if let headerTimeout {
                try operations.addHandler(RequestHeadDeadlineHandler(timeout: headerTimeout, logger: serverLogger))
            }
        }.flatMap {
            self.base.setup(channel: channel, logger: logger)
        }
    }

    func handle(value: Value, logger: Logger) async {
        await base.handle(value: value, logger: logger)
    }
}
