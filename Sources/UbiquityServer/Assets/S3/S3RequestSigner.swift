// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// AWS Signature Version 4 for requests to an S3-compatible object store (AWS S3, Ceph RGW,
/// Garage, SeaweedFS, MinIO, moto): the `Authorization` header and the `x-amz-*` headers it
/// covers, with HMAC-SHA256 from swift-crypto. Checked against AWS's published examples
/// (`S3RequestSignerTests`).
///
/// S3's canonical URI encodes each path segment once (no double encoding, unlike other
/// services); the payload hash is sent as `x-amz-content-sha256` (or `UNSIGNED-PAYLOAD`).
package struct S3RequestSigner: Sendable {
    /// An access key, its secret and, for temporary credentials, the session token.
    package struct Credentials: Sendable, Hashable {
        /// `AWS_ACCESS_KEY_ID`.
        package var accessKeyID: String
        /// `AWS_SECRET_ACCESS_KEY`.
        package var secretAccessKey: String
        /// `AWS_SESSION_TOKEN` (temporary credentials), sent as `x-amz-security-token`.
        package var sessionToken: String?

        /// Makes credentials.
        package init(accessKeyID: String, secretAccessKey: String, sessionToken: String? = nil) {
            self.accessKeyID = accessKeyID
            self.secretAccessKey = secretAccessKey
            self.sessionToken = sessionToken
        }

        /// The usual variables: `AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY` and, when set,
        /// `AWS_SESSION_TOKEN`.
        /// - Throws: `invalidArgument` naming the variable that is missing or empty.
        package init(environment: [String: String]) throws {
            func value(_ name: String) throws -> String {
                guard let value = environment[name], !value.isEmpty else {
                    throw UbiquityError(.invalidArgument, "\(name) is not set: S3 blob storage needs an access key (AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY)")
                }
                return value
            }
            self.init(accessKeyID: try value("AWS_ACCESS_KEY_ID"), secretAccessKey: try value("AWS_SECRET_ACCESS_KEY"),
                      sessionToken: environment["AWS_SESSION_TOKEN"].flatMap { $0.isEmpty ? nil : $0 })
        }
    }

    /// The hash of an empty payload.
    package static let emptyPayloadHash = Hex.encode(SHA256.hash(data: Data()))
    /// The payload hash of a request whose body is not signed (streamed uploads over TLS).
    package static let unsignedPayload = "UNSIGNED-PAYLOAD"

    /// The credentials.
    package var credentials: Credentials
    /// The region (`us-east-1` for most local servers).
    package var region: String
    /// The service name in the credential scope.
    package var service = "s3"

    /// A signer for `region`.
    package init(credentials: Credentials, region: String) {
        self.credentials = credentials
        self.region = region
    }

    /// The headers to add to a request: `x-amz-date`, `x-amz-content-sha256`,
    /// `x-amz-security-token` (temporary credentials) and `authorization`.
    /// - Parameters:
    ///   - method: the HTTP method.
    ///   - host: the `Host` header's value (with the port when it is not the scheme's).
    ///   - path: the request's path, not yet encoded (`/bucket/key` in path style).
    ///   - query: the query's parameters, not yet encoded.
    ///   - headers: the other headers to sign (`range`, `content-type`, …); `host` is added.
    ///   - payloadHash: the hex SHA-256 of the body, or ``unsignedPayload``.
    ///   - date: the signing time.
    package func signedHeaders(method: String, host: String, path: String, query: [(String, String)] = [], headers: [(String, String)] = [],
                               payloadHash: String, date: Date) -> [(String, String)] {
        let stamp = Self.timestamp(date)
        var added = [("x-amz-date", stamp), ("x-amz-content-sha256", payloadHash)]
        if let token = credentials.sessionToken { added.append(("x-amz-security-token", token)) }
        let (canonical, signedNames) = Self.canonicalRequest(method: method, path: path, query: query,
                                                             headers: [("host", host)] + headers + added, payloadHash: payloadHash)
        let day = String(stamp.prefix(8))
        let scope = "\(day)/\(region)/\(service)/aws4_request"
        let toSign = "AWS4-HMAC-SHA256\n\(stamp)\n\(scope)\n" + Hex.encode(SHA256.hash(data: Data(canonical.utf8)))
        var key = SymmetricKey(data: Data(("AWS4" + credentials.secretAccessKey).utf8))
        for part in [day, region, service, "aws4_request"] {
            key = SymmetricKey(data: Data(HMAC<SHA256>.authenticationCode(for: Data(part.utf8), using: key)))
        }
        let signature = Hex.encode(HMAC<SHA256>.authenticationCode(for: Data(toSign.utf8), using: key))
        let authorization = "AWS4-HMAC-SHA256 Credential=\(credentials.accessKeyID)/\(scope), SignedHeaders=\(signedNames), Signature=\(signature)"
        return added + [("authorization", authorization)]
    }

    /// The canonical request and its signed header names (`a;b;c`): method, the URI with each
    /// path segment encoded once, the query sorted by encoded name and value, the headers
    /// lowercased, trimmed (inner runs of spaces as one), sorted and joined by name, the names,
    /// and the payload hash.
    package static func canonicalRequest(method: String, path: String, query: [(String, String)], headers: [(String, String)],
                                         payloadHash: String) -> (request: String, signedHeaders: String) {
        let uri = path.isEmpty ? "/" : path.split(separator: "/", omittingEmptySubsequences: false).map { encode(String($0)) }.joined(separator: "/")
        let encoded: [(name: String, value: String)] = query.map { (encode($0.0), encode($0.1)) }
        let sorted = encoded.sorted { (a: (name: String, value: String), b: (name: String, value: String)) -> Bool in
            a.name == b.name ? a.value < b.value : a.name < b.name
        }
        let canonicalQuery = sorted.map { $0.name + "=" + $0.value }.joined(separator: "&")
        var byName: [String: [String]] = [:]
        for (name, value) in headers {
            let trimmed = value.split(separator: " ", omittingEmptySubsequences: true).joined(separator: " ")
            byName[name.lowercased(), default: []].append(trimmed)
        }
        let names = byName.keys.sorted()
        let canonicalHeaders = names.map { "\($0):\(byName[$0]!.joined(separator: ","))\n" }.joined()
        let signed = names.joined(separator: ";")
        return ([method, uri, canonicalQuery, canonicalHeaders, signed, payloadHash].joined(separator: "\n"), signed)
    }

    /// RFC 3986 encoding as SigV4 wants it: every byte but `A–Z a–z 0–9 - _ . ~` as `%XX`
    /// (upper-case hex).
    package static func encode(_ text: String) -> String {
        var out = ""
        out.reserveCapacity(text.utf8.count)
        for byte in text.utf8 {
            switch byte {
            case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "0")...UInt8(ascii: "9"),
                 UInt8(ascii: "-"), UInt8(ascii: "_"), UInt8(ascii: "."), UInt8(ascii: "~"):
                out.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                out += "%" + Hex.encode([byte]).uppercased()
            }
        }
        return out
    }

    /// `yyyyMMdd'T'HHmmss'Z'` in UTC (Foundation's ISO 8601 style, basic format).
    package static func timestamp(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle(dateSeparator: .omitted, dateTimeSeparator: .standard, timeSeparator: .omitted, timeZone: TimeZone(identifier: "UTC")!))
    }
}
