// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import HTTPTypes
import Hummingbird
import Logging
import NIOCore
import UbiquityCore
import UbiquityWire

/// The asset endpoints, under `/assets/1/` (the wire format is in `docs/assets.md`):
///
/// - `POST upload/{token}`: the upload URL; the raw bytes, streamed. With `Content-Range:
///   bytes a-b/TOTAL` it is resumable, and `GET`/`HEAD` on it report the bytes held.
/// - `POST chunks/missing`, `PUT|POST chunks/{hash}?token=`, `POST manifest`: the deduplicating
///   extension (upload only the chunks the server lacks, then commit the list).
/// - `GET|HEAD download/{token}/{filename}`: the download URL, with `Range` support.
///
/// Every body is streamed with back-pressure: an upload is stored as it arrives and a download
/// is read as the client takes it, so neither sits in memory.
package struct AssetRoutes: Sendable {
    /// The service whose URLs these routes serve.
    package let service: AssetService
    /// The server-wide limit on collected request bodies (the JSON bodies and chunks; uploads
    /// are streamed and not counted); unlimited unless the server sets its own.
    package var bodyBudget = RequestBodyBudget(limit: 0)

    /// Routes for `service`.
    package init(service: AssetService) {
        self.service = service
    }

    /// Adds the routes to `router`.
    package func register<Context: RequestContext>(on router: Router<Context>) {
        let prefix = AssetService.pathPrefix
        router.post("\(prefix)/upload/:token") { request, context in await self.upload(request, token: context.parameters.get("token")) }
        router.get("\(prefix)/upload/:token") { _, context in await self.uploadStatus(token: context.parameters.get("token"), head: false) }
        router.head("\(prefix)/upload/:token") { _, context in await self.uploadStatus(token: context.parameters.get("token"), head: true) }
        router.post("\(prefix)/chunks/missing") { request, _ in await self.missingChunks(request) }
        router.put("\(prefix)/chunks/:hash") { request, context in await self.putChunk(request, hash: context.parameters.get("hash")) }
        router.post("\(prefix)/chunks/:hash") { request, context in await self.putChunk(request, hash: context.parameters.get("hash")) }
        router.post("\(prefix)/manifest") { request, _ in await self.commitManifest(request) }
        router.get("\(prefix)/download/:token/**") { request, context in
            await self.download(request, token: context.parameters.get("token"), head: false)
        }
        router.head("\(prefix)/download/:token/**") { request, context in
            await self.download(request, token: context.parameters.get("token"), head: true)
        }
    }

    // MARK: Shared

    /// The upload session of an upload token: a digest of the token, so each upload URL has
    /// its own.
    static func sessionID(for token: String) -> String {
        String(Hex.encode(SHA256.hash(data: Array(token.utf8))).prefix(40))
    }

    /// Verifies an upload token. An expired one is still accepted while the resumable session it
    /// began before expiring is younger than the session lifetime.
    func authorizeUpload(_ token: String?) async throws -> (token: AssetUploadToken, session: String) {
        guard let token, !token.isEmpty else { throw WireError(.badRequest, "the request needs an upload token") }
        let signer = service.signer
        let session = Self.sessionID(for: token)
        let now = Date()
        do {
            return (try signer.verifyUploadToken(token, now: now), session)
        } catch {
            guard case .expired = error.reason else { throw Self.wire(error) }
            let upload: AssetUploadToken
            do {
                upload = try signer.verifyUploadToken(token, now: now, allowExpired: true)
            } catch {
                throw Self.wire(error)
            }
            if let info = try await service.store.uploadSession(id: session), info.created < upload.expiresAt,
               now.timeIntervalSince(info.created) < service.configuration.uploadSessionLifetime {
                return (upload, session)
            }
            throw Self.wire(error)
        }
    }

    /// The wire error for a refused token or receipt: `ACCESS_DENIED` (403) for forged or
    /// expired ones, `BAD_REQUEST` otherwise.
    static func wire(_ error: AssetSignatureError) -> WireError {
        switch error.reason {
        case .forged, .expired: return WireError(.accessDenied, error.message)
        case .malformed, .wrongKind, .mismatch: return WireError(.badRequest, error.message)
        }
    }

    /// The error for content over the size limit: HTTP 413 with a `BAD_REQUEST` body whose
    /// reason starts with "limit exceeded" (which CloudKit clients read as `limitExceeded`).
    func tooLarge(_ size: Int64?) -> AssetHTTPError {
        let limit = service.configuration.maximumAssetSize
        let what = size.map { "the asset is \($0) bytes" } ?? "the asset is too large"
        return AssetHTTPError(status: 413, wire: WireError(.badRequest, "limit exceeded: \(what); this server accepts assets of up to \(limit) bytes"))
    }

    /// `{"singleFile": {fileChecksum, receipt, size}}` with a fresh receipt for `binding`.
    func singleFile(_ info: BlobInfo, binding: AssetBinding) -> JSONValue {
        let receipt = service.signer.makeReceipt(for: binding, fileChecksum: info.fileChecksum, size: info.size)
        return .object(["singleFile": .object([
            "fileChecksum": .string(info.fileChecksum),
            "receipt": .string(receipt),
            "size": .integer(info.size),
        ])])
    }

    /// A JSON response.
    static func json(_ value: JSONValue, status: Int = 200, headers: HTTPFields = [:]) -> Response {
        var fields = headers
        fields[.contentType] = "application/json; charset=UTF-8"
        return Response(status: HTTPResponse.Status(code: status), headers: fields,
                        body: ResponseBody(byteBuffer: ByteBuffer(bytes: value.serialized())))
    }

    /// The CloudKit-style error response for any error.
    func errorResponse(_ error: any Error, headers: HTTPFields = [:]) -> Response {
        var status: Int
        var wire: WireError
        switch error {
        case let error as AssetHTTPError:
            status = error.status
            wire = error.wire
        case let error as WireError:
            status = error.code.httpStatus
            wire = error
        case let error as AssetSignatureError:
            wire = Self.wire(error)
            status = wire.code.httpStatus
        case let error as RequestBodyBudget.Exhausted:
            wire = error.wire
            status = 503
        case let error as RequestBodyBudget.BrokenBody:
            wire = error.wire
            status = 400
        case let error as UbiquityError where error.code == .invalidArgument:
            wire = WireError(.badRequest, error.message)
            status = 400
        case let error as UbiquityError where error.code == .notFound:
            wire = WireError(.notFound, error.message)
            status = 404
        case let error as UbiquityError where error.code == .conflict:
            wire = WireError(.conflict, error.message, retryAfter: 1)
            status = 409
        default:
            let id = UUID().uuidString.lowercased()
            service.logger.error("asset request failed", metadata: ["error": "\(error)", "request": "\(id)"])
            wire = WireError(.internalError, "the server failed to handle the request; it was logged as \(id)")
            wire.uuid = id
            status = 500
        }
        var headers = headers
        if let retryAfter = wire.retryAfter, status == 503 || status == 429 { headers[.retryAfter] = String(retryAfter) }
        var body = wire.json()
        if case .object(var members) = body, let extra = (error as? AssetHTTPError)?.extra {
            for (key, value) in extra { members[key] = value }
            body = .object(members)
        }
        return Self.json(body, status: status, headers: headers)
    }

    /// Collects a small JSON body (within ``bodyBudget``) and reads it with `use`.
    func jsonBody<Result>(_ request: Request, _ use: (WireReader) async throws -> Result) async throws -> Result {
        let limit = service.configuration.maximumChunkListBytes
        return try await bodyBudget.collect(request, upTo: limit, tooLarge: {
            AssetHTTPError(status: 413, wire: WireError(.badRequest, "limit exceeded: the request body is larger than \(limit) bytes"))
        }) { buffer in
            let reader: WireReader
            do {
                reader = try WireReader(JSONValue.parse(Data(buffer.readableBytesView)), path: "")
            } catch {
                throw WireError.badRequest(error)
            }
            return try await use(reader)
        }
    }
}

/// An error with its own HTTP status (and extra body members).
struct AssetHTTPError: Error {
    var status: Int
    var wire: WireError
    var extra: [String: JSONValue] = [:]
}
