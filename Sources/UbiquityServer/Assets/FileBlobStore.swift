// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Logging
import NIOCore
import Synchronization
import UbiquityCore
import UbiquityWire

/// The ``BlobStore`` in a folder:
///
/// ```
/// chunks/ab/cd/<sha256 hex>          each distinct chunk once
/// manifests/ab/cd/<checksum hex>     one per asset, keyed by its fileChecksum (as hex)
/// uploads/<session>/                 resumable upload sessions (info, chunks.log, tail-N)
/// verifying/<checksum hex>           manifests committed unverified, to check (empty markers)
/// tmp/                               files being written (renamed into place when complete)
/// ```
///
/// Every file appears by rename, complete. A writer puts its new chunks in place before it
/// renames the asset's manifest into place, so no manifest ever names a missing or partial
/// chunk; with ``Configuration/syncBeforeCommit`` the file system is also flushed before the
/// manifest is written, so that holds after a power cut too. Reads verify every chunk's hash.
///
/// Garbage collection and writers coordinate inside one process (a writer that reuses a chunk
/// restarts its age under the same lock that collection deletes under); run collection from
/// one process per folder.
package final class FileBlobStore: BlobStore {
    /// Tuning and durability.
    package struct Configuration: Sendable {
        /// How content is cut into chunks. Changing it keeps old assets readable but stops
        /// deduplication against them.
        package var chunking: FastCDC.Parameters
        /// Flush the file system (`syncfs`) before committing a manifest, so a power cut cannot
        /// leave a manifest whose chunks never reached the disk. Costs writing the data to disk
        /// before the upload is answered. On by default.
        package var syncBeforeCommit: Bool
        /// How many appended bytes a writer may hold while they are being hashed and stored
        /// before `append` waits (per writer).
        package var writeBacklog: Int
        /// How many interrupted upload sessions are kept in memory (their state is on disk
        /// regardless; a session not in memory is recovered by re-reading its chunks).
        package var cachedSessions: Int
        /// Test hook: called at each step of garbage collection with the step's name
        /// (`"manifest"`, `"chunk"`, `"session"`); throwing simulates a crash there.
        package var garbageCollectionStep: (@Sendable (String) throws -> Void)?

        /// Makes a configuration; the defaults are FastCDC 16/64/256 KiB, sync before commit,
        /// an 8 MiB backlog and 32 cached sessions.
        package init(chunking: FastCDC.Parameters = .default, syncBeforeCommit: Bool = true, writeBacklog: Int = 8 << 20, cachedSessions: Int = 32) {
            self.chunking = chunking
            self.syncBeforeCommit = syncBeforeCommit
            self.writeBacklog = writeBacklog
            self.cachedSessions = cachedSessions
        }
    }

    /// The store's folder.
    package let directory: URL
    /// Tuning and durability.
    package let configuration: Configuration
    let logger: Logger
    let root: String
    let chunksRoot: String
    let manifestsRoot: String
    let uploadsRoot: String
    let verifyingRoot: String
    let temporaryRoot: String
    /// Held while checking-and-touching a chunk (writers) and while checking-and-deleting one
    /// (garbage collection), so a chunk a writer just reused is never deleted under it.
    let chunkLock = Mutex(())
    /// Upload sessions in use, and interrupted ones kept in memory.
    let sessions: BlobSessions<FileBlobWriter>
    let readCounter = Atomic<Int>(0)
    /// Held while deciding whether to write, replace or delete a manifest.
    let manifestLock = Mutex(())
    /// Commits that skip retaining their base's chunks, and whether a collection runs
    /// (`FileBlobStore+Retention.swift`).
    let retention = Mutex(RetentionState())
    let retentionCounters = Mutex(RetentionCounters())
    /// Background checks of unverified manifests, by manifest key
    /// (`FileBlobStore+Verification.swift`).
    let verifications = Mutex<[String: Task<Void, Never>]>([:])
    /// Unverified manifests found not to match their claimed checksum (and deleted).
    let verificationFailureCounter = Atomic<Int>(0)
    /// Chunk bytes read back to compute a checksum while a commit request waited.
    let commitReadCounter = Atomic<Int64>(0)
    /// Chunk bytes read back by background verification.
    let verificationReadCounter = Atomic<Int64>(0)

    /// How many chunks reads have loaded so far (tests check that reading is pulled).
    package var chunksRead: Int { readCounter.load(ordering: .relaxed) }

    /// How content is cut into chunks.
    package var chunking: FastCDC.Parameters { configuration.chunking }

    /// Opens (creating when needed) the store in `directory`.
    /// - Throws: `UbiquityError` when the folders cannot be created.
    package init(directory: URL, configuration: Configuration = Configuration(), logger: Logger) throws {
        self.directory = directory
        self.configuration = configuration
        self.logger = logger
        sessions = BlobSessions(limit: configuration.cachedSessions, logger: logger)
        root = directory.standardizedFileURL.path
        chunksRoot = root + "/chunks"
        manifestsRoot = root + "/manifests"
        uploadsRoot = root + "/uploads"
        verifyingRoot = root + "/verifying"
        temporaryRoot = root + "/tmp"
        for folder in [chunksRoot, manifestsRoot, uploadsRoot, verifyingRoot, temporaryRoot] {
            try BlobFiles.makeDirectories(folder)
            try PrivateFolder.ensure(folder)  // 0700 whatever the umask: the content of every asset
        }
        resumeVerifications()
    }

    // MARK: Paths

    func chunkPath(_ hash: String) -> String {
        let utf8 = Array(hash.utf8)
        return "\(chunksRoot)/\(String(decoding: utf8[0..<2], as: UTF8.self))/\(String(decoding: utf8[2..<4], as: UTF8.self))/\(hash)"
    }

    /// The manifest's path, or nil when `fileChecksum` is not a checksum (``AssetChecksum``).
    func manifestPath(_ fileChecksum: String) -> String? {
        guard let key = FileBlobStore.manifestKey(fileChecksum) else { return nil }
        let utf8 = Array(key.utf8)
        return "\(manifestsRoot)/\(String(decoding: utf8[0..<2], as: UTF8.self))/\(String(decoding: utf8[2..<4], as: UTF8.self))/\(key)"
    }

    /// The hex of the digest a checksum encodes (64 digits for a whole-content SHA-256, 66 for a
    /// chunk-list checksum, ``AssetChecksum``), or nil when it is neither.
    static func manifestKey(_ fileChecksum: String) -> String? {
        AssetChecksum.hex(fileChecksum)
    }

    /// The checksum whose manifest key is `hex`.
    static func fileChecksum(manifestKey hex: String) -> String? {
        AssetChecksum.base64(hex: hex)
    }

    static func checksum(of digest: some Sequence<UInt8>) -> String { Data(digest).base64EncodedString() }

    // MARK: Chunks

    /// Whether the chunk is stored; when it is, its age restarts (under ``chunkLock``).
    func retainChunk(_ hash: String) throws -> Bool {
        let path = chunkPath(hash)
        return try chunkLock.withLock { _ in try BlobFiles.touch(path) }
    }

    /// Stores a chunk unless present; true when it was written.
    @discardableResult
    func storeChunk(hash: String, bytes: UnsafeRawBufferPointer) throws -> Bool {
        if try retainChunk(hash) { return false }
        try BlobFiles.writeAtomically(chunkPath(hash), bytes: bytes, temporaryDirectory: temporaryRoot,
                                      startWriteback: configuration.syncBeforeCommit)
        return true
    }

    /// The hashes not stored, in order; the stored ones have their age restarted.
    package func missingChunks(_ hashes: [String]) async throws -> [String] {
        for hash in hashes where !AssetChunkRef.isValidHash(hash) {
            throw UbiquityError(.invalidArgument, "\(hash) is not a chunk hash (64 lower-case hex digits)")
        }
        return try await BlockingWork.run { try hashes.filter { try !self.retainChunk($0) } }
    }

    /// Stores one chunk after checking its hash.
    package func putChunk(hash: String, bytes: ByteBuffer) async throws {
        guard AssetChunkRef.isValidHash(hash) else {
            throw UbiquityError(.invalidArgument, "\(hash) is not a chunk hash (64 lower-case hex digits)")
        }
        guard bytes.readableBytes > 0 else { throw UbiquityError(.invalidArgument, "a chunk cannot be empty") }
        try await BlockingWork.run {
            try bytes.withUnsafeReadableBytes { raw in
                let actual = Hex.encode(SHA256.hash(data: raw))
                guard actual == hash else {
                    throw UbiquityError(.invalidArgument, "the chunk's bytes hash to \(actual), not \(hash)")
                }
                try self.storeChunk(hash: hash, bytes: raw)
            }
        }
    }

    // MARK: Manifests

    /// Writes the manifest unless one is already there (then only its age restarts) — except
    /// that a verified manifest replaces an unverified one.
    func commit(_ manifest: BlobManifest) throws {
        try manifestLock.withLock { _ in try commitLocked(manifest) }
    }

    /// ``commit(_:)`` with ``manifestLock`` held.
    func commitLocked(_ manifest: BlobManifest) throws {
        guard let path = manifestPath(manifest.fileChecksum) else {
            throw UbiquityError(.invalidArgument, "not a SHA-256 checksum: \(manifest.fileChecksum)")
        }
        if let existing = try readHeader(path), existing.verified || !manifest.verified {
            _ = try BlobFiles.touch(path)
            return
        }
        if configuration.syncBeforeCommit { LinuxCalls.syncFileSystem(containing: root) }
        try writeManifest(manifest, at: path)
        logger.debug("blob committed", metadata: ["blob.checksum": "\(manifest.fileChecksum)", "blob.size": "\(manifest.size)",
                                                   "blob.chunks": "\(manifest.chunks.count)", "blob.verified": "\(manifest.verified)"])
    }

    /// Writes (or replaces) the manifest file, atomically.
    func writeManifest(_ manifest: BlobManifest, at path: String) throws {
        let bytes = manifest.encoded()
        try bytes.withUnsafeBytes {
            try BlobFiles.writeAtomically(path, bytes: $0, temporaryDirectory: temporaryRoot, sync: configuration.syncBeforeCommit)
        }
    }

    /// The manifest, or nil when absent.
    func loadManifest(_ fileChecksum: String) throws -> BlobManifest? {
        guard let path = manifestPath(fileChecksum), let buffer = try BlobFiles.read(path) else { return nil }
        return try BlobManifest.decode(buffer.readableBytesView, path: path)
    }

    /// Commits an asset made of stored chunks, reading them through to compute its checksum.
    package func commitManifest(_ chunks: [AssetChunkRef]) async throws -> BlobInfo {
        try Self.checkChunkRefs(chunks)
        return try await BlockingWork.run {
            try self.retainAll(chunks)
            let (checksum, total) = try self.readThroughChecksum(chunks, background: false)
            let manifest = BlobManifest(fileChecksum: checksum, size: total, chunks: chunks)
            try self.commit(manifest)
            return manifest.info
        }
    }

    /// Checks the form of a chunk list.
    static func checkChunkRefs(_ chunks: [AssetChunkRef]) throws {
        for chunk in chunks {
            guard AssetChunkRef.isValidHash(chunk.hash) else { throw UbiquityError(.invalidArgument, "\(chunk.hash) is not a chunk hash") }
            guard chunk.size > 0 else { throw UbiquityError(.invalidArgument, "chunk \(chunk.hash) has size \(chunk.size)") }
        }
    }

    /// Restarts the age of every chunk of a list. Blocking.
    /// - Throws: `notFound` (underlying ``BlobMissingChunks``) naming those not stored.
    func retainAll(_ chunks: [AssetChunkRef]) throws {
        var missing: [String] = []
        for chunk in chunks where try !retainChunk(chunk.hash) { missing.append(chunk.hash) }
        guard missing.isEmpty else {
            throw UbiquityError(.notFound, "\(missing.count) of the manifest's chunks are not stored", underlying: BlobMissingChunks(hashes: missing))
        }
    }

    /// The checksum (standard base64 SHA-256) and size of the content of stored chunks, read
    /// through (blocking); the bytes read are counted as a commit's or (`background`) a
    /// verification's.
    func readThroughChecksum(_ chunks: [AssetChunkRef], background: Bool) throws -> (String, Int64) {
        let largest = chunks.map(\.size).max() ?? 0
        let scratch = UnsafeMutableRawBufferPointer.allocate(byteCount: max(largest, 1), alignment: 16)
        defer { scratch.deallocate() }
        var whole = SHA256()
        var total: Int64 = 0
        for chunk in chunks {
            // each chunk's hash was checked when it was stored; the whole checksum computed
            // here is what the asset is known by (and what the client compares with its own)
            let bytes = try readChunk(chunk, into: scratch, verifyingHash: false)
            whole.update(bufferPointer: bytes)
            total += Int64(chunk.size)
        }
        if background { verificationReadCounter.add(total, ordering: .relaxed) } else { commitReadCounter.add(total, ordering: .relaxed) }
        return (FileBlobStore.checksum(of: whole.finalize()), total)
    }

    /// Reads a chunk into `scratch`, checking its size and (unless `verifyingHash` is false) its hash.
    func readChunk(_ chunk: AssetChunkRef, into scratch: UnsafeMutableRawBufferPointer, verifyingHash: Bool = true) throws -> UnsafeRawBufferPointer {
        let path = chunkPath(chunk.hash)
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { throw UbiquityError(.notFound, "chunk \(chunk.hash) is missing from the blob store") }
            throw UbiquityError.posix("open", path: path)
        }
        defer { close(fd) }
        // One byte more than expected shows a chunk that is too long.
        let window = UnsafeMutableRawBufferPointer(rebasing: scratch[..<min(scratch.count, chunk.size)])
        let got = try BlobFiles.readFully(fd, into: window, path: path)
        var extra: UInt8 = 0
        let more = pread(fd, &extra, 1, off_t(chunk.size))
        guard got == chunk.size, more == 0 else {
            throw UbiquityError(.io, "chunk \(chunk.hash) is damaged: it is not \(chunk.size) bytes long")
        }
        let bytes = UnsafeRawBufferPointer(window)
        guard !verifyingHash || Hex.encode(SHA256.hash(data: bytes)) == chunk.hash else {
            throw UbiquityError(.io, "chunk \(chunk.hash) is damaged: its bytes no longer match its hash")
        }
        return bytes
    }

    /// The asset's description from its manifest's header; see ``BlobStore/info(fileChecksum:)``.
    package func info(fileChecksum: String) async throws -> BlobInfo? {
        guard let path = manifestPath(fileChecksum) else { return nil }
        return try await BlockingWork.run {
            guard let info = try self.readHeader(path) else { return nil }
            guard info.fileChecksum == fileChecksum else { throw UbiquityError(.io, "the blob manifest \(path) is damaged (checksum)") }
            return info
        }
    }

    /// The manifest's header at `path` (blocking), or nil when there is none.
    func readHeader(_ path: String) throws -> BlobInfo? {
        let fd = open(path, O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else {
            if errno == ENOENT { return nil }
            throw UbiquityError.posix("open", path: path)
        }
        defer { close(fd) }
        var header = [UInt8](repeating: 0, count: 512)
        let got = try header.withUnsafeMutableBytes { try BlobFiles.readFully(fd, into: $0, path: path) }
        return try BlobManifest.decodeHeader(header[..<got], path: path)
    }

    /// Restarts the asset's age; see ``BlobStore/touch(fileChecksum:)``.
    package func touch(fileChecksum: String) async throws -> Bool {
        guard let path = manifestPath(fileChecksum) else { return false }
        return try await BlockingWork.run { try BlobFiles.touch(path) }
    }

    /// Walks the store to add up its chunks and manifests; see ``BlobStore/usage()``.
    package func usage() async throws -> BlobUsage {
        try await BlockingWork.run {
            var bytes: Int64 = 0
            var chunks = 0
            for file in try BlobFiles.listSharded(self.chunksRoot) {
                if let status = try BlobFiles.status(file.path) {
                    bytes += status.size
                    chunks += 1
                }
            }
            return BlobUsage(bytes: bytes, chunks: chunks, assets: try BlobFiles.listSharded(self.manifestsRoot).count)
        }
    }
}

extension FileBlobStore {
    /// Lists the manifests; see ``BlobStore/assetChecksums()``.
    package func assetChecksums() async throws -> [String] {
        try await BlockingWork.run {
            try BlobFiles.listSharded(self.manifestsRoot).compactMap { FileBlobStore.fileChecksum(manifestKey: $0.name) }
        }
    }
}

/// The chunks a manifest named that the store does not hold: the `underlying` error of the
/// `notFound` error ``BlobStore/commitManifest(_:)`` throws.
package struct BlobMissingChunks: Error, Sendable, Hashable {
    /// Their hashes, in manifest order.
    package var hashes: [String]
}
