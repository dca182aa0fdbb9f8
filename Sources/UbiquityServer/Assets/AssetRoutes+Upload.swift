// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

extension AssetRoutes {
    /// `POST upload/{token}`: stores the body. Without `Content-Range` the body is the whole
    /// asset and a short body stores nothing; with it, the bytes continue a resumable session.
    func upload(_ request: Request, token: String?) async -> Response {
        do {
            let (upload, session) = try await authorizeUpload(token)
            let declared = request.headers[.contentLength].flatMap { Int64($0) }
            if let header = request.headers[.contentRange] {
                guard let range = AssetHTTPRange.parseContentRange(header) else {
                    throw WireError(.badRequest, "Content-Range must be `bytes FIRST-LAST/TOTAL` or `bytes */TOTAL`, not `\(header)`")
                }
                return try await resumableUpload(request, range: range, declaredLength: declared, session: session, binding: upload.binding)
            }
            let limit = service.configuration.maximumAssetSize
            if let declared, declared > limit { throw tooLarge(declared) }
            let writer = try await service.store.makeWriter()
            do {
                var received: Int64 = 0
                var body = request.body.makeAsyncIterator()
                while let buffer = try await Self.next(&body, after: received) {
                    received += Int64(buffer.readableBytes)
                    if received > limit { throw tooLarge(declared) }
                    try await writer.append(buffer)
                }
                if let declared, received != declared {
                    throw WireError(.badRequest, "the upload ended after \(received) of the \(declared) bytes announced; nothing was stored")
                }
                let info = try await writer.finish()
                try await noteSent(info, session: session)  // its bytes were shown: its list may name them
                service.logger.debug("asset uploaded", metadata: ["asset.checksum": "\(info.fileChecksum)", "asset.size": "\(info.size)"])
                return Self.json(singleFile(info, binding: upload.binding))
            } catch {
                await writer.abort()
                throw error
            }
        } catch {
            return errorResponse(error)
        }
    }

    /// Appends a `Content-Range` piece to the token's session; the last piece commits the asset.
    private func resumableUpload(_ request: Request, range: AssetHTTPRange.Upload, declaredLength: Int64?, session: String,
                                 binding: AssetBinding) async throws -> Response {
        guard range.total <= service.configuration.maximumAssetSize else { throw tooLarge(range.total) }
        if let piece = range.range, let declaredLength, declaredLength != Int64(piece.count) {
            throw WireError(.badRequest, "Content-Range announces \(piece.count) bytes but Content-Length \(declaredLength)")
        }
        let store = service.store
        return try await store.withUploadSession(id: session, totalSize: range.total) { writer -> Response in
            let held = await writer.bytesWritten
            let start = range.range?.lowerBound ?? held
            guard start <= held else {
                throw AssetHTTPError(status: 409, wire: WireError(.conflict, "the upload continues at byte \(held), not \(start); resume from there"),
                                     extra: ["received": .integer(held)])
            }
            var skip = held - start
            var received: Int64 = 0
            var body = request.body.makeAsyncIterator()
            while var buffer = try await Self.next(&body, after: received) {
                received += Int64(buffer.readableBytes)
                if skip > 0 {
                    let drop = Int(min(skip, Int64(buffer.readableBytes)))
                    buffer.moveReaderIndex(forwardBy: drop)
                    skip -= Int64(drop)
                }
                if buffer.readableBytes > 0 { try await writer.append(buffer) }
            }
            let now = await writer.bytesWritten
            if let piece = range.range, received != Int64(piece.count) {
                throw AssetHTTPError(status: 400, wire: WireError(.badRequest, "the piece ended after \(received) of its \(piece.count) bytes; the upload continues at byte \(now)"),
                                     extra: ["received": .integer(now)])
            }
            if now == range.total {
                let info = try await writer.finish()
                try await noteSent(info, session: session)  // its bytes were shown: its list may name them
                service.logger.debug("asset uploaded", metadata: ["asset.checksum": "\(info.fileChecksum)", "asset.size": "\(info.size)", "asset.session": "\(session)"])
                return Self.json(singleFile(info, binding: binding), headers: [HTTPField.Name(AssetUploadStatus.offsetHeader)!: String(now)])
            }
            let status = AssetUploadStatus(received: now, size: range.total, maximumSize: service.configuration.maximumAssetSize)
            return Self.json(status.json, status: 202, headers: [HTTPField.Name(AssetUploadStatus.offsetHeader)!: String(now)])
        }
    }

    /// The next piece of a request body; a connection that breaks is a `BAD_REQUEST` (the
    /// client is gone, but the error is not the server's).
    static func next(_ body: inout RequestBody.AsyncIterator, after received: Int64) async throws -> ByteBuffer? {
        do {
            return try await body.next()
        } catch {
            throw AssetHTTPError(status: 400, wire: WireError(.badRequest, "the upload broke off after \(received) bytes: \(error)"))
        }
    }

    /// `GET`/`HEAD upload/{token}`: the bytes held, the limit, and the deduplicating extension.
    func uploadStatus(token: String?, head: Bool) async -> Response {
        do {
            let (_, session) = try await authorizeUpload(token)
            let info = try await service.store.uploadSession(id: session)
            // the JSON endpoints' URLs carry the token, so it is checked before their bodies are read
            let query = "?token=" + (token ?? "").addingPercentEncoding(withAllowedCharacters: .alphanumerics.union(CharacterSet(charactersIn: "-._~")))!
            let status = AssetUploadStatus(received: info?.received ?? 0, size: info?.totalSize, maximumSize: service.configuration.maximumAssetSize,
                                           chunking: service.store.chunking, missingURL: "../chunks/missing" + query, chunkURL: "../chunks/",
                                           manifestURL: "../manifest" + query)
            var headers: HTTPFields = [HTTPField.Name(AssetUploadStatus.offsetHeader)!: String(status.received), .cacheControl: "no-store"]
            if head {
                headers[.contentType] = "application/json; charset=UTF-8"
                return Response(status: .ok, headers: headers)
            }
            return Self.json(status.json, headers: headers)
        } catch {
            return errorResponse(error)
        }
    }
}
