// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity
import UbiquityCore
import UbiquityWire
import UbiquityCloudKit

/// What the chunk-level downloads of one synced folder cost, since the process started.
package struct SyncDeltaStatistics: Sendable, Hashable {
    /// Downloads that had a basis (the previous synced version of the file).
    package var downloads = 0
    /// Of those, the ones assembled from the basis and ranges (the others were fetched whole).
    package var assembled = 0
    /// Bytes received over the network by those downloads (chunk lists and ranges, or the
    /// whole content after a fallback).
    package var bytesReceived: Int64 = 0
    /// Bytes taken from the basis files instead.
    package var bytesCopied: Int64 = 0
    /// Of the assembled downloads, the ones that read the basis to cut it into chunks (the
    /// others took the basis's kept chunk list, ``SyncJournal/chunkList(id:)``).
    package var basisScans = 0
    /// Large files read (once each: chunks and hashes in one pass) to upload them.
    package var uploadScans = 0
    /// Chunk lists kept in the journal after an upload or a download.
    package var listsKept = 0
    /// Chunks the upload scans recognised from the file's kept chunk list (hashed, not cut).
    package var uploadChunksReused = 0
    /// Bytes the upload scans cut with FastCDC (the changed regions; the rest was recognised).
    package var uploadBytesCut: Int64 = 0

    /// No downloads yet.
    package init() {}
}

extension SyncEngine {
    /// What this engine's chunk-level downloads cost so far.
    package nonisolated var deltaStatistics: SyncDeltaStatistics {
        deltaCounters.withLock { $0 }
    }

    /// Files at least this large keep their chunk list in the journal after an upload or a
    /// download (``SyncJournal/setChunkList(_:stamp:id:)``), so that the next chunk-level
    /// download of them need not read them to cut them.
    static let keptListMinimumSize: Int64 = 1 << 20
    /// The bytes of each chunk hash a kept list holds: as many as the chunk lists the downloads
    /// fetch carry (the default of ``AssetTransfer/chunkList(from:hashBytes:)``).
    static let keptHashBytes = 12

    /// The local file a download of `item` may reuse chunks of (`docs/sync.md`, "Chunk-level
    /// downloads"): the item's file as this device last synced it — journaled with a server
    /// version, still as journaled (size, modification time, inode), a regular file and not an
    /// evicted placeholder — with its kept chunk list when the file still has the stamp the list
    /// was kept with. Nil otherwise. Reading it is safe even while it is in use: without a kept
    /// list (or when the file changes meanwhile) the assembled file is checked against the
    /// asset's checksum, and anything else falls back to a whole download.
    func deltaBasis(for item: RemoteItem) -> AssetDownloadBasis? {
        guard item.kind == .file, let entry = try? journal.entry(id: item.id), entry.changeTag != nil,
              entry.stat.kind == .file, entry.stat.size > 0, entry.contentHash != item.contentHash,
              (try? journal.isEvicted(item.id)) != true else { return nil }
        let path = absolute(entry.path)
        guard let stamp = FileStamp.of(path), !SyncDecision.localChanged(entry, SyncStat(stamp)) else { return nil }
        let url = URL(fileURLWithPath: path)
        guard let kept = try? journal.chunkList(id: item.id), kept.describes(stamp) else { return AssetDownloadBasis(fileURL: url) }
        return AssetDownloadBasis(fileURL: url, chunkList: kept.list) { kept.describes(FileStamp.of(path)) }
    }

    /// Downloads `asset` to `destination`, from the previous version of `item` when there is
    /// one (``deltaBasis(for:)``), and counts what that cost. Returns the download's result.
    @discardableResult
    nonisolated func downloadAsset(_ asset: Asset, to destination: URL, basis: AssetDownloadBasis?,
                                   progress: @escaping @Sendable (AssetTransferProgress) -> Void) async throws -> AssetDownloadResult {
        guard let basis else {
            let result = try await asset.download(to: destination, reusing: nil, progress: progress)
            return result
        }
        let result = try await asset.download(to: destination, reusing: basis, progress: progress)
        deltaCounters.withLock { statistics in
            statistics.downloads += 1
            if result.usedBasis { statistics.assembled += 1 }
            if result.basisScanned { statistics.basisScans += 1 }
            statistics.bytesReceived += result.bytesReceived
            statistics.bytesCopied += result.bytesCopied
        }
        logger.debug("downloaded from the previous version", metadata: [
            "ubiquity.path": "\(basis.fileURL.path)", "ubiquity.assembled": "\(result.usedBasis)", "ubiquity.keptList": "\(!result.basisScanned)",
            "ubiquity.received": "\(result.bytesReceived)", "ubiquity.copied": "\(result.bytesCopied)",
        ])
        return result
    }

    /// Whether a download's `result` proves the written file has content hash `hash` (the
    /// download checked it against the asset's checksum, the same digest of either kind,
    /// ``AssetChecksum``): then it need not be read again to hash it.
    static func verified(_ result: AssetDownloadResult?, hash: String) -> Bool {
        guard let result, !hash.isEmpty, let hex = AssetChecksum.hex(result.fileChecksum) else { return false }
        return hex == hash
    }

    /// Keeps `list` as item `id`'s chunk list while its file has `stamp` (files of at least
    /// ``keptListMinimumSize``); a failure to keep it only costs a read later.
    func keepChunkList(_ list: AssetChunkList?, stamp: FileStamp, id: String) {
        guard var list, list.size >= Self.keptListMinimumSize, list.size == stamp.size else { return }
        if list.hashBytes > Self.keptHashBytes {
            // the lists it is compared with carry as many (AssetTransfer.chunkList): half the size
            list = AssetChunkList(fileChecksum: list.fileChecksum, size: list.size, chunking: list.chunking, hashBytes: Self.keptHashBytes,
                                  chunks: list.chunks)
        }
        do {
            try journal.setChunkList(list, stamp: stamp, id: id)
            deltaCounters.withLock { $0.listsKept += 1 }
        } catch {
            logger.debug("cannot keep a chunk list", metadata: ["ubiquity.id": "\(id)", "ubiquity.error": "\(error)"])
        }
    }

    /// Item `id`'s kept chunk list, whatever the file's stamp now (for an upload scan: the list
    /// only proposes chunks, each checked by its hash), or nil.
    func previousChunkList(id: String) -> AssetChunkList? {
        (try? journal.chunkList(id: id))?.list
    }

    /// Counts what an upload scan cost.
    func countUploadScan(_ scan: AssetFileScan) {
        deltaCounters.withLock {
            $0.uploadScans += 1
            $0.uploadChunksReused += scan.reusedChunks
            $0.uploadBytesCut += scan.cutBytes
        }
    }

    /// The chunk list of a downloaded `asset`: the one the download got, or (for a whole
    /// download of a large file) the server's, fetched now so that the next edit of the file is
    /// a chunk-level download that need not read it. Nil when there is none.
    nonisolated func chunkList(of asset: Asset, after result: AssetDownloadResult?) async -> AssetChunkList? {
        if let list = result?.chunkList { return list }
        guard let checksum = result?.fileChecksum ?? asset.fileChecksum, (result?.size ?? asset.size ?? 0) >= Self.keptListMinimumSize else { return nil }
        guard let list = try? await asset.chunkList(), list.fileChecksum == checksum else { return nil }
        return list
    }
}
