// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import UbiquityCore

/// The few S3 calls a blob store needs, over AsyncHTTPClient, signed with ``S3RequestSigner``:
/// objects (put, ranged get, head, delete, copy onto itself to restart its age), listing, and
/// multipart uploads (`S3Client+Multipart.swift`): the ``BlobObjects`` of a ``PackBlobStore``
/// in a bucket. Keys are relative to the location's prefix.
///
/// Every call is retried with exponential backoff and jitter on 5xx, 429 (throttling), S3's
/// `SlowDown` and connection failures; bodies are in memory, so a retry resends the same bytes.
package final class S3Client: BlobObjects {
    /// How calls are retried.
    package struct RetryPolicy: Sendable, Hashable {
        /// Attempts in all (1 = no retry).
        package var attempts: Int
        /// The wait before the first retry; each retry doubles it, up to ``maximumDelay``.
        package var initialDelay: Duration
        /// The longest wait between attempts.
        package var maximumDelay: Duration
        /// How long one attempt may take.
        package var timeout: TimeAmount

        /// Makes a policy; the defaults are 5 attempts from 100 ms up to 5 s, 60 s each (an
        /// 8 MiB part at 140 KB/s).
        package init(attempts: Int = 5, initialDelay: Duration = .milliseconds(100), maximumDelay: Duration = .seconds(5),
                     timeout: TimeAmount = .seconds(60)) {
            self.attempts = max(attempts, 1)
            self.initialDelay = initialDelay
            self.maximumDelay = maximumDelay
            self.timeout = timeout
        }
    }

    /// An answer: status, headers and (collected) body.
    package struct Response: Sendable {
        /// The HTTP status code.
        package var status: Int
        /// The headers.
        package var headers: HTTPHeaders
        /// The body.
        package var body: ByteBuffer
    }

    /// Where the bucket is.
    package let location: S3Location
    let signer: S3RequestSigner
    let http: HTTPClient
    let retry: RetryPolicy
    let logger: Logger
    /// Bytes per part of an object written in pieces (``makeAppender(_:)``; at least 5 MiB, S3's minimum).
    package let partSize: Int
    /// Parts of one such object uploading at once.
    package let partsInFlight: Int

    /// A client for `location` signing with `credentials`, over `http` (by default the shared
    /// client of the process); objects written in pieces go up in parts of `partSize` bytes
    /// (8 MiB by default), `partsInFlight` (3) at once.
    package init(location: S3Location, credentials: S3RequestSigner.Credentials, http: HTTPClient = .shared,
                 retry: RetryPolicy = RetryPolicy(), partSize: Int = 8 << 20, partsInFlight: Int = 3, logger: Logger) {
        self.location = location
        signer = S3RequestSigner(credentials: credentials, region: location.region)
        self.http = http
        self.retry = retry
        self.partSize = max(partSize, Self.minimumPartSize)
        self.partsInFlight = max(partsInFlight, 1)
        self.logger = logger
    }

    /// `s3://BUCKET/PREFIX`.
    package var description: String { location.url }

    /// A multipart upload (``S3MultipartAppender``).
    package func makeAppender(_ key: String) async throws -> any ObjectAppender { S3MultipartAppender(client: self, key: key) }

    /// Aborts the multipart uploads begun before `olderThan`, whose parts S3 would otherwise keep.
    package func discardAbandonedWrites(olderThan: Date) async throws {
        for upload in try await pendingUploads(prefix: "") where upload.initiated < olderThan {
            try await abortMultipartUpload(upload.key, uploadID: upload.uploadID)
        }
    }

    /// Lists one key of the bucket, with a few short attempts: a server that cannot reach its
    /// bucket says so within half a minute.
    package func checkReachable() async throws {
        _ = try await send(.GET, key: "", query: [("list-type", "2"), ("max-keys", "1"), ("prefix", location.prefix)], expecting: [200],
                           policy: .init(attempts: 3, initialDelay: .milliseconds(500), timeout: .seconds(8)))
    }

    // MARK: Objects

    /// Writes an object whole.
    package func put(_ key: String, body: ByteBuffer) async throws {
        _ = try await send(.PUT, key: key, body: body, expecting: [200])
    }

    /// The object's bytes in `range` (all when nil); nil when there is no such object.
    package func get(_ key: String, range: Range<Int64>? = nil) async throws -> ByteBuffer? {
        var headers: [(String, String)] = []
        if let range {
            guard !range.isEmpty else { return ByteBuffer() }
            headers.append(("range", "bytes=\(range.lowerBound)-\(range.upperBound - 1)"))
        }
        let response = try await send(.GET, key: key, headers: headers, expecting: [200, 206, 404])
        guard response.status != 404 else { return nil }
        if let range, response.body.readableBytes != range.count {
            throw UbiquityError(.io, "the object store answered \(response.body.readableBytes) bytes of \(key), not the \(range.count) asked for")
        }
        return response.body
    }

    /// The object's size and age; nil when there is no such object.
    package func head(_ key: String) async throws -> StoredObject? {
        let response = try await send(.HEAD, key: key, expecting: [200, 404])
        guard response.status == 200 else { return nil }
        let size = response.headers.first(name: "content-length").flatMap { Int64($0) } ?? 0
        let modified = response.headers.first(name: "last-modified").flatMap(S3Client.httpDate) ?? Date()
        return StoredObject(key: key, size: size, lastModified: modified)
    }

    /// Deletes an object (nothing when absent).
    package func delete(_ key: String) async throws {
        _ = try await send(.DELETE, key: key, expecting: [200, 204, 404])
    }

    /// Copies the object onto itself, which restarts its age (`LastModified`): the object
    /// store's `touch`. False when there is no such object.
    package func touch(_ key: String) async throws -> Bool {
        let source = "/" + location.bucket + "/" + (location.prefix + key).split(separator: "/", omittingEmptySubsequences: false)
            .map { S3RequestSigner.encode(String($0)) }.joined(separator: "/")
        let stamp = ISO8601DateFormatter().string(from: Date())
        let response = try await send(.PUT, key: key, headers: [("x-amz-copy-source", source), ("x-amz-metadata-directive", "REPLACE"),
                                                               ("x-amz-meta-touched", stamp)],
                                      expecting: [200, 404])
        guard response.status == 200 else { return false }
        try Self.throwIfError(response.body, doing: "copy \(key)")  // a copy can fail with 200 and an <Error> body
        return true
    }

    /// Every object whose key starts with `prefix` (relative to the location's), in key order.
    package func list(prefix: String) async throws -> [StoredObject] {
        var objects: [StoredObject] = []
        var continuation: String?
        repeat {
            var query = [("list-type", "2"), ("prefix", location.prefix + prefix)]
            if let continuation { query.append(("continuation-token", continuation)) }
            let response = try await send(.GET, key: "", query: query, expecting: [200])
            let result = try S3XML.parse(response.body.readableBytesView)
            for item in result.all("Contents") {
                guard let key = item["Key"]?.text, key.hasPrefix(location.prefix) else { continue }
                objects.append(StoredObject(key: String(key.dropFirst(location.prefix.count)), size: Int64(item["Size"]?.text ?? "") ?? 0,
                                        lastModified: item["LastModified"].flatMap { S3Client.isoDate($0.text) } ?? Date()))
            }
            continuation = result["IsTruncated"]?.text == "true" ? result["NextContinuationToken"]?.text : nil
        } while continuation != nil
        return objects
    }

    /// Creates the bucket; nothing when this account owns it already.
    package func createBucket() async throws {
        var body: ByteBuffer?
        if location.region != "us-east-1" {
            body = ByteBuffer(string: "<CreateBucketConfiguration xmlns=\"http://s3.amazonaws.com/doc/2006-03-01/\"><LocationConstraint>\(location.region)</LocationConstraint></CreateBucketConfiguration>")
        }
        let response = try await send(.PUT, key: "", body: body, expecting: [200, 409])
        if response.status == 409, Self.errorCode(response.body) != "BucketAlreadyOwnedByYou" {
            throw Self.error(status: 409, body: response.body, doing: "create bucket \(location.bucket)")
        }
    }

    // MARK: Requests

    /// Sends a request, retrying what may pass on a second try; throws for a status not in
    /// `expecting`.
    /// - Parameters:
    ///   - key: the object's key relative to the prefix; "" for the bucket itself.
    ///   - policy: how to retry (the client's by default).
    package func send(_ method: HTTPMethod, key: String, query: [(String, String)] = [], headers: [(String, String)] = [],
                      body: ByteBuffer? = nil, expecting: Set<Int>, policy: RetryPolicy? = nil) async throws -> Response {
        let retry = policy ?? self.retry
        let path = location.path(ofKey: key.isEmpty ? "" : location.prefix + key)
        let encodedQuery = query.map { S3RequestSigner.encode($0.0) + "=" + S3RequestSigner.encode($0.1) }.joined(separator: "&")
        let url = location.requestURL(path: path, encodedQuery: encodedQuery)
        var delay = retry.initialDelay
        var attempt = 1
        while true {
            let payload = body == nil ? S3RequestSigner.emptyPayloadHash : S3RequestSigner.unsignedPayload
            var request = HTTPClientRequest(url: url)
            request.method = method
            for (name, value) in headers { request.headers.add(name: name, value: value) }
            for (name, value) in signer.signedHeaders(method: method.rawValue, host: location.host, path: path, query: query,
                                                      headers: headers, payloadHash: payload, date: Date()) {
                request.headers.add(name: name, value: value)
            }
            if let body {
                request.headers.add(name: "content-length", value: String(body.readableBytes))
                request.body = .bytes(body)
            }
            let outcome: Result<Response, any Error>
            do {
                let response = try await http.execute(request, timeout: retry.timeout)
                let bytes = try await response.body.collect(upTo: method == .GET ? 1 << 30 : 16 << 20)
                outcome = .success(Response(status: Int(response.status.code), headers: response.headers, body: bytes))
            } catch {
                outcome = .failure(error)
            }
            switch outcome {
            case .success(let response) where expecting.contains(response.status):
                return response
            case .success(let response) where attempt < retry.attempts && Self.isRetryable(status: response.status, body: response.body):
                logger.debug("object store busy; retrying", metadata: ["s3.status": "\(response.status)", "s3.key": "\(key)", "s3.attempt": "\(attempt)"])
            case .success(let response):
                throw Self.error(status: response.status, body: response.body, doing: "\(method.rawValue) \(key.isEmpty ? location.bucket : key)")
            case .failure(let error) where attempt < retry.attempts && !(error is CancellationError):
                logger.debug("object store unreachable; retrying", metadata: ["error": "\(error)", "s3.key": "\(key)", "s3.attempt": "\(attempt)"])
            case .failure(let error):
                throw UbiquityError(.serviceUnavailable, "the object store at \(location.endpoint.absoluteString) could not be reached (\(method.rawValue) \(key.isEmpty ? location.bucket : key)): \(error)")
            }
            // full jitter: a random wait up to the current delay, so servers retrying at once spread out
            let wait = Double(delay.components.seconds) + Double(delay.components.attoseconds) / 1e18
            try await Task.sleep(for: .seconds(Double.random(in: wait / 2...wait)))
            delay = min(delay * 2, retry.maximumDelay)
            attempt += 1
        }
    }

    /// Whether an answer may change on a retry: a server error, throttling (429, `SlowDown`).
    static func isRetryable(status: Int, body: ByteBuffer) -> Bool {
        status >= 500 || status == 429 || errorCode(body) == "SlowDown" || errorCode(body) == "RequestTimeout"
    }

    /// The `<Code>` of an `<Error>` body, if it is one.
    static func errorCode(_ body: ByteBuffer) -> String? {
        guard body.readableBytes > 0, body.readableBytes < 1 << 20,
              let xml = try? S3XML.parse(body.readableBytesView), xml.name == "Error" else { return nil }
        return xml["Code"]?.text
    }

    /// Throws when `body` is an `<Error>` document.
    static func throwIfError(_ body: ByteBuffer, doing what: String) throws {
        if errorCode(body) != nil { throw error(status: 200, body: body, doing: what) }
    }

    /// The error for an answer: S3's code and message when the body has them.
    static func error(status: Int, body: ByteBuffer, doing what: String) -> UbiquityError {
        let xml = body.readableBytes < 1 << 20 ? try? S3XML.parse(body.readableBytesView) : nil
        let code = xml?["Code"]?.text ?? "HTTP \(status)"
        let message = xml?["Message"]?.text ?? ""
        let kind: UbiquityError.Code = switch status {
        case 404: .notFound
        case 403, 401: .permissionDenied
        case 400: .invalidArgument
        case 409: .conflict
        case 429, 503: .serviceUnavailable
        default: .io
        }
        return UbiquityError(kind, "the object store refused to \(what): \(code)\(message.isEmpty ? "" : " (\(message))")")
    }

    /// An ISO 8601 time as listings give it (`2026-12-05T23:15:31.000Z`).
    static func isoDate(_ text: String) -> Date? {
        (try? Date(text, strategy: Date.ISO8601FormatStyle(includingFractionalSeconds: true))) ?? (try? Date(text, strategy: .iso8601))
    }

    /// An HTTP date as `Last-Modified` gives it (`Sat, 05 Dec 2026 23:15:31 GMT`).
    static func httpDate(_ text: String) -> Date? {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "GMT")
        formatter.dateFormat = "EEE, dd MMM yyyy HH:mm:ss zzz"
        return formatter.date(from: text)
    }
}
