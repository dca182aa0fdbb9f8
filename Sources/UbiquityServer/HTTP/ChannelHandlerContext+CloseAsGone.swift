// SPDX-License-Identifier: Apache-2.0
import NIOCore

extension ChannelHandlerContext {
    /// Closes the connection as a client that went away would: the upgrade handler (when still
    /// there) ends its negotiation as "input closed", which Hummingbird does not log as an error.
    /// Used by the server's own closes (a refused connection, a late request head, a shutdown).
    func closeAsClientGone() {
        fireUserInboundEventTriggered(ChannelEvent.inputClosed)
        close(promise: nil)
    }
}
