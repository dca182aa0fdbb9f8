// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityCore
import UbiquityWire

/// What a blob store knows about one stored asset.
package struct BlobInfo: Sendable, Hashable {
    /// Standard base64 of the SHA-256 of the whole content: the asset's `fileChecksum`.
    package var fileChecksum: String
    /// The content's length in bytes.
    package var size: Int64
    /// How many chunks it is stored as.
    package var chunkCount: Int
    /// Whether the store has checked that the content hashes to ``fileChecksum``. An asset
    /// committed from a chunk list with the uploader's claimed checksum is not, until it is
    /// checked in the background (``BlobStore/commitManifest(_:claimedChecksum:)``): it is
    /// never a deduplication target for other uploads meanwhile.
    package var verified: Bool

    /// Makes a description.
    package init(fileChecksum: String, size: Int64, chunkCount: Int, verified: Bool = true) {
        self.fileChecksum = fileChecksum
        self.size = size
        self.chunkCount = chunkCount
        self.verified = verified
    }
}

/// What ``BlobStore/collectGarbage(referenced:olderThan:)`` removed.
package struct BlobGarbageReport: Sendable, Hashable {
    /// Manifests (assets) deleted.
    package var manifestsDeleted = 0
    /// Chunks deleted.
    package var chunksDeleted = 0
    /// Bytes of chunks deleted.
    package var bytesFreed: Int64 = 0
    /// Stale upload sessions and temporary files deleted.
    package var sessionsDeleted = 0
    /// Packs whose used chunks were rewritten into a new pack (``PackBlobStore``).
    package var packsCompacted = 0

    /// An empty report.
    package init() {}
}

/// How much a blob store holds.
package struct BlobUsage: Sendable, Hashable {
    /// Bytes of all chunks (each stored once).
    package var bytes: Int64
    /// Number of chunks.
    package var chunks: Int
    /// Number of assets (manifests).
    package var assets: Int

    /// Makes a usage figure.
    package init(bytes: Int64, chunks: Int, assets: Int) {
        self.bytes = bytes
        self.chunks = chunks
        self.assets = assets
    }
}

/// A streaming write of one asset into a ``BlobStore``: append its bytes in pieces of any size,
/// then ``finish()``. The store chunks and hashes on the fly; memory stays flat in the size.
package protocol BlobWriter: Sendable {
    /// Bytes appended so far (for a resumed upload session, since the session began).
    var bytesWritten: Int64 { get async }
    /// Appends bytes. May wait while earlier bytes are still being stored (back-pressure).
    func append(_ buffer: ByteBuffer) async throws
    /// Stores the rest and commits the asset: chunks first, then its manifest.
    func finish() async throws -> BlobInfo
    /// Gives up: nothing is committed. (Chunks already written stay until garbage collection.)
    func abort() async
}

/// A content-addressed store of asset bytes: content split by ``FastCDC`` into chunks stored
/// once each by SHA-256, an asset being a manifest of its chunks keyed by its `fileChecksum`.
///
/// ``PackBlobStore`` keeps it in pack files, in a folder or an S3-compatible bucket; ``FileBlobStore``
/// keeps the one-file-per-chunk folders earlier versions wrote.
/// All methods are safe to call concurrently.
package protocol BlobStore: Sendable {
    /// How the store cuts content into chunks (clients of the deduplicating extension must cut
    /// the same way).
    var chunking: FastCDC.Parameters { get }

    /// A writer for a new asset.
    func makeWriter() async throws -> any BlobWriter

    /// Runs `body` with the resumable upload session `id` (created when new, for an asset of
    /// `totalSize` bytes), exclusively: while it runs, another call for the same session fails
    /// with `conflict`. What was appended is kept when `body` returns or throws without
    /// finishing, so a later call continues at ``BlobWriter/bytesWritten``. Finishing removes
    /// the session.
    /// - Throws: `conflict` when the session is in use or was created for another total size.
    @discardableResult
    func withUploadSession<T: Sendable>(id: String, totalSize: Int64, _ body: (any BlobWriter) async throws -> T) async throws -> T

    /// The state of upload session `id`: bytes held, total size, when it was created; nil when
    /// there is no such session.
    func uploadSession(id: String) async throws -> BlobUploadSessionInfo?

    /// Deletes upload session `id` (nothing if absent).
    func discardUploadSession(id: String) async throws

    /// Remembers a chunk list for session `id` (the deduplicating extension's `missing` call),
    /// so that committing it later needs only the session.
    func setPendingChunks(_ chunks: [AssetChunkRef], session id: String, totalSize: Int64) async throws

    /// The chunk list remembered for session `id`, if any.
    func pendingChunks(session id: String) async throws -> [AssetChunkRef]?

    /// The hashes among `hashes` that the store does not hold, in the given order. Those it
    /// holds are kept from garbage collection for a while (their age restarts).
    func missingChunks(_ hashes: [String]) async throws -> [String]

    /// Stores one chunk after checking that `bytes` hash to `hash`.
    /// - Throws: `invalidArgument` when they do not.
    func putChunk(hash: String, bytes: ByteBuffer) async throws

    /// Commits an asset made of stored chunks: checks every chunk is present, reads them through
    /// to compute the whole checksum (verifying each chunk's hash and size), writes the manifest.
    /// Returns what a plain upload of the same bytes returns.
    /// - Throws: `notFound` naming the missing chunks; `corrupted`-style `io` errors for bad chunks.
    func commitManifest(_ chunks: [AssetChunkRef]) async throws -> BlobInfo

    /// Commits an asset made of stored chunks whose checksum the uploader claims to be
    /// `claimedChecksum`: a store may answer at once with the asset not yet ``BlobInfo/verified``
    /// and check the claim in the background (the default implementation ignores the claim and
    /// calls ``commitManifest(_:)``). An unverified asset is never a deduplication target; one
    /// whose content does not hash to the claim is deleted and logged.
    func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?) async throws -> BlobInfo

    /// As ``commitManifest(_:claimedChecksum:)``, for a list sent relative to the stored asset
    /// `base`: a store may skip restarting the age of the chunks that asset's manifest names
    /// (the default ignores `base`).
    func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?, base: String?) async throws -> BlobInfo

    /// Remembers the base of session `id`'s pending list (``setPendingChunks(_:session:totalSize:)``),
    /// for ``commitManifest(_:claimedChecksum:base:)`` (the default forgets it).
    func setPendingBase(_ base: String?, session id: String) async throws

    /// The base remembered for session `id`, if any.
    func pendingBase(session id: String) async throws -> String?

    /// Notes that upload session `id` sent the bytes of the chunks `hashes` (checked against
    /// them): the session has shown that content, so its chunk list may name it (issue 24,
    /// finding 1).
    func noteSentChunks(_ hashes: [String], session id: String) async throws

    /// The chunks upload session `id` sent (``noteSentChunks(_:session:)``).
    func sentChunks(session id: String) async throws -> Set<String>

    /// The asset's description, or nil when the store does not hold it.
    func info(fileChecksum: String) async throws -> BlobInfo?

    /// The asset's chunks in order, or nil when it is not stored or the store does not keep
    /// chunk lists (the default, in `AssetRoutes+Manifest.swift`): what a download's `?manifest=1`
    /// answers.
    func chunkList(fileChecksum: String) async throws -> [AssetChunkRef]?

    /// The asset's bytes in `range` (all of them when nil), streamed chunk by chunk, each chunk's
    /// hash verified as it is read: a damaged chunk ends the stream with an error, never with
    /// wrong bytes. The sequence reads only as fast as it is iterated.
    /// - Throws: `notFound` when the asset is not stored; `invalidArgument` for a range outside it.
    func read(fileChecksum: String, range: Range<Int64>?) async throws -> BlobByteStream

    /// Marks the asset as recently used, so that garbage collection with a cut-off before now
    /// keeps it even when no record references it yet. Returns false when it is not stored.
    func touch(fileChecksum: String) async throws -> Bool

    /// Deletes manifests not in `referenced` and last used before `olderThan`, then chunks no
    /// remaining manifest or live upload session uses and last used before `olderThan`, then
    /// upload sessions idle since before `olderThan`. A crash at any point loses nothing
    /// referenced.
    func collectGarbage(referenced: Set<String>, olderThan: Date) async throws -> BlobGarbageReport

    /// What the store holds.
    func usage() async throws -> BlobUsage

    /// The checksums of every stored asset (a manifest each), in no particular order.
    func assetChecksums() async throws -> [String]
}

/// The state of a resumable upload session.
package struct BlobUploadSessionInfo: Sendable, Hashable {
    /// Bytes held.
    package var received: Int64
    /// The announced total size.
    package var totalSize: Int64
    /// When the session was created.
    package var created: Date

    /// Makes a description.
    package init(received: Int64, totalSize: Int64, created: Date) {
        self.received = received
        self.totalSize = totalSize
        self.created = created
    }
}

/// An asset's bytes as an `AsyncSequence` of `ByteBuffer`s, produced on demand (each `next()`
/// reads the next piece), so a slow consumer holds the producer back.
package struct BlobByteStream: AsyncSequence, Sendable {
    /// A piece of the asset.
    package typealias Element = ByteBuffer

    private let makeProducer: @Sendable () -> @Sendable () async throws -> ByteBuffer?

    /// A stream whose every iterator gets its own producer from `makeProducer`; a producer
    /// returns the next piece, or nil at the end.
    package init(_ makeProducer: @escaping @Sendable () -> @Sendable () async throws -> ByteBuffer?) {
        self.makeProducer = makeProducer
    }

    /// Iterates the pieces.
    package struct AsyncIterator: AsyncIteratorProtocol {
        let produce: @Sendable () async throws -> ByteBuffer?
        /// The next piece, or nil at the end.
        package mutating func next() async throws -> ByteBuffer? { try await produce() }
    }

    /// A fresh iterator (reading from the start of the range again).
    package func makeAsyncIterator() -> AsyncIterator { AsyncIterator(produce: makeProducer()) }
}

extension BlobStore {
    /// Ignores the claim: ``commitManifest(_:)``.
    package func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?) async throws -> BlobInfo {
        try await commitManifest(chunks)
    }

    /// Ignores the base: ``commitManifest(_:claimedChecksum:)``.
    package func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?, base: String?) async throws -> BlobInfo {
        try await commitManifest(chunks, claimedChecksum: claimedChecksum)
    }

    /// Forgets it.
    package func setPendingBase(_ base: String?, session id: String) async throws {}

    /// None.
    package func pendingBase(session id: String) async throws -> String? { nil }

    /// Forgets it.
    package func noteSentChunks(_ hashes: [String], session id: String) async throws {}

    /// None.
    package func sentChunks(session id: String) async throws -> Set<String> { [] }

    /// Stores `bytes` as an asset in one call (tests and small assets).
    package func write(_ bytes: some Sequence<UInt8>) async throws -> BlobInfo {
        let writer = try await makeWriter()
        do {
            try await writer.append(ByteBuffer(bytes: Array(bytes)))
            return try await writer.finish()
        } catch {
            await writer.abort()
            throw error
        }
    }

    /// Reads an asset (or a range of it) into memory (tests and small assets).
    package func readAll(fileChecksum: String, range: Range<Int64>? = nil) async throws -> [UInt8] {
        var out: [UInt8] = []
        for try await buffer in try await read(fileChecksum: fileChecksum, range: range) {
            out.append(contentsOf: buffer.readableBytesView)
        }
        return out
    }
}
