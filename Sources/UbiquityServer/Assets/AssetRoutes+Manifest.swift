// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

extension AssetRoutes {
    /// Whether a download request asks for the asset's chunk list instead of its bytes
    /// (`?manifest=1`).
    static func wantsManifest(_ request: Request) -> Bool {
        guard let value = request.uri.queryParameters.get("manifest") else { return false }
        return value != "0" && value != "false"
    }

    /// `GET|HEAD download/{token}/{filename}?manifest=1[&hashBytes=N]`: the chunk list of the
    /// asset the (already verified) download token names, as ``AssetChunkList`` JSON, so that a
    /// client holding an older version can fetch only the chunks it lacks with ranged `GET`s of
    /// the same URL. `Range` is ignored (a client sends `Range: bytes=0-0` so that a server
    /// without this extension answers with one byte of content instead of all of it).
    /// `hashBytes` (8–32, default 32) shortens each chunk's hash. With `base` (the SHA-256 of an
    /// older version the client holds the chunk list of, as 64 hex digits), the list is sent
    /// relative to that version's when the server has it and that is shorter
    /// (``AssetChunkList/relativeJSON(to:)``); otherwise whole, as without it.
    func manifest(_ request: Request, info: BlobInfo, head: Bool) async throws -> Response {
        var hashBytes = 32
        if let text = request.uri.queryParameters.get("hashBytes") {
            guard let value = Int(text), AssetChunkList.hashByteRange.contains(value) else {
                throw WireError(.badRequest, "hashBytes: expected a number of hash bytes from \(AssetChunkList.hashByteRange.lowerBound) to \(AssetChunkList.hashByteRange.upperBound), not `\(text)`")
            }
            hashBytes = value
        }
        guard let chunks = try await service.store.chunkList(fileChecksum: info.fileChecksum) else {
            throw WireError(.notFound, "this server's blob store does not keep chunk lists")
        }
        let list = AssetChunkList(fileChecksum: info.fileChecksum, size: info.size, chunking: service.store.chunking, hashBytes: hashBytes,
                                  chunks: chunks)
        var json = list.json
        if let text = request.uri.queryParameters.get("base") {
            guard let base = AssetChecksum.base64(hex: String(text)) else {
                throw WireError(.badRequest, "base: expected the checksum of the version you hold in hex (64 digits, or 66 for a chunk-list checksum), not `\(text)`")
            }
            if base != info.fileChecksum, let baseChunks = try await service.store.chunkList(fileChecksum: base),
               let relative = list.relativeJSON(to: AssetChunkList(fileChecksum: base, size: baseChunks.reduce(0) { $0 + Int64($1.size) },
                                                                    chunking: service.store.chunking, hashBytes: hashBytes, chunks: baseChunks)) {
                json = relative
            }
        }
        let headers: HTTPFields = [.eTag: "\"\(info.fileChecksum)\"", .cacheControl: "private, max-age=3600"]
        let response = Self.json(json, headers: headers)
        if head { return Response(status: response.status, headers: response.headers, body: ResponseBody()) }
        return response
    }
}

extension BlobStore {
    /// The asset's chunks in order, or nil when the store does not keep them (the default).
    package func chunkList(fileChecksum: String) async throws -> [AssetChunkRef]? { nil }
}

extension FileBlobStore {
    /// The asset's chunks in order, from its manifest; nil when it is not stored.
    package func chunkList(fileChecksum: String) async throws -> [AssetChunkRef]? {
        try await BlockingWork.run { try self.loadManifest(fileChecksum)?.chunks }
    }
}
