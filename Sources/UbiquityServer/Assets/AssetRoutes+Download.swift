// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

extension AssetRoutes {
    /// `GET|HEAD download/{token}/{filename}`: the content, streamed as the client reads it,
    /// with `Range` (206 and `Content-Range`, 416 when past the end), `If-Range`,
    /// `Content-Length` and `ETag` (the quoted `fileChecksum`). With `?manifest=1`, the chunk
    /// list instead (``manifest(_:info:head:)``).
    func download(_ request: Request, token: String?, head: Bool) async -> Response {
        do {
            guard let token, !token.isEmpty else { throw WireError(.badRequest, "the download URL has no token") }
            let download: AssetDownloadToken
            do {
                download = try service.signer.verifyDownloadToken(token)
            } catch {
                throw Self.wire(error)
            }
            guard let info = try await service.store.info(fileChecksum: download.fileChecksum), info.size == download.size else {
                throw WireError(.notFound, "the asset is no longer stored")
            }
            if Self.wantsManifest(request) { return try await manifest(request, info: info, head: head) }  // AssetRoutes+Manifest.swift
            let etag = "\"\(info.fileChecksum)\""
            var headers: HTTPFields = [
                .contentType: "application/octet-stream",
                .eTag: etag,
                .acceptRanges: "bytes",
                .cacheControl: "private, max-age=3600",
            ]
            var requested = AssetHTTPRange.parseRange(request.headers[.range], size: info.size)
            if let ifRange = request.headers[.ifRange], ifRange != etag { requested = .full }
            let range: Range<Int64>
            var status = HTTPResponse.Status.ok
            switch requested {
            case .full:
                range = 0..<info.size
            case .partial(let partial):
                range = partial
                status = .partialContent
                headers[.contentRange] = "bytes \(partial.lowerBound)-\(partial.upperBound - 1)/\(info.size)"
            case .unsatisfiable:
                headers[.contentRange] = "bytes */\(info.size)"
                return errorResponse(AssetHTTPError(status: 416, wire: WireError(.badRequest, "the range is outside the asset's \(info.size) bytes")), headers: headers)
            }
            headers[.contentLength] = String(range.count)
            if head { return Response(status: status, headers: headers, body: ResponseBody()) }
            let stream = try await service.store.read(fileChecksum: info.fileChecksum, range: range)
            let length = Int(range.count)
            let logger = service.logger
            let body = ResponseBody(contentLength: length) { writer in
                do {
                    // `write` waits while the connection is not writable: the stream reads on.
                    for try await buffer in stream { try await writer.write(buffer) }
                    try await writer.finish(nil)
                } catch {
                    logger.warning("asset download failed", metadata: ["asset.checksum": "\(info.fileChecksum)", "error": "\(error)"])
                    throw error
                }
            }
            return Response(status: status, headers: headers, body: body)
        } catch {
            return errorResponse(error)
        }
    }
}
