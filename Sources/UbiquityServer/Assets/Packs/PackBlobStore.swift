// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

/// The ``BlobStore`` of pack files, in ``BlobObjects``: a folder (``FolderObjects``, every new
/// blob folder) or an S3-compatible bucket (``S3Client``: AWS S3, Ceph RGW, Garage, SeaweedFS,
/// MinIO, moto), under the location's prefix:
///
/// ```
/// packs/<pack id>              chunks' bytes, appended; one object per writer per 64 MiB
/// indexes/<pack id>            a pack's chunks (hash size pack offset), written once it is whole
/// manifests/<checksum hex>     one per asset: where each of its chunks is (PackManifest)
/// sessions/<id>/…              resumable upload sessions: info, chunks, tail-N, pending-*, sent-*
/// ```
///
/// Content is cut by FastCDC and each chunk stored once, as in ``FileBlobStore``, but chunks
/// are appended to *pack* objects rather than stored one file or object each: a 1 GiB upload is
/// 16 packs, not 16,384 files. A manifest names its chunks' packs and offsets, so reading is
/// ranged reads of consecutive chunks, each chunk's hash verified.
///
/// Every object appears whole. A pack's index is written after the pack is complete and a
/// manifest after every pack it names, so no manifest names missing bytes. Reusing a stored
/// chunk restarts its pack's age (``BlobObjects/touch(_:)``) before the manifest naming it is
/// written; garbage collection deletes only packs that no manifest names and that are older
/// than its cut-off, checking the age again just before deleting, and compacts packs mostly
/// unused. Run collection from one process per folder or bucket (`ubiq serve --gc-interval` on
/// one server, or `ubiq admin gc`).
package final class PackBlobStore: BlobStore {
    /// Tuning.
    package struct Configuration: Sendable {
        /// How content is cut into chunks.
        package var chunking: FastCDC.Parameters
        /// A pack is closed and a new one begun once it holds this many bytes.
        package var packSize: Int
        /// Bytes of consecutive chunks fetched by one ranged read.
        package var readSize: Int
        /// A pack whose age this process restarted less than this long ago is not touched again
        /// when reused (must be far below the garbage collection cut-off; 0 touches every time).
        package var retouchAfter: Duration
        /// How many interrupted upload sessions are kept in memory.
        package var cachedSessions: Int
        /// Test hook: called at each step of garbage collection with the step's name
        /// (`"manifest"`, `"pack"`, `"session"`); throwing simulates a crash there.
        package var garbageCollectionStep: (@Sendable (String) throws -> Void)?

        /// Makes a configuration; the defaults are FastCDC 16/64/256 KiB, 64 MiB packs, 8 MiB
        /// reads, packs retouched after 10 minutes and 32 cached sessions.
        package init(chunking: FastCDC.Parameters = .default, packSize: Int = 64 << 20, readSize: Int = 8 << 20,
                     retouchAfter: Duration = .seconds(600), cachedSessions: Int = 32) {
            self.chunking = chunking
            self.packSize = max(packSize, 1 << 20)
            self.readSize = max(readSize, chunking.maximumSize)
            self.retouchAfter = retouchAfter
            self.cachedSessions = cachedSessions
        }
    }

    /// Where the objects are: a bucket (``S3Client``) or a folder (``FolderObjects``).
    package let objects: any BlobObjects
    /// Tuning.
    package let configuration: Configuration
    let logger: Logger
    /// Which chunk is in which pack.
    let index = PackIndex()
    /// When this process last restarted each pack's age.
    let touched = Mutex<[String: ContinuousClock.Instant]>([:])
    /// Upload sessions in use, and interrupted ones kept in memory.
    let sessions: BlobSessions<PackBlobWriter>
    /// Manifests read lately (by key) with the size and age of the object they were read from,
    /// so that a download's range requests do not each read the manifest again. An entry is used
    /// only while the object is unchanged: another server (or garbage collection) may have
    /// replaced it since.
    let manifestCache = Mutex<[String: (manifest: PackManifest, object: StoredObject)]>([:])

    /// How content is cut into chunks.
    package var chunking: FastCDC.Parameters { configuration.chunking }

    /// A store in `objects`. Nothing is read or written until it is used.
    package init(objects: any BlobObjects, configuration: Configuration = Configuration(), logger: Logger) {
        self.objects = objects
        self.configuration = configuration
        self.logger = logger
        sessions = BlobSessions(limit: configuration.cachedSessions, logger: logger)
    }

    /// Checks that the objects can be reached (``BlobObjects/checkReachable()``).
    package func checkReachable() async throws { try await objects.checkReachable() }

    // MARK: Keys

    /// The manifest's key, or nil when `fileChecksum` is not a checksum (``AssetChecksum``).
    static func manifestKey(_ fileChecksum: String) -> String? {
        AssetChecksum.hex(fileChecksum).map { "manifests/\($0)" }
    }

    // MARK: Chunks

    /// Restarts the age of `packs` (copies onto themselves; those this process copied within
    /// ``Configuration/retouchAfter`` are skipped). Returns those that are gone, which are
    /// forgotten by the index.
    func retain(packs: Set<String>) async throws -> Set<String> {
        let now = ContinuousClock.now
        let due = touched.withLock { touched -> [String] in
            if touched.count > 100_000 { touched = touched.filter { now - $0.value < configuration.retouchAfter } }
            return packs.filter { pack in touched[pack].map { now - $0 >= configuration.retouchAfter } ?? true }
        }
        // the copies are the object store's work, not ours: up to 8 at once
        let objects = self.objects
        let gone = try await withThrowingTaskGroup(of: (String, Bool).self) { group -> Set<String> in
            var gone: Set<String> = []
            var pending = due[...]
            func next() {
                guard let pack = pending.popFirst() else { return }
                group.addTask { (pack, try await objects.touch("packs/\(pack)")) }
            }
            for _ in 0..<8 { next() }
            while let (pack, present) = try await group.next() {
                if !present { gone.insert(pack) }
                next()
            }
            return gone
        }
        touched.withLock { touched in
            for pack in due { touched[pack] = gone.contains(pack) ? nil : now }
        }
        for pack in gone { index.forget(pack: pack) }
        return gone
    }

    /// Where each of `hashes` is stored, learning other servers' packs when one is not known;
    /// their packs' ages restarted. Missing ones are absent from the answer.
    func locateAndRetain(_ hashes: [String]) async throws -> [String: PackChunkLocation] {
        if hashes.contains(where: { index.location($0) == nil }) { try await index.refresh(objects: objects) }
        var found: [String: PackChunkLocation] = [:]
        for hash in hashes { if let location = index.location(hash) { found[hash] = location } }
        let gone = try await retain(packs: Set(found.values.map(\.pack)))
        if !gone.isEmpty { found = found.filter { !gone.contains($0.value.pack) } }
        return found
    }

    /// The hashes not stored, in order; see ``BlobStore/missingChunks(_:)``.
    package func missingChunks(_ hashes: [String]) async throws -> [String] {
        for hash in hashes where !AssetChunkRef.isValidHash(hash) {
            throw UbiquityError(.invalidArgument, "\(hash) is not a chunk hash (64 lower-case hex digits)")
        }
        let found = try await locateAndRetain(hashes)
        return hashes.filter { found[$0] == nil }
    }

    /// Stores one chunk (as a pack of its own) unless present; see ``BlobStore/putChunk(hash:bytes:)``.
    package func putChunk(hash: String, bytes: ByteBuffer) async throws {
        guard AssetChunkRef.isValidHash(hash) else {
            throw UbiquityError(.invalidArgument, "\(hash) is not a chunk hash (64 lower-case hex digits)")
        }
        guard bytes.readableBytes > 0 else { throw UbiquityError(.invalidArgument, "a chunk cannot be empty") }
        let actual = try await BlockingWork.run { bytes.withUnsafeReadableBytes { Hex.encode(SHA256.hash(data: $0)) } }
        guard actual == hash else { throw UbiquityError(.invalidArgument, "the chunk's bytes hash to \(actual), not \(hash)") }
        if try await !locateAndRetain([hash]).isEmpty { return }
        var pack = PackUpload(objects: objects)
        _ = try await pack.add(hash: hash, bytes: Array(bytes.readableBytesView))
        index.add(try await pack.close())
    }

    /// Reads the chunks at `locations` (consecutive in one pack) with one ranged `GET`,
    /// checking each one's hash; their bytes, in order.
    func fetch(_ locations: ArraySlice<PackChunkLocation>) async throws -> ByteBuffer {
        guard let first = locations.first, let last = locations.last else { return ByteBuffer() }
        let range = first.offset..<last.offset + Int64(last.size)
        guard let bytes = try await objects.get("packs/\(first.pack)", range: range) else {
            throw UbiquityError(.notFound, "pack \(first.pack) is missing from \(objects.description) (chunk \(first.hash))")
        }
        try await BlockingWork.run {
            try bytes.withUnsafeReadableBytes { raw in
                for location in locations {
                    let start = Int(location.offset - first.offset)
                    let chunk = UnsafeRawBufferPointer(rebasing: raw[start..<start + location.size])
                    guard Hex.encode(SHA256.hash(data: chunk)) == location.hash else {
                        throw UbiquityError(.io, "chunk \(location.hash) is damaged: its bytes in pack \(location.pack) no longer match its hash")
                    }
                }
            }
        }
        return bytes
    }

    /// Splits `chunks` into runs that one ranged `GET` reads: consecutive in one pack, at most
    /// ``Configuration/readSize`` bytes.
    func readRuns(_ chunks: ArraySlice<PackChunkLocation>) -> [ArraySlice<PackChunkLocation>] {
        var runs: [ArraySlice<PackChunkLocation>] = []
        var start = chunks.startIndex
        var bytes = 0
        for index in chunks.indices {
            let chunk = chunks[index]
            if index > start {
                let previous = chunks[index - 1]
                if previous.pack != chunk.pack || previous.offset + Int64(previous.size) != chunk.offset || bytes + chunk.size > configuration.readSize {
                    runs.append(chunks[start..<index])
                    start = index
                    bytes = 0
                }
            }
            bytes += chunk.size
        }
        if start < chunks.endIndex { runs.append(chunks[start...]) }
        return runs
    }

    // MARK: Manifests

    /// The manifest, or nil when absent.
    func loadManifest(_ fileChecksum: String) async throws -> PackManifest? {
        guard let key = Self.manifestKey(fileChecksum) else { return nil }
        guard let object = try await objects.head(key) else {
            manifestCache.withLock { $0[key] = nil }
            return nil
        }
        if let cached = manifestCache.withLock({ $0[key] }), cached.object == object { return cached.manifest }
        guard let body = try await objects.get(key) else { return nil }
        let manifest = try PackManifest.decode(body.readableBytesView, key: key)
        guard manifest.fileChecksum == fileChecksum else { throw UbiquityError(.io, "the blob manifest \(key) is damaged (checksum)") }
        manifestCache.withLock { cache in
            if cache.count >= 16 { cache.removeAll() }
            cache[key] = (manifest, object)
        }
        return manifest
    }

    /// Writes the manifest unless one is there already (whose age then restarts).
    func commit(_ manifest: PackManifest) async throws {
        guard let key = Self.manifestKey(manifest.fileChecksum) else {
            throw UbiquityError(.invalidArgument, "not a SHA-256 checksum: \(manifest.fileChecksum)")
        }
        if try await objects.touch(key) { return }
        try await objects.put(key, body: ByteBuffer(bytes: manifest.encoded()))
        logger.debug("blob committed", metadata: ["blob.checksum": "\(manifest.fileChecksum)", "blob.size": "\(manifest.size)",
                                                   "blob.chunks": "\(manifest.chunks.count)"])
    }

    /// Commits an asset made of stored chunks, reading them through to compute its checksum;
    /// see ``BlobStore/commitManifest(_:)``.
    package func commitManifest(_ chunks: [AssetChunkRef]) async throws -> BlobInfo {
        let locations = try await locateAll(chunks)
        let whole = BlockingSHA256()
        for run in readRuns(locations[...]) { try await whole.update(try await fetch(run)) }
        let manifest = PackManifest(fileChecksum: FileBlobStore.checksum(of: whole.finalize()),
                                  size: locations.reduce(0) { $0 + Int64($1.size) }, chunks: locations)
        try await commit(manifest)
        return manifest.info
    }

    /// Commits a chunk list as the asset `claimedChecksum` names. A chunk-list checksum
    /// (``AssetChecksum/Kind/chunkList``) is checked against the list itself and committed
    /// without reading the chunks (each was checked against its hash when stored); any other
    /// claim is read through, as ``commitManifest(_:)``.
    /// - Throws: `invalidArgument` for a chunk-list checksum the list does not have; `notFound`
    ///   (underlying ``BlobMissingChunks``) naming chunks not stored.
    package func commitManifest(_ chunks: [AssetChunkRef], claimedChecksum: String?) async throws -> BlobInfo {
        guard let claimed = claimedChecksum, AssetChecksum.kind(of: claimed) == .chunkList else { return try await commitManifest(chunks) }
        try FileBlobStore.checkChunkRefs(chunks)
        let actual = AssetChecksum.chunkList(chunks)
        guard actual == claimed else {
            throw UbiquityError(.invalidArgument, "fileChecksum: the chunk list's checksum is \(actual), not the claimed \(claimed)")
        }
        let locations = try await locateAll(chunks)
        let manifest = PackManifest(fileChecksum: claimed, size: locations.reduce(0) { $0 + Int64($1.size) }, chunks: locations)
        try await commit(manifest)
        return manifest.info
    }

    /// Where every chunk of a list is, their packs' ages restarted.
    /// - Throws: `notFound` (underlying ``BlobMissingChunks``) naming those not stored;
    ///   `invalidArgument` for a size that is not the stored chunk's.
    func locateAll(_ chunks: [AssetChunkRef]) async throws -> [PackChunkLocation] {
        try FileBlobStore.checkChunkRefs(chunks)
        let found = try await locateAndRetain(chunks.map(\.hash))
        let missing = chunks.map(\.hash).filter { found[$0] == nil }
        guard missing.isEmpty else {
            throw UbiquityError(.notFound, "\(missing.count) of the manifest's chunks are not stored", underlying: BlobMissingChunks(hashes: missing))
        }
        return try chunks.map { chunk in
            let location = found[chunk.hash]!
            guard location.size == chunk.size else {
                throw UbiquityError(.invalidArgument, "chunk \(chunk.hash) is \(location.size) bytes, not \(chunk.size)")
            }
            return location
        }
    }

    /// The asset's description; see ``BlobStore/info(fileChecksum:)``.
    package func info(fileChecksum: String) async throws -> BlobInfo? {
        try await loadManifest(fileChecksum)?.info
    }

    /// The asset's chunks; see ``BlobStore/chunkList(fileChecksum:)``.
    package func chunkList(fileChecksum: String) async throws -> [AssetChunkRef]? {
        try await loadManifest(fileChecksum)?.chunks.map(\.ref)
    }

    /// Restarts the asset's age; see ``BlobStore/touch(fileChecksum:)``.
    package func touch(fileChecksum: String) async throws -> Bool {
        guard let key = Self.manifestKey(fileChecksum) else { return false }
        return try await objects.touch(key)
    }

    /// The asset's bytes, fetched run by run as the stream is iterated, one run ahead; see
    /// ``BlobStore/read(fileChecksum:range:)``.
    package func read(fileChecksum: String, range: Range<Int64>?) async throws -> BlobByteStream {
        guard let manifest = try await loadManifest(fileChecksum) else {
            throw UbiquityError(.notFound, "no asset with checksum \(fileChecksum) is stored")
        }
        let wanted = range ?? 0..<manifest.size
        guard wanted.lowerBound >= 0, wanted.upperBound <= manifest.size else {
            throw UbiquityError(.invalidArgument, "bytes \(wanted.lowerBound)-\(wanted.upperBound - 1) are outside the asset's \(manifest.size)")
        }
        // the chunks overlapping the range, and where the first starts in the content
        var start: Int64 = 0
        var first = manifest.chunks.endIndex
        var last = manifest.chunks.startIndex
        var firstStart: Int64 = 0
        for (index, chunk) in manifest.chunks.enumerated() {
            let end = start + Int64(chunk.size)
            if end > wanted.lowerBound, start < wanted.upperBound {
                if first == manifest.chunks.endIndex {
                    first = index
                    firstStart = start
                }
                last = index + 1
            }
            start = end
        }
        let runs = first < last ? readRuns(manifest.chunks[first..<last]) : []
        let skip = wanted.lowerBound - firstStart
        return BlobByteStream { [self] in
            let cursor = PackReadCursor(store: self, runs: runs, skip: skip, remaining: Int64(wanted.count))
            return { try await cursor.next() }
        }
    }

    /// Lists the manifests; see ``BlobStore/assetChecksums()``.
    package func assetChecksums() async throws -> [String] {
        try await objects.list(prefix: "manifests/").compactMap { AssetChecksum.base64(hex: String($0.key.dropFirst("manifests/".count))) }
    }

    /// Adds up the packs, chunks and manifests; see ``BlobStore/usage()``.
    package func usage() async throws -> BlobUsage {
        try await index.refresh(objects: objects, force: true)
        let packs = try await objects.list(prefix: "packs/")
        let manifests = try await objects.list(prefix: "manifests/")
        return BlobUsage(bytes: packs.reduce(0) { $0 + $1.size }, chunks: index.count, assets: manifests.count)
    }
}
