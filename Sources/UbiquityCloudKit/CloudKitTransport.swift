// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One HTTP request to a CloudKit Web Services server.
public struct CloudKitHTTPRequest: Sendable, Hashable {
    /// A query-string parameter.
    public struct QueryItem: Sendable, Hashable {
        /// The name.
        public var name: String
        /// The value, not yet percent-encoded.
        public var value: String
        /// Makes a parameter.
        public init(name: String, value: String) {
            self.name = name
            self.value = value
        }
    }

    /// The server's base URL (scheme, host, port; its path is already part of ``path``).
    public var serverURL: URL
    /// `GET` or `POST`.
    public var method: String
    /// The absolute path: `/database/1/{container}/{environment}/{database}/{operation}`
    /// (after any path prefix of the server URL). This is the path S2S signatures cover.
    public var path: String
    /// Query-string parameters (`ckAPIToken`, `ckWebAuthToken`).
    public var query: [QueryItem]
    /// Request headers.
    public var headers: [String: String]
    /// The JSON body (empty for GET).
    public var body: Data

    /// Makes a request.
    public init(serverURL: URL, method: String, path: String, query: [QueryItem] = [], headers: [String: String] = [:], body: Data = Data()) {
        self.serverURL = serverURL
        self.method = method
        self.path = path
        self.query = query
        self.headers = headers
        self.body = body
    }

    /// The query string, percent-encoded so that only RFC 3986 unreserved characters stay
    /// as they are (`+`, `/` and `=` of tokens become `%2B`, `%2F`, `%3D`).
    public var queryString: String {
        query.map { "\(Self.percentEncode($0.name))=\(Self.percentEncode($0.value))" }.joined(separator: "&")
    }

    /// The full URL: server, path and query string.
    public var url: URL {
        var text = serverURL.absoluteString
        if let schemeEnd = text.range(of: "://"), let pathStart = text[schemeEnd.upperBound...].firstIndex(of: "/") {
            text = String(text[..<pathStart])
        }
        text += path
        if !query.isEmpty { text += "?" + queryString }
        return URL(string: text)!
    }

    /// Percent-encodes everything but `A-Z a-z 0-9 - . _ ~`.
    public static func percentEncode(_ text: String) -> String {
        let hex = Array("0123456789ABCDEF".utf8)
        var out: [UInt8] = []
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                out.append(byte)
            default:
                out.append(UInt8(ascii: "%"))
                out.append(hex[Int(byte >> 4)])
                out.append(hex[Int(byte & 15)])
            }
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// One HTTP response.
public struct CloudKitHTTPResponse: Sendable, Hashable {
    /// The status code.
    public var status: Int
    /// Response headers, names lower-cased.
    public var headers: [String: String]
    /// The body.
    public var body: Data

    /// Makes a response (header names are lower-cased).
    public init(status: Int, headers: [String: String] = [:], body: Data = Data()) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { _, last in last })
        self.body = body
    }

    /// A header's value, by case-insensitive name.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// How a ``CloudContainer`` talks HTTP. ``HTTPClientTransport`` (AsyncHTTPClient) is the
/// default; tests plug in a fake that checks requests and replays responses.
///
/// A transport throws ``CloudKitError`` with ``CloudKitError/Code/networkUnavailable`` when
/// the server cannot be reached and ``CloudKitError/Code/networkFailure`` when the exchange
/// fails midway; other errors are reported as `networkFailure`.
public protocol CloudKitTransport: Sendable {
    /// Sends `request` and returns the whole response.
    func send(_ request: CloudKitHTTPRequest) async throws -> CloudKitHTTPResponse
}
