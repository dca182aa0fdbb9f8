// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity
import UbiquityCore

/// What the chunk-level downloads of one synced folder cost, since the process started.
public struct SyncDeltaStatistics: Sendable, Hashable {
    /// Downloads that had a basis (the previous synced version of the file).
    public var downloads = 0
    /// Of those, the ones assembled from the basis and ranges (the others were fetched whole).
    public var assembled = 0
    /// Bytes received over the network by those downloads (chunk lists and ranges, or the
    /// whole content after a fallback).
    public var bytesReceived: Int64 = 0
    /// Bytes taken from the basis files instead.
    public var bytesCopied: Int64 = 0

    /// No downloads yet.
    public init() {}
}

extension SyncEngine {
    /// What this engine's chunk-level downloads cost so far.
    public nonisolated var deltaStatistics: SyncDeltaStatistics {
        deltaCounters.withLock { $0 }
    }

    /// The local file a download of `item` may reuse chunks of (`docs/sync.md`, "Chunk-level
    /// downloads"): the item's file as this device last synced it — journaled with a server
    /// version, still as journaled (size, modification time, inode), a regular file and not an
    /// evicted placeholder. Nil otherwise. Reading it is safe even while it is in use: the
    /// assembled file is checked against the asset's checksum, and anything else falls back to
    /// a whole download.
    func deltaBasis(for item: RemoteItem) -> URL? {
        guard item.kind == .file, let entry = try? journal.entry(id: item.id), entry.changeTag != nil,
              entry.stat.kind == .file, entry.stat.size > 0, entry.contentHash != item.contentHash,
              (try? journal.isEvicted(item.id)) != true else { return nil }
        let path = absolute(entry.path)
        guard let stamp = FileStamp.of(path), !SyncDecision.localChanged(entry, SyncStat(stamp)), !Placeholder.isHollow(path) else { return nil }
        return URL(fileURLWithPath: path)
    }

    /// Downloads `asset` to `destination`, from the previous version of `item` when there is
    /// one (``deltaBasis(for:)``), and counts what that cost.
    nonisolated func downloadAsset(_ asset: Asset, to destination: URL, basis: URL?,
                                   progress: @escaping @Sendable (AssetTransferProgress) -> Void) async throws {
        guard let basis else {
            try await asset.download(to: destination, progress: progress)
            return
        }
        let result = try await asset.download(to: destination, basis: basis, progress: progress)
        deltaCounters.withLock { statistics in
            statistics.downloads += 1
            if result.usedBasis { statistics.assembled += 1 }
            statistics.bytesReceived += result.bytesReceived
            statistics.bytesCopied += result.bytesCopied
        }
        logger.debug("downloaded from the previous version", metadata: [
            "ubiquity.path": "\(basis.path)", "ubiquity.assembled": "\(result.usedBasis)",
            "ubiquity.received": "\(result.bytesReceived)", "ubiquity.copied": "\(result.bytesCopied)",
        ])
    }
}
