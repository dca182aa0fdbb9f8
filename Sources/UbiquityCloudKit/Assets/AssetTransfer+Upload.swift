// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import NIOCore
import UbiquityWire
import UbiquityCore
#if canImport(Glibc)
import Glibc
#endif

extension AssetTransfer {
    /// Uploads a file to an upload URL (from `assets/upload`) and returns the asset value to save
    /// in the record's field.
    ///
    /// The file is read in pieces as the connection takes them. With a Ubiquity server, a broken
    /// connection is resumed where the server stopped receiving, and content the server already
    /// holds (in part or whole) is not sent again.
    /// - Parameters:
    ///   - fileURL: the file; it must not change during the upload.
    ///   - uploadURL: the URL `assets/upload` returned (valid 15 minutes).
    ///   - progress: called as bytes are scanned and sent (from any thread).
    /// - Throws: ``CloudKitError``: `assetFileNotFound`, `assetFileModified`, `limitExceeded` for
    ///   a file over the server's limit, the server's error (`permissionFailure` for an expired
    ///   upload URL), or `networkFailure` when the connection kept failing.
    public func upload(fileURL: URL, to uploadURL: URL,
                       progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetUploadResult {
        try await upload(fileURL: fileURL, to: uploadURL, scan: nil, progress: progress)
    }

    /// Uploads a file already read into `scan` (``AssetFileScan``): as
    /// ``upload(fileURL:to:progress:)``, but a deduplicating upload takes the scan's chunks
    /// instead of reading the file to find them, every chunk sent is checked against its
    /// scanned hash, and a result of other content than the scan's fails. So the server gets
    /// the scanned content or the upload fails with `assetFileModified` (the file changed since
    /// it was scanned; scan it again).
    /// - Throws: as ``upload(fileURL:to:progress:)``.
    public func upload(fileURL: URL, to uploadURL: URL, scan: AssetFileScan?,
                       progress: (@Sendable (AssetTransferProgress) -> Void)? = nil) async throws -> AssetUploadResult {
        let file = try await AssetFile.open(fileURL)
        if let scan, file.size != scan.size {
            throw CloudKitError(.assetFileModified, "the asset file \(fileURL.path) changed since it was scanned (\(file.size) bytes, scanned \(scan.size))")
        }
        let report = progress ?? { _ in }
        let status = try await uploadStatus(uploadURL)
        if let status, file.size > status.maximumSize {
            throw CloudKitError(.limitExceeded, "limit exceeded: the file is \(file.size) bytes and the server accepts assets of up to \(status.maximumSize)")
        }
        var result: AssetUploadResult?
        if let status, let chunking = status.chunking, options.deduplicate, status.offersDeduplication, status.received == 0,
           file.size >= options.minimumDeduplicationSize {
            result = try await deduplicatedUpload(file: file, uploadURL: uploadURL, status: status, chunking: chunking,
                                                  scan: scan?.chunkList.chunking == chunking ? scan : nil, report: report)
        }
        if result == nil {
            result = try await streamedUpload(file: file, uploadURL: uploadURL, resumable: status != nil, from: status?.received ?? 0, report: report)
        }
        try await file.checkUnchanged()
        if let scan, result!.asset.fileChecksum != scan.fileChecksum {
            // a chunk-list checksum the server answered with a whole-content one (streamed, or a
            // server that does not know chunk-list checksums): named by the scan's list, or checked
            guard AssetChecksum.kind(of: scan.fileChecksum) == .chunkList,
                  let named = try await identify(result!, as: scan, file: file, uploadURL: uploadURL, status: status) else {
                throw CloudKitError(.assetFileModified, "the asset file \(fileURL.path) changed while it was being uploaded (the server got other content than was scanned)")
            }
            result = named
        }
        return result!
    }

    /// After an upload from a chunk-list `scan` that the server answered with a whole-content
    /// checksum: commits the scan's list under its chunk-list checksum (`POST manifest`; every
    /// chunk is stored by then) so the asset is known by the scan's checksum; with a server that
    /// cannot (no deduplication, or chunk-list checksums unknown), reads the file once to check
    /// that it is both the scanned content and the uploaded one, and keeps the server's answer.
    /// Nil when it is neither (the file changed).
    private func identify(_ uploaded: AssetUploadResult, as scan: AssetFileScan, file: AssetFile, uploadURL: URL,
                          status: AssetUploadStatus?) async throws -> AssetUploadResult? {
        if let status, status.chunking == scan.chunkList.chunking, let manifestPath = status.manifestURL,
           let manifestURL = URL(string: manifestPath, relativeTo: uploadURL)?.absoluteURL {
            let sent = TransferCounter()
            let body: JSONValue = .object([
                "token": .string(uploadURL.lastPathComponent), "fileChecksum": .string(scan.fileChecksum), "size": .integer(scan.size),
                "packedChunks": .string(AssetChunkRef.packed(scan.chunkList.chunks)),
            ])
            if let reply = try? await postJSON(body, to: manifestURL, sent: sent, accept: [200]), let asset = try? Self.singleFile(reply),
               asset.fileChecksum == scan.fileChecksum {
                var named = uploaded
                named.asset = asset
                named.bytesSent += sent.total
                return named
            }
        }
        let path = file.url.path
        let (list, whole) = try await BlockingWork.run { () -> (String, String) in
            var list = AssetContentHasher(kind: .chunkList)
            var whole = AssetContentHasher(kind: .sha256)
            let fd = open(path, O_RDONLY | O_CLOEXEC | O_NOFOLLOW)
            guard fd >= 0 else { throw CloudKitError(.assetFileNotFound, "cannot open \(path)") }
            defer { close(fd) }
            let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 1 << 20, alignment: 16)
            defer { buffer.deallocate() }
            while true {
                let count = read(fd, buffer.baseAddress, buffer.count)
                if count < 0 && errno == EINTR { continue }
                guard count >= 0 else { throw CloudKitError(.assetFileModified, "cannot read \(path)") }
                if count == 0 { break }
                let bytes = UnsafeRawBufferPointer(rebasing: buffer[0..<count])
                list.update(bytes)
                whole.update(bytes)
            }
            return (list.finalize(), whole.finalize())
        }
        return list == scan.fileChecksum && whole == uploaded.asset.fileChecksum ? uploaded : nil
    }

    /// `GET` on the upload URL: the server's resumable-upload status, or nil when the server does
    /// not have this extension (any reply but a CloudKit error other than NOT_FOUND).
    func uploadStatus(_ uploadURL: URL) async throws -> AssetUploadStatus? {
        var request = HTTPClientRequest(url: uploadURL.absoluteString)
        request.method = .GET
        var attempt = 0
        while true {
            attempt += 1
            do {
                let reply = try await send(request)
                if reply.status == 200, let json = reply.json, let status = try? AssetUploadStatus(json: json) { return status }
                if let json = reply.json, let wire = WireError(json: json), wire.code != .notFound {
                    throw CloudKitError(wire: wire, httpStatus: reply.status)
                }
                return nil
            } catch let error where Self.isRetryable(error) && attempt < options.maximumAttempts {
                try await pause(before: attempt)
            }
        }
    }

    /// Streams the file (from `offset`) in one request, with `Content-Range` when the server
    /// resumes; after a broken connection asks where to continue.
    func streamedUpload(file: AssetFile, uploadURL: URL, resumable: Bool, from offset: Int64,
                        report: @escaping @Sendable (AssetTransferProgress) -> Void) async throws -> AssetUploadResult {
        let size = file.size
        let sent = TransferCounter()
        var offset = resumable ? offset : 0
        var failures = 0
        var resumptions = 0
        while true {
            let start = offset
            let attemptSent = TransferCounter()
            var request = HTTPClientRequest(url: uploadURL.absoluteString)
            request.method = .POST
            request.headers.add(name: "Content-Type", value: "application/octet-stream")
            if resumable {
                request.headers.add(name: "Content-Range", value: size == 0 ? "bytes */0" : "bytes \(start)-\(size - 1)/\(size)")
            }
            if size - start > 0 {
                let slices = file.slices(start..<size, pieceSize: options.pieceSize) { count in
                    sent.add(Int64(count))
                    let done = attemptSent.add(Int64(count))
                    report(AssetTransferProgress(phase: .uploading, completedBytes: start + done, totalBytes: size))
                }
                request.body = .stream(slices, length: .known(size - start))
            } else {
                request.body = .bytes(ByteBuffer())
            }
            do {
                let reply = try await send(request)
                switch reply.status {
                case 200:
                    return AssetUploadResult(asset: try Self.singleFile(reply), bytesSent: sent.total, chunksSent: 0, deduplicated: false,
                                             resumptions: resumptions)
                case 202 where resumable:
                    offset = Self.received(reply) ?? offset
                    if offset > start { failures = 0 }
                    continue
                default:
                    let error = Self.error(for: reply)
                    // A conflict names where the server is; another request may still hold the session.
                    if resumable, reply.status == 409, let received = Self.received(reply) { offset = received }
                    throw error
                }
            } catch let error where Self.isRetryable(error) {
                failures += 1
                guard failures < options.maximumAttempts else { throw error }
                try await pause(before: failures)
                resumptions += 1
                if resumable, let status = try? await uploadStatus(uploadURL) { offset = status.received }
                if !resumable { offset = 0 }
                if offset > start { failures = 0 }
            }
        }
    }

    /// The asset of a `{"singleFile": {…}}` reply.
    static func singleFile(_ reply: Reply) throws -> Asset {
        guard let json = reply.json, let single = json.objectValue?["singleFile"], let wire = try? WireAsset(json: single, path: "singleFile"),
              wire.fileChecksum != nil, wire.receipt != nil else {
            throw CloudKitError(.serverRejectedRequest, "the server's upload answer has no singleFile asset: \(String(decoding: reply.body.prefix(200), as: UTF8.self))")
        }
        return Asset(wire: wire)
    }

    /// The `received` member (or `Upload-Offset` header) of a reply.
    static func received(_ reply: Reply) -> Int64? {
        if case .integer(let value)? = reply.json?.objectValue?["received"] { return value }
        return reply.headers[AssetUploadStatus.offsetHeader.lowercased()].flatMap { Int64($0) }
    }
}
