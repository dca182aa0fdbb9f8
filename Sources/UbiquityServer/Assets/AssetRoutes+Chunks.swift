// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore

extension AssetRoutes {
    /// Checks a chunk list against the limits: sizes add up to at most the maximum asset size,
    /// no chunk is longer than the store's maximum chunk.
    private func checkList(_ chunks: [AssetChunkRef]) throws -> Int64 {
        let largest = service.store.chunking.maximumSize
        var total: Int64 = 0
        for (index, chunk) in chunks.enumerated() {
            guard chunk.size <= largest else {
                throw WireError(.badRequest, "chunks[\(index)]: \(chunk.size) bytes is more than this server's largest chunk (\(largest))")
            }
            total += Int64(chunk.size)
        }
        guard total <= service.configuration.maximumAssetSize else { throw tooLarge(total) }
        return total
    }

    /// A request's chunk list: whole (`chunks` or `packedChunks`), or relative to a stored asset
    /// (`base`: its `fileChecksum`; `edits`: ``AssetChunkListDelta`` pieces; `listChecksum`: the
    /// whole list's ``AssetChunkListDelta/listChecksum(_:hashBytes:)``, checked when given).
    /// nil when the request has none.
    /// - Throws: 404 `NOT_FOUND` with `"unknownBase": true` when no asset with that checksum is
    ///   stored; 409 `CONFLICT` when the rebuilt list does not match `listChecksum` (the client
    ///   then sends the whole list); 400 for malformed edits.
    func requestedList(_ body: WireReader) async throws -> [AssetChunkRef]? {
        try await requestedListAndLiterals(body)?.chunks
    }

    /// As ``requestedList(_:)``, with the chunks a relative list carries literally (`nil` for a
    /// whole list): the others are the base's, which its manifest holds, so `chunks/missing`
    /// need only ask the store about these (the commit still retains every chunk).
    func requestedListAndLiterals(_ body: WireReader) async throws -> (chunks: [AssetChunkRef], literals: [AssetChunkRef]?)? {
        if let chunks = try AssetChunkRef.list(from: body) { return (chunks, nil) }
        guard let base = try body.string("base") else { return nil }
        guard let edits = body.value("edits") else { throw WireReader.missing(body.path("edits"), "the edits that turn the base's chunk list into this one") }
        let delta = try AssetChunkListDelta(json: edits, path: body.path("edits"))
        guard let baseChunks = try await service.store.chunkList(fileChecksum: base) else {
            throw AssetHTTPError(status: 404, wire: WireError(.notFound, "base: no stored asset has the fileChecksum \(base); send the whole chunk list (chunks or packedChunks)"),
                                 extra: ["unknownBase": .bool(true)])
        }
        let chunks = try delta.apply(to: baseChunks)
        if let expected = try body.string("listChecksum"), expected.lowercased() != AssetChunkListDelta.listChecksum(chunks) {
            throw WireError(.conflict, "listChecksum: the list rebuilt from base \(base) and the edits is not the one described; send the whole chunk list")
        }
        let literals = delta.pieces.flatMap { piece -> [AssetChunkRef] in
            if case .chunks(let chunks) = piece { return chunks }
            return []
        }
        return (chunks, literals)
    }

    /// `POST chunks/missing` `{token, chunks | packedChunks | base + edits, fileChecksum?, size?}` →
    /// `{"missing": [hash]}`. The list is remembered for the token, so `manifest` can then be
    /// called with the token alone. When `fileChecksum` and `size` name content already stored,
    /// the answer also carries `singleFile` (with a receipt) and nothing needs uploading; asked
    /// with only `fileChecksum` and `size` about content not stored, the answer is 404.
    func missingChunks(_ request: Request) async -> Response {
        do {
            let body = try await jsonBody(request)
            let (upload, session) = try await authorizeUpload(try body.requiredString("token"))
            if let checksum = try body.string("fileChecksum"), let size = try body.integer("size"),
               let info = try await service.store.info(fileChecksum: checksum), info.size == size, info.verified {
                // (an unverified asset — a claimed checksum not yet checked — is no target)
                _ = try await service.store.touch(fileChecksum: checksum)
                var answer = singleFile(info, binding: upload.binding).objectValue ?? [:]
                answer["missing"] = .array([])
                return Self.json(.object(answer))
            }
            guard let requested = try await requestedListAndLiterals(body) else {
                if try body.string("fileChecksum") != nil {
                    throw WireError(.notFound, "no stored asset has this fileChecksum and size; send the chunk list")
                }
                throw WireError(.badRequest, "chunks: required, the asset's chunks in order ([{hash, size}] or packedChunks)")
            }
            let chunks = requested.chunks
            let total = try checkList(chunks)
            // a relative list: the base's chunks are its manifest's (if one went since, the
            // commit's retain finds it and answers 404 with it, and the client sends it)
            let missing = try await service.store.missingChunks((requested.literals ?? chunks).map(\.hash))
            try await service.store.setPendingChunks(chunks, session: session, totalSize: total)
            try await service.store.setPendingBase(requested.literals == nil ? nil : try body.string("base"), session: session)
            var seen: Set<String> = []
            let unique = missing.filter { seen.insert($0).inserted }
            return Self.json(.object(["missing": .array(unique.map { .string($0) })]))
        } catch {
            return errorResponse(error)
        }
    }

    /// `PUT|POST chunks/{hash}?token=…`: stores one chunk after checking its hash.
    func putChunk(_ request: Request, hash: String?) async -> Response {
        do {
            _ = try await authorizeUpload(request.uri.queryParameters.get("token"))
            guard let hash = hash?.lowercased(), AssetChunkRef.isValidHash(hash) else {
                throw WireError(.badRequest, "the chunk's path must end with its SHA-256 as 64 hex digits")
            }
            let largest = service.store.chunking.maximumSize
            if let declared = request.headers[.contentLength].flatMap(Int.init), declared > largest {
                throw AssetHTTPError(status: 413, wire: WireError(.badRequest, "limit exceeded: a chunk is at most \(largest) bytes"))
            }
            let bytes: ByteBuffer
            do {
                bytes = try await request.body.collect(upTo: largest)
            } catch {
                throw AssetHTTPError(status: 413, wire: WireError(.badRequest, "limit exceeded: a chunk is at most \(largest) bytes"))
            }
            try await service.store.putChunk(hash: hash, bytes: bytes)
            return Self.json(.object(["hash": .string(hash), "size": .integer(Int64(bytes.readableBytes))]))
        } catch {
            return errorResponse(error)
        }
    }

    /// `POST manifest` `{token, chunks | packedChunks, fileChecksum?, size?}` (or `{token, …}`
    /// after `chunks/missing`): commits the asset → `{"singleFile": …}`, as a plain upload of the
    /// same bytes. With the uploader's `fileChecksum`, the store may answer without reading the
    /// chunks back and check the claim in the background (``BlobStore/commitManifest(_:claimedChecksum:)``).
    /// When chunks are missing: 404 `NOT_FOUND` with `missing: [hash]`.
    func commitManifest(_ request: Request) async -> Response {
        do {
            let body = try await jsonBody(request)
            let (upload, session) = try await authorizeUpload(try body.requiredString("token"))
            var listed = try await requestedList(body)
            // the stored version a relative list was built from: its chunks need no retain
            var base = listed == nil ? nil : try body.string("base")
            if listed == nil {
                listed = try await service.store.pendingChunks(session: session)
                base = try await service.store.pendingBase(session: session)
            }
            guard let chunks = listed else {
                throw WireError(.badRequest, "chunks: required (or call chunks/missing with the list first)")
            }
            let total = try checkList(chunks)
            let claimed = try body.string("fileChecksum")
            if let size = try body.integer("size"), size != total {
                throw WireError(.badRequest, "size: the chunks add up to \(total) bytes, not \(size)")
            }
            let info: BlobInfo
            do {
                info = try await service.store.commitManifest(chunks, claimedChecksum: claimed, base: base)
            } catch let error as UbiquityError where error.code == .notFound {
                let missing = (error.underlying as? BlobMissingChunks)?.hashes ?? []
                throw AssetHTTPError(status: 404, wire: WireError(.notFound, error.message), extra: ["missing": .array(missing.map { .string($0) })])
            }
            try? await service.store.discardUploadSession(id: session)
            return Self.json(singleFile(info, binding: upload.binding))
        } catch {
            return errorResponse(error)
        }
    }
}
