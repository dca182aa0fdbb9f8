// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

/// Where an S3-compatible bucket is and how to address it: `--blobs s3://BUCKET/PREFIX` with
/// `--s3-endpoint`, `--s3-region` and `--s3-addressing`.
package struct S3Location: Sendable, Hashable {
    /// How a request names the bucket.
    package enum Addressing: String, Sendable, Hashable, CaseIterable {
        /// `https://endpoint/BUCKET/KEY`: local servers (moto, MinIO, Garage, SeaweedFS, Ceph RGW).
        case path
        /// `https://BUCKET.endpoint/KEY`: AWS.
        case virtualHost = "virtual-host"
    }

    /// The server's base URL (`http://127.0.0.1:9000`, `https://s3.eu-west-1.amazonaws.com`).
    package var endpoint: URL
    /// The bucket's name.
    package var bucket: String
    /// The folder in the bucket every key is under: empty, or ending in `/`.
    package var prefix: String
    /// The region requests are signed for.
    package var region: String
    /// How the bucket is named in requests.
    package var addressing: Addressing

    /// A location.
    /// - Throws: `invalidArgument` when the bucket's name is not one S3 accepts or the endpoint
    ///   is not an http(s) URL.
    package init(endpoint: URL, bucket: String, prefix: String = "", region: String = "us-east-1", addressing: Addressing = .path) throws {
        guard endpoint.scheme == "http" || endpoint.scheme == "https", endpoint.host != nil else {
            throw UbiquityError(.invalidArgument, "--s3-endpoint \(endpoint.absoluteString): expected an http:// or https:// URL")
        }
        let allowed = bucket.utf8.allSatisfy { (0x61...0x7A).contains($0) || (0x30...0x39).contains($0) || $0 == 0x2D || $0 == 0x2E }
        guard (3...63).contains(bucket.utf8.count), allowed else {
            throw UbiquityError(.invalidArgument, "bucket \"\(bucket)\": expected 3 to 63 characters of a-z, 0-9, '-' and '.'")
        }
        guard !region.isEmpty else { throw UbiquityError(.invalidArgument, "--s3-region: expected a region name such as us-east-1") }
        self.endpoint = endpoint
        self.bucket = bucket
        var prefix = prefix
        while prefix.hasPrefix("/") { prefix.removeFirst() }
        if !prefix.isEmpty, !prefix.hasSuffix("/") { prefix += "/" }
        self.prefix = prefix
        self.region = region
        self.addressing = addressing
    }

    /// Whether `text` names a bucket (`s3://…`) rather than a folder.
    package static func isBucketURL(_ text: String) -> Bool { text.hasPrefix("s3://") }

    /// Reads `s3://BUCKET/PREFIX`. Without `endpoint`, AWS's endpoint for the region with
    /// virtual-host addressing; with one, path addressing unless `addressing` says otherwise.
    /// - Throws: `invalidArgument` naming what is wrong.
    package init(url text: String, endpoint: String?, region: String?, addressing: Addressing?) throws {
        guard Self.isBucketURL(text) else {
            throw UbiquityError(.invalidArgument, "--blobs \(text): expected s3://BUCKET/PREFIX or a folder")
        }
        let rest = text.dropFirst("s3://".count)
        let bucket = String(rest.prefix { $0 != "/" })
        let prefix = String(rest.dropFirst(bucket.count))
        let region = region ?? "us-east-1"
        let base: URL
        if let endpoint {
            guard let url = URL(string: endpoint) else { throw UbiquityError(.invalidArgument, "--s3-endpoint \(endpoint): expected a URL") }
            base = url
        } else {
            base = URL(string: "https://s3.\(region).amazonaws.com")!
        }
        try self.init(endpoint: base, bucket: bucket, prefix: prefix, region: region,
                      addressing: addressing ?? (endpoint == nil ? .virtualHost : .path))
    }

    /// `s3://BUCKET/PREFIX`.
    package var url: String { "s3://\(bucket)/\(prefix)" }

    /// The `Host` header of requests for the bucket (with the port when the URL names one).
    var host: String {
        let name = addressing == .virtualHost ? "\(bucket).\(endpoint.host!)" : endpoint.host!
        return endpoint.port.map { "\(name):\($0)" } ?? name
    }

    /// The request path of a key in the bucket (not yet percent-encoded); the bucket itself for "".
    func path(ofKey key: String) -> String {
        let base = endpoint.path.hasSuffix("/") ? String(endpoint.path.dropLast()) : endpoint.path
        switch addressing {
        case .path: return key.isEmpty ? "\(base)/\(bucket)" : "\(base)/\(bucket)/\(key)"
        case .virtualHost: return "\(base)/\(key)"
        }
    }

    /// The URL to send a request for `path` (from ``path(ofKey:)``) with an encoded query.
    func requestURL(path: String, encodedQuery: String) -> String {
        let encodedPath = path.split(separator: "/", omittingEmptySubsequences: false).map { S3RequestSigner.encode(String($0)) }.joined(separator: "/")
        let query = encodedQuery.isEmpty ? "" : "?" + encodedQuery
        return "\(endpoint.scheme!)://\(host)\(encodedPath)\(query)"
    }
}
