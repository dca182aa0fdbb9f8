// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import Synchronization
import UbiquityWire
import UbiquityCore

/// How far an asset transfer is.
public struct AssetTransferProgress: Sendable, Hashable {
    /// What the transfer is doing.
    public enum Phase: Sendable, Hashable {
        /// Reading the file to find its chunks (deduplicating uploads only).
        case scanning
        /// Sending bytes.
        case uploading
        /// Receiving bytes.
        case downloading
    }

    /// What the transfer is doing.
    public var phase: Phase
    /// Bytes done in this phase (for uploads, chunks the server already had count as done).
    public var completedBytes: Int64
    /// Bytes in all.
    public var totalBytes: Int64
    /// While a download writes the content in order: the partial file, whose first
    /// `completedBytes` bytes are the content's (nil when the bytes arrive out of order, as a
    /// download assembled from a previous version's chunks does, and for uploads). It is
    /// renamed into place when complete and checked, so a descriptor opened on it now reads
    /// the finished file.
    public var prefixFile: URL?

    /// Makes a progress report.
    public init(phase: Phase, completedBytes: Int64, totalBytes: Int64, prefixFile: URL? = nil) {
        self.phase = phase
        self.completedBytes = completedBytes
        self.totalBytes = totalBytes
        self.prefixFile = prefixFile
    }

    /// `completedBytes / totalBytes` (1 for empty files).
    public var fractionCompleted: Double { totalBytes == 0 ? 1 : Double(completedBytes) / Double(totalBytes) }
}

/// What an upload produced: the asset value to save in a record field, and what it cost.
public struct AssetUploadResult: Sendable, Hashable {
    /// The asset value (`fileChecksum`, `size`, `receipt`, …) to put in the record's field.
    public var asset: Asset
    /// Bytes of request bodies sent: file bytes, chunk bytes and chunk lists (resent bytes
    /// after a broken connection included).
    public var bytesSent: Int64
    /// Chunks sent one by one through the deduplicating extension.
    public var chunksSent: Int
    /// Whether the deduplicating extension was used (the server offered it and the file was
    /// large enough).
    public var deduplicated: Bool
    /// How many times a broken connection was resumed.
    public var resumptions: Int
}

/// What a download produced.
public struct AssetDownloadResult: Sendable, Hashable {
    /// Where the file is.
    public var fileURL: URL
    /// Its size.
    public var size: Int64
    /// Base64 SHA-256 of its content, computed while receiving it.
    public var fileChecksum: String
    /// Bytes received over the network (resumed ranges included).
    public var bytesReceived: Int64
    /// How many times a broken connection was resumed.
    public var resumptions: Int
    /// Bytes taken from the basis file of a chunk-level download
    /// (``AssetTransfer/download(from:to:expectedChecksum:basis:progress:)``) instead of the
    /// network; 0 for a whole download.
    public var bytesCopied: Int64 = 0
    /// Whether the content was assembled from the basis file and ranges of the asset (false: it
    /// was downloaded whole, because there was no basis, the server does not offer chunk lists,
    /// or assembling failed its checks).
    public var usedBasis: Bool = false
    /// The content's chunk list as the server gave it, when the download was assembled from a
    /// basis (keep it with the file: ``AssetDownloadBasis/chunkList``).
    public var chunkList: AssetChunkList?
    /// Whether the basis was read to cut it into chunks (false when its chunk list was known,
    /// or there was no chunk-level download).
    public var basisScanned: Bool = false
}

/// Uploads files to asset upload URLs and downloads assets, streaming from and to disk (never
/// holding a file in memory), resuming after broken connections and reporting progress.
///
/// With a Ubiquity server it uses two extensions of CloudKit's asset protocol (see
/// `docs/assets.md`): resumable uploads (`Content-Range`, and `GET` on the upload URL for the
/// bytes the server holds) and deduplication (the file is cut with ``FastCDC`` exactly as the
/// server cuts it, the server says which chunks it lacks, only those are sent, then the list is
/// committed). Against a server without them it does a plain `POST`, as CloudKit JS does.
///
/// ```swift
/// let transfer = AssetTransfer()
/// let result = try await transfer.upload(fileURL: photo, to: uploadURL) { progress in
///     print(progress.fractionCompleted)
/// }
/// record["image"] = .asset(result.asset)
/// ```
public struct AssetTransfer: Sendable {
    /// Tuning.
    public struct Options: Sendable {
        /// Use the deduplicating extension when the server offers it.
        public var deduplicate: Bool
        /// Files smaller than this are sent whole (chunking them would not save a request).
        public var minimumDeduplicationSize: Int64
        /// When the server lacks more than this fraction of the file's bytes, the file is
        /// streamed in one request instead of chunk by chunk (fewer requests; the server still
        /// stores each chunk once).
        public var streamWhenMissingFraction: Double
        /// Chunk uploads (and the ranged requests of a chunk-level download) in flight at once.
        public var concurrentChunkUploads: Int
        /// Attempts in a row that make no progress before giving up.
        public var maximumAttempts: Int
        /// The first wait before retrying; it doubles up to 5 seconds.
        public var retryDelay: Duration
        /// The longest one request may take.
        public var requestTimeout: Duration
        /// Bytes read from the file (or written to it) at a time.
        public var pieceSize: Int
        /// fsync a downloaded file before renaming it into place, so a crash never leaves a
        /// partial file under the final name.
        public var syncDownloadedFiles: Bool

        /// Makes options: deduplicate files of 1 MiB or more, stream when over half is missing,
        /// 4 chunk uploads at once, 6 attempts, 200 ms first delay, 1-hour requests, 1 MiB pieces,
        /// downloads fsynced.
        public init(deduplicate: Bool = true, minimumDeduplicationSize: Int64 = 1 << 20, streamWhenMissingFraction: Double = 0.5,
                    concurrentChunkUploads: Int = 4, maximumAttempts: Int = 6, retryDelay: Duration = .milliseconds(200),
                    requestTimeout: Duration = .seconds(3600), pieceSize: Int = 1 << 20, syncDownloadedFiles: Bool = true) {
            self.deduplicate = deduplicate
            self.minimumDeduplicationSize = minimumDeduplicationSize
            self.streamWhenMissingFraction = streamWhenMissingFraction
            self.concurrentChunkUploads = concurrentChunkUploads
            self.maximumAttempts = maximumAttempts
            self.retryDelay = retryDelay
            self.requestTimeout = requestTimeout
            self.pieceSize = pieceSize
            self.syncDownloadedFiles = syncDownloadedFiles
        }
    }

    /// The HTTP client requests go through.
    public let client: HTTPClient
    /// Tuning.
    public let options: Options

    /// A transfer over `client` (by default the CloudKit transport's shared client).
    public init(client: HTTPClient = HTTPClientTransport.sharedClient, options: Options = Options()) {
        self.client = client
        self.options = options
    }

    // MARK: HTTP

    /// A response with its body collected.
    struct Reply: Sendable {
        var status: Int
        var headers: [String: String]
        var body: Data
        var json: JSONValue? { try? JSONValue.parse(body) }
    }

    /// Sends a request and collects a small response body. Transport failures become
    /// ``CloudKitError`` `networkUnavailable` / `networkFailure`.
    func send(_ request: HTTPClientRequest) async throws -> Reply {
        let components = options.requestTimeout.components
        let nanoseconds = components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000
        do {
            let response = try await client.execute(request, timeout: .nanoseconds(nanoseconds))
            let body = try await response.body.collect(upTo: 64 << 20)
            var headers: [String: String] = [:]
            for header in response.headers { headers[header.name.lowercased()] = header.value }
            return Reply(status: Int(response.status.code), headers: headers, body: Data(body.readableBytesView))
        } catch let error as CloudKitError {
            throw error
        } catch is CancellationError {
            throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
        } catch {
            throw HTTPClientTransport.classify(error, url: URL(string: request.url) ?? URL(fileURLWithPath: "/"))
        }
    }

    /// The error for a non-2xx reply: the server's CloudKit error when it sent one.
    static func error(for reply: Reply) -> CloudKitError {
        if let json = reply.json, let wire = WireError(json: json) {
            return CloudKitError(wire: wire, httpStatus: reply.status)
        }
        return CloudKitError.http(status: reply.status, body: reply.body)
    }

    /// Whether trying again may succeed.
    static func isRetryable(_ error: any Error) -> Bool {
        guard let error = error as? CloudKitError else { return false }
        if error.code == .operationCancelled { return false }
        return error.isRetryable || (error.httpStatus.map { $0 >= 500 } ?? false) || error.serverErrorCode == "CONFLICT"
    }

    /// Waits before attempt `attempt` (1-based): the delay doubles, capped at 5 s.
    func pause(before attempt: Int) async throws {
        var delay = options.retryDelay
        for _ in 1..<max(attempt, 1) { delay = min(delay * 2, .seconds(5)) }
        do {
            try await Task.sleep(for: delay)
        } catch {
            throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
        }
    }
}

/// A byte counter shared with streaming bodies and progress callbacks.
final class TransferCounter: Sendable {
    private let value = Mutex<Int64>(0)

    /// Adds `count` and returns the new total.
    @discardableResult
    func add(_ count: Int64) -> Int64 { value.withLock { $0 += count; return $0 } }

    /// The total.
    var total: Int64 { value.withLock { $0 } }
}
