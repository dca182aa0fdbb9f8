// SPDX-License-Identifier: Apache-2.0
import Hummingbird
import NIOCore

/// The request context of the records server's router: Hummingbird's core context plus the
/// client's address (for the per-caller rate limits of anonymous callers).
package struct RecordsRequestContext: RequestContext, RemoteAddressRequestContext {
    /// Hummingbird's per-request storage.
    package var coreContext: CoreRequestContextStorage
    /// The client's socket address (the proxy's, behind a reverse proxy).
    package let remoteAddress: SocketAddress?

    /// Makes the context of a request arriving on `source.channel`.
    package init(source: ApplicationRequestContextSource) {
        coreContext = .init(source: source)
        remoteAddress = source.channel.remoteAddress
    }
}
