// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import NIOPosix

/// The ``CloudKitTransport`` over AsyncHTTPClient. By default it uses ``sharedClient``
/// (process-wide, never shut down); pass your own client (`HTTPClient.shared`, or one you
/// configure) to control its configuration, and shut that client down yourself when done.
public struct HTTPClientTransport: CloudKitTransport {
    /// The process-wide client of the default transport: `HTTPClient.shared`'s event loops,
    /// a 10 s connect time-out, and no retrying of failed connection attempts (so a server
    /// that is down is reported at once as `networkUnavailable` rather than at the request's
    /// deadline). Never shut down, like `HTTPClient.shared`.
    public static let sharedClient: HTTPClient = {
        var configuration = HTTPClient.Configuration()
        configuration.timeout.connect = .seconds(10)
        configuration.connectionPool.retryConnectionEstablishment = false
        return HTTPClient(eventLoopGroup: HTTPClient.defaultEventLoopGroup, configuration: configuration)
    }()

    /// The client requests go through.
    public let client: HTTPClient
    /// The longest a request may take, connection included.
    public let timeout: Duration
    /// The largest response body accepted.
    public let maximumResponseBytes: Int

    /// A transport over `client` (``sharedClient`` by default).
    public init(client: HTTPClient = HTTPClientTransport.sharedClient, timeout: Duration = .seconds(60), maximumResponseBytes: Int = 64 << 20) {
        self.client = client
        self.timeout = timeout
        self.maximumResponseBytes = maximumResponseBytes
    }

    /// Sends the request; connection failures are `networkUnavailable`, other transport
    /// failures `networkFailure`.
    public func send(_ request: CloudKitHTTPRequest) async throws -> CloudKitHTTPResponse {
        var outgoing = HTTPClientRequest(url: request.url.absoluteString)
        outgoing.method = request.method == "GET" ? .GET : .POST
        for (name, value) in request.headers { outgoing.headers.add(name: name, value: value) }
        if request.method != "GET" { outgoing.body = .bytes(request.body) }
        let components = timeout.components
        let nanoseconds = components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
        do {
            let response = try await client.execute(outgoing, timeout: .nanoseconds(nanoseconds))
            let body = try await response.body.collect(upTo: maximumResponseBytes)
            var headers: [String: String] = [:]
            for header in response.headers { headers[header.name.lowercased()] = header.value }
            return CloudKitHTTPResponse(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
        } catch let error as CloudKitError {
            throw error
        } catch is CancellationError {
            throw CloudKitError.cancelled
        } catch {
            throw Self.classify(error, url: request.serverURL)
        }
    }

    /// `networkUnavailable` for failures to connect, `networkFailure` for the rest.
    static func classify(_ error: any Error, url: URL) -> CloudKitError {
        var unreachable = false
        if let error = error as? HTTPClientError {
            unreachable = error == .connectTimeout || error == .proxyAuthenticationRequired
            if error == .cancelled { return .cancelled }
        } else if error is NIOConnectionError {
            unreachable = true
        } else if let error = error as? ChannelError, case .connectTimeout = error {
            unreachable = true
        } else if let error = error as? IOError, [ECONNREFUSED, EHOSTUNREACH, ENETUNREACH, EADDRNOTAVAIL].contains(error.errnoCode) {
            unreachable = true
        } else if String(describing: error).contains("connectionRefused") || String(describing: error).contains("NXDOMAIN") {
            unreachable = true
        }
        if unreachable {
            return CloudKitError(.networkUnavailable, "cannot reach \(url.absoluteString): \(error) (is the server running, and is the URL right?)", underlying: error)
        }
        return CloudKitError(.networkFailure, "the request to \(url.absoluteString) failed: \(error)", underlying: error)
    }
}
