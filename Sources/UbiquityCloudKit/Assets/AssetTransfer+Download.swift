// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Crypto
import Foundation
import NIOCore
import UbiquityWire
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

/// The partial file of a download: written and hashed in sequence, one blocking call at a time
/// (hashed as the checksum it is checked against: whole SHA-256 or chunk list, ``AssetChecksum``).
final class AssetDownloadFile: @unchecked Sendable {
    // @unchecked because: every method runs inside one `BlockingWork.run` at a time, in
    // sequence (the download awaits each write before the next).
    let path: String
    let descriptor: Int32
    private var hash: AssetContentHasher
    private(set) var length: Int64 = 0

    init(path: String, kind: AssetChecksum.Kind = .sha256) throws {
        self.path = path
        hash = AssetContentHasher(kind: kind)
        descriptor = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0o644)
        guard descriptor >= 0 else {
            throw CloudKitError(.internalError, "cannot create \(path): \(String(cString: strerror(errno)))")
        }
    }

    deinit { close(descriptor) }

    /// The partial file (as progress reports name it).
    var url: URL { URL(fileURLWithPath: path) }

    func append(_ buffer: ByteBuffer) throws {
        try buffer.withUnsafeReadableBytes { bytes in
            try Self.write(bytes, to: descriptor, at: length, path: path)
            hash.update(bytes)
        }
        length += Int64(buffer.readableBytes)
    }

    /// Writes all of `bytes` at `offset` of `descriptor` (blocking), retrying short writes.
    static func write(_ bytes: UnsafeRawBufferPointer, to descriptor: Int32, at offset: Int64, path: String) throws {
        var done = 0
        while done < bytes.count {
            let wrote = pwrite(descriptor, bytes.baseAddress! + done, bytes.count - done, off_t(offset) + off_t(done))
            if wrote < 0 {
                if errno == EINTR { continue }
                throw CloudKitError(.internalError, "cannot write \(path): \(String(cString: strerror(errno)))")
            }
            done += wrote
        }
    }

    func restart() throws {
        guard ftruncate(descriptor, 0) == 0 else { throw CloudKitError(.internalError, "cannot truncate \(path)") }
        hash = AssetContentHasher(kind: hash.kind)
        length = 0
    }

    /// The checksum of what was written, of the kind the file was made with.
    func checksum() -> String { hash.finalize() }

    /// The checksum of what was written, of `kind` (read back when that is not the file's kind).
    func checksum(kind: AssetChecksum.Kind) throws -> String {
        if kind == hash.kind { return checksum() }
        return try AssetContentHasher.checksum(ofFile: path, kind: kind)
    }

    func sync() { fsync(descriptor) }
}

extension AssetTransfer {
    /// Downloads an asset to `fileURL`: streamed to a temporary file next to it, which is renamed
    /// into place once complete and checked. A broken connection is resumed with `Range` (and
    /// `If-Range`, so a changed asset restarts from the beginning).
    /// - Parameters:
    ///   - downloadURL: the asset's `downloadURL`; CloudKit's `${f}` placeholder is replaced by
    ///     `fileURL`'s name.
    ///   - fileURL: where to put the file (replaced if it exists).
    ///   - expectedChecksum: the asset's `fileChecksum`, checked against the content; by default
    ///     the server's `ETag` is checked when it is a checksum.
    ///   - progress: called as bytes arrive.
    /// - Throws: ``CloudKitError``: the server's error (`unknownItem` when the asset is gone,
    ///   `permissionFailure` when the URL expired), `assetNotAvailable` when the content does not
    ///   match its checksum, `networkFailure` when the connection kept failing.
    public func download(from downloadURL: String, to fileURL: URL, expectedChecksum: String? = nil,
                         progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetDownloadResult {
        let name = CloudKitHTTPRequest.percentEncode(fileURL.lastPathComponent)
        guard let url = URL(string: downloadURL.replacingOccurrences(of: "${f}", with: name)) else {
            throw CloudKitError(.invalidArguments, "\(downloadURL) is not a URL")
        }
        let report = progress ?? { _ in }
        let folder = fileURL.deletingLastPathComponent().path
        let temporary = "\(folder)/.\(fileURL.lastPathComponent).download-\(UUID().uuidString.prefix(8))"
        let kind = expectedChecksum.flatMap { AssetChecksum.kind(of: $0) } ?? .sha256
        let partial = try await BlockingWork.run { try AssetDownloadFile(path: temporary, kind: kind) }
        do {
            let result = try await receive(url, into: partial, expectedChecksum: expectedChecksum, report: report)
            try await BlockingWork.run {
                guard rename(temporary, fileURL.path) == 0 else {
                    throw CloudKitError(.internalError, "cannot move the download to \(fileURL.path): \(String(cString: strerror(errno)))")
                }
            }
            return AssetDownloadResult(fileURL: fileURL, size: result.size, fileChecksum: result.checksum, bytesReceived: result.received,
                                       resumptions: result.resumptions)
        } catch {
            _ = try? await BlockingWork.run { unlink(temporary) }
            throw error
        }
    }

    /// The bytes written before the first progress report of a download (then `pieceSize`).
    static let firstPieceSize = 64 << 10

    private struct Received {
        var size: Int64
        var checksum: String
        var received: Int64
        var resumptions: Int
    }

    private func receive(_ url: URL, into file: AssetDownloadFile, expectedChecksum: String?,
                         report: @escaping @Sendable (AssetTransferProgress) -> Void) async throws -> Received {
        var etag: String?
        var total: Int64?
        var received: Int64 = 0
        var failures = 0
        var resumptions = 0
        let components = options.requestTimeout.components
        let timeout = TimeAmount.nanoseconds(components.seconds * 1_000_000_000 + components.attoseconds / 1_000_000_000)
        while true {
            let have = file.length
            if let total, have == total { break }
            var request = HTTPClientRequest(url: url.absoluteString)
            request.method = .GET
            if have > 0 {
                request.headers.add(name: "Range", value: "bytes=\(have)-")
                if let etag { request.headers.add(name: "If-Range", value: etag) }
            }
            do {
                let response: HTTPClientResponse
                do {
                    response = try await client.execute(request, timeout: timeout)
                } catch is CancellationError {
                    throw CloudKitError(.operationCancelled, "the asset transfer was cancelled")
                } catch {
                    throw HTTPClientTransport.classify(error, url: url)
                }
                let status = Int(response.status.code)
                switch status {
                case 200:
                    if have > 0 { try await BlockingWork.run { try file.restart() } }
                    total = response.headers.first(name: "Content-Length").flatMap { Int64($0) }
                case 206:
                    let range = response.headers.first(name: "Content-Range") ?? ""
                    guard range.hasPrefix("bytes \(have)-"), let slash = range.lastIndex(of: "/"), let size = Int64(range[range.index(after: slash)...]) else {
                        throw CloudKitError(.serverRejectedRequest, "the server answered a resumed download with Content-Range `\(range)`")
                    }
                    total = size
                default:
                    let body = (try? await response.body.collect(upTo: 1 << 20)).map { Data($0.readableBytesView) } ?? Data()
                    var headers: [String: String] = [:]
                    for header in response.headers { headers[header.name.lowercased()] = header.value }
                    throw Self.error(for: Reply(status: status, headers: headers, body: body))
                }
                etag = response.headers.first(name: "ETag")
                var pending = ByteBuffer()
                let expected = total
                do {
                    for try await piece in response.body {
                        var piece = piece
                        pending.writeBuffer(&piece)
                        // the first bytes go to the file early (a reader may wait for them), then whole pieces
                        if pending.readableBytes >= (file.length == 0 ? min(Self.firstPieceSize, options.pieceSize) : options.pieceSize) {
                            let chunk = pending
                            pending = ByteBuffer()
                            try await BlockingWork.run { try file.append(chunk) }
                            received += Int64(chunk.readableBytes)
                            report(AssetTransferProgress(phase: .downloading, completedBytes: file.length, totalBytes: expected ?? file.length,
                                                         prefixFile: file.url))
                        }
                    }
                } catch let error as CloudKitError {
                    throw error
                } catch {
                    // Keep what arrived before the break.
                    if pending.readableBytes > 0 {
                        let chunk = pending
                        try await BlockingWork.run { try file.append(chunk) }
                        received += Int64(chunk.readableBytes)
                    }
                    throw HTTPClientTransport.classify(error, url: url)
                }
                if pending.readableBytes > 0 {
                    let chunk = pending
                    try await BlockingWork.run { try file.append(chunk) }
                    received += Int64(chunk.readableBytes)
                }
                report(AssetTransferProgress(phase: .downloading, completedBytes: file.length, totalBytes: expected ?? file.length, prefixFile: file.url))
                if total == nil { total = file.length }
                if file.length != total {
                    throw CloudKitError(.networkFailure, "the download of \(url.absoluteString) ended after \(file.length) of \(total ?? 0) bytes")
                }
            } catch let error where Self.isRetryable(error) {
                if file.length > have { failures = 0 }
                failures += 1
                guard failures < options.maximumAttempts else { throw error }
                try await pause(before: failures)
                resumptions += 1
            }
        }
        let sync = options.syncDownloadedFiles
        let wanted = expectedChecksum ?? etag.map { $0.trimmingCharacters(in: CharacterSet(charactersIn: "\"")) }.flatMap {
            AssetChecksum.kind(of: $0) != nil ? $0 : nil
        }
        let kind = wanted.flatMap { AssetChecksum.kind(of: $0) } ?? .sha256
        let checksum = try await BlockingWork.run { () -> String in
            if sync { file.sync() }
            return try file.checksum(kind: kind)
        }
        if let wanted, wanted != checksum {
            throw CloudKitError(.assetNotAvailable, "the downloaded content does not match its checksum (\(checksum), expected \(wanted))")
        }
        return Received(size: file.length, checksum: checksum, received: received, resumptions: resumptions)
    }
}
