// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTPTypes
import Hummingbird
import NIOCore
import UbiquityCore
import UbiquityWire

extension AssetRoutes {
    /// The upload token of a JSON request's URL (`?token=`, which the upload status's URLs
    /// carry), verified before the body is read; nil when the URL has none (older clients: the
    /// body, at most `maximumChunkListBytes`, is then read before its token is checked).
    func earlyAuthorization(_ request: Request) async throws -> (token: AssetUploadToken, session: String, text: String)? {
        guard let value = request.uri.queryParameters.get("token"), !value.isEmpty else { return nil }
        let text = String(value)
        let (token, session) = try await authorizeUpload(text)
        return (token, session, text)
    }

    /// The upload a JSON body's `token` names, or the one its URL named (then a `token` in the
    /// body must be the same).
    func authorize(_ body: WireReader, early: (token: AssetUploadToken, session: String, text: String)?) async throws -> (token: AssetUploadToken, session: String) {
        guard let early else { return try await authorizeUpload(try body.requiredString("token")) }
        if let inBody = try body.string("token"), inBody != early.text {
            throw WireError(.badRequest, "token: the body names another upload token than the URL")
        }
        return (early.token, early.session)
    }

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

    /// A request's chunk list, with the chunks a relative list carries literally (`nil` for a
    /// whole list) and the hashes of its base's chunks (empty for a whole list): the base is
    /// content the uploader can read already (``AssetService/canDeduplicate``), so its chunks
    /// need not be sent again.
    struct RequestedList {
        var chunks: [AssetChunkRef]
        var literals: [AssetChunkRef]?
        var baseHashes: Set<String>
    }

    /// A request's chunk list: whole (`chunks` or `packedChunks`), or relative to a stored asset
    /// (`base`: its `fileChecksum`; `edits`: ``AssetChunkListDelta`` pieces; `listChecksum`: the
    /// whole list's ``AssetChunkListDelta/listChecksum(_:hashBytes:)``, checked when given).
    /// nil when the request has none.
    /// - Throws: 404 `NOT_FOUND` with `"unknownBase": true` when no asset with that checksum is
    ///   stored that the uploader of `binding` can read (the two look the same); 409 `CONFLICT`
    ///   when the rebuilt list does not match `listChecksum` (the client then sends the whole
    ///   list); 400 for malformed edits.
    func requestedListAndLiterals(_ body: WireReader, binding: AssetBinding) async throws -> RequestedList? {
        if let chunks = try AssetChunkRef.list(from: body) { return RequestedList(chunks: chunks, literals: nil, baseHashes: []) }
        guard let base = try body.string("base") else { return nil }
        guard let edits = try body.value("edits") else { throw WireReader.missing(body.path("edits"), "the edits that turn the base's chunk list into this one") }
        let delta = try AssetChunkListDelta(json: edits, path: body.path("edits"))
        guard let baseChunks = try await readableChunkList(base, binding: binding) else {
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
        return RequestedList(chunks: chunks, literals: literals, baseHashes: Set(baseChunks.map(\.hash)))
    }

    /// The chunk list of the stored asset `fileChecksum` when the uploader of `binding` can read
    /// it already; nil otherwise (not stored, or not theirs to read: the two look the same).
    func readableChunkList(_ fileChecksum: String, binding: AssetBinding) async throws -> [AssetChunkRef]? {
        guard let info = try await service.store.info(fileChecksum: fileChecksum), info.verified,
              try await service.canDeduplicate(binding, info.fileChecksum) else { return nil }
        return try await service.store.chunkList(fileChecksum: fileChecksum)
    }

    /// Notes that the session sent every chunk of the asset it just uploaded whole (its list may
    /// then name them, under another checksum kind say).
    func noteSent(_ info: BlobInfo, session: String) async throws {
        guard let chunks = try await service.store.chunkList(fileChecksum: info.fileChecksum) else { return }
        try await service.store.noteSentChunks(chunks.map(\.hash), session: session)
    }

    /// The chunks among `hashes` the session may not name without sending their bytes: not
    /// sent by it and not its readable base's. Never the store's word about what it holds, so an
    /// answer tells nothing of other users' content (issue 24, finding 1).
    func unshown(_ hashes: [String], session: String, baseHashes: Set<String>) async throws -> [String] {
        let sent = try await service.store.sentChunks(session: session)
        var seen: Set<String> = []
        return hashes.filter { !sent.contains($0) && !baseHashes.contains($0) && seen.insert($0).inserted }
    }

    /// `POST chunks/missing` `{token, chunks | packedChunks | base + edits, fileChecksum?, size?}` →
    /// `{"missing": [hash]}`: the chunks to send, which are all but those this upload sent already
    /// and those of a base the uploader can read (never the store's word about other content).
    /// The list is remembered for the token, so `manifest` can then be called with the token
    /// alone. When `fileChecksum` and `size` name content stored that the uploader can read
    /// already (``AssetService/canDeduplicate``), the answer also carries `singleFile` (with a
    /// receipt) and nothing needs uploading; asked with only `fileChecksum` and `size` about
    /// other content, stored or not, the answer is 404.
    func missingChunks(_ request: Request) async -> Response {
        do {
            let early = try await earlyAuthorization(request)
            return try await jsonBody(request) { body in
                let (upload, session) = try await authorize(body, early: early)
                if let checksum = try body.string("fileChecksum"), let size = try body.integer("size"),
                   let info = try await service.store.info(fileChecksum: checksum), info.size == size, info.verified,
                   try await service.canDeduplicate(upload.binding, info.fileChecksum) {
                    // (an unverified asset — a claimed checksum not yet checked — is no target, and
                    // neither is content the uploader cannot read already)
                    _ = try await service.store.touch(fileChecksum: checksum)
                    var answer = singleFile(info, binding: upload.binding).objectValue ?? [:]
                    answer["missing"] = .array([])
                    return Self.json(.object(answer))
                }
                guard let requested = try await requestedListAndLiterals(body, binding: upload.binding) else {
                    if try body.string("fileChecksum") != nil {
                        throw WireError(.notFound, "no stored asset has this fileChecksum and size; send the chunk list")
                    }
                    throw WireError(.badRequest, "chunks: required, the asset's chunks in order ([{hash, size}] or packedChunks)")
                }
                let chunks = requested.chunks
                let total = try checkList(chunks)
                // a relative list: the base's chunks are its manifest's (if one went since, the
                // commit's retain finds it and answers 404 with it, and the client sends it)
                let unique = try await unshown((requested.literals ?? chunks).map(\.hash), session: session, baseHashes: requested.baseHashes)
                try await service.store.setPendingChunks(chunks, session: session, totalSize: total)
                try await service.store.setPendingBase(requested.literals == nil ? nil : try body.string("base"), session: session)
                return Self.json(.object(["missing": .array(unique.map { .string($0) })]))
            }
        } catch {
            return errorResponse(error)
        }
    }

    /// `PUT|POST chunks/{hash}?token=…`: stores one chunk after checking its hash.
    func putChunk(_ request: Request, hash: String?) async -> Response {
        do {
            let (_, session) = try await authorizeUpload(request.uri.queryParameters.get("token"))
            guard let hash = hash?.lowercased(), AssetChunkRef.isValidHash(hash) else {
                throw WireError(.badRequest, "the chunk's path must end with its SHA-256 as 64 hex digits")
            }
            let largest = service.store.chunking.maximumSize
            // (the upload token was checked first: a bad one is refused before the chunk is read)
            return try await bodyBudget.collect(request, upTo: largest, tooLarge: {
                AssetHTTPError(status: 413, wire: WireError(.badRequest, "limit exceeded: a chunk is at most \(largest) bytes"))
            }) { bytes in
                try await service.store.putChunk(hash: hash, bytes: bytes)
                try await service.store.noteSentChunks([hash], session: session)  // this upload has shown it
                return Self.json(.object(["hash": .string(hash), "size": .integer(Int64(bytes.readableBytes))]))
            }
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
            let early = try await earlyAuthorization(request)
            return try await jsonBody(request) { body in
                let (upload, session) = try await authorize(body, early: early)
                let requested = try await requestedListAndLiterals(body, binding: upload.binding)
                var listed = requested?.chunks
                var baseHashes = requested?.baseHashes ?? []
                // the stored version a relative list was built from: its chunks need no retain
                var base = listed == nil ? nil : try body.string("base")
                if listed == nil {
                    listed = try await service.store.pendingChunks(session: session)
                    base = try await service.store.pendingBase(session: session)
                    if let base { baseHashes = Set(try await readableChunkList(base, binding: upload.binding)?.map(\.hash) ?? []) }
                }
                guard let chunks = listed else {
                    throw WireError(.badRequest, "chunks: required (or call chunks/missing with the list first)")
                }
                // every chunk shown by this upload or its readable base: never content it only named
                let unshown = try await unshown(chunks.map(\.hash), session: session, baseHashes: baseHashes)
                if !unshown.isEmpty {
                    throw AssetHTTPError(status: 404, wire: WireError(.notFound, "\(unshown.count) chunk(s) of the list were not sent by this upload; send them first (PUT chunks/HASH)"),
                                         extra: ["missing": .array(unshown.map { .string($0) })])
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
            }
        } catch {
            return errorResponse(error)
        }
    }
}
