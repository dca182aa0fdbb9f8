// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import NIOCore
import UbiquityWire

/// The request context of the records server's router: Hummingbird's core context, the client's
/// address (for the per-caller rate limits of anonymous callers) and, on the `/database/1/…`
/// routes, the authenticated call ``RecordsAuthMiddleware`` found.
package struct RecordsRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage.
    package var coreContext: CoreRequestContextStorage
    /// The client's socket address (the proxy's, behind a reverse proxy).
    package let remoteAddress: SocketAddress?
    /// The caller and the call, on the `/database/1/…` routes (set by ``RecordsAuthMiddleware``
    /// before the operation's route runs).
    var call: RecordsCall?

    /// Makes the context of a request arriving on `source.channel`.
    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }

    /// Request bodies are decoded as CloudKit reads them (``RecordsRequestDecoder``).
    package var requestDecoder: RecordsRequestDecoder { RecordsRequestDecoder() }

    /// The call ``RecordsAuthMiddleware`` authenticated (an operation's route runs only after it).
    func authenticatedCall() throws -> RecordsCall {
        guard let call else { throw WireError(.internalError, "the operation's route ran without its authentication middleware") }
        return call
    }
}
