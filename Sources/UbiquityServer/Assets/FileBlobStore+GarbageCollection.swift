// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// The first 128 bits of a chunk hash: the live set's key (a collision could only keep a dead
/// chunk, never delete a live one).
private struct ChunkKey: Hashable {
    let high: UInt64
    let low: UInt64

    init?(hash: String) {
        let utf8 = Array(hash.utf8)
        guard utf8.count >= 32, let high = UInt64(String(decoding: utf8[0..<16], as: UTF8.self), radix: 16),
              let low = UInt64(String(decoding: utf8[16..<32], as: UTF8.self), radix: 16) else { return nil }
        self.high = high
        self.low = low
    }
}

extension FileBlobStore {
    /// Collects garbage in three passes, each safe to interrupt:
    ///
    /// 1. deletes manifests not in `referenced` whose last use is before `olderThan`;
    /// 2. rebuilds the live chunk set from the manifests left on disk and the chunk logs and
    ///    pending lists of live upload sessions, and deletes every other chunk last used before
    ///    `olderThan` (checking its age under the lock writers take to reuse a chunk);
    /// 3. deletes upload sessions idle since before `olderThan`, and stale temporary files.
    ///
    /// Nothing referenced is ever deleted: a crash after pass 1 leaves unused chunks for the next
    /// run. Choose `olderThan` well before now — at least the receipt lifetime
    /// (``AssetSigner/receiptLifetime``) — so that assets uploaded but not yet saved in a
    /// record survive.
    package func collectGarbage(referenced: Set<String>, olderThan: Date) async throws -> BlobGarbageReport {
        try await BlockingWork.run { try self.collectGarbageNow(referenced: referenced, olderThan: olderThan) }
    }

    private func collectGarbageNow(referenced: Set<String>, olderThan cutoff: Date) throws -> BlobGarbageReport {
        // no commit that skipped retaining its base's chunks is under way from here to the end
        // (FileBlobStore+Retention.swift)
        beginCollecting()
        defer { endCollecting() }
        var report = BlobGarbageReport()
        let step = configuration.garbageCollectionStep
        var keys: Set<String> = []
        for checksum in referenced {
            if let key = FileBlobStore.manifestKey(checksum) { keys.insert(key) }
        }

        // 1. Manifests.
        var live: Set<ChunkKey> = []
        for file in try BlobFiles.listSharded(manifestsRoot) {
            if !keys.contains(file.name), let status = try BlobFiles.status(file.path), status.modified < cutoff {
                try step?("manifest")
                if unlink(file.path) == 0 { report.manifestsDeleted += 1 }
                continue
            }
            guard let buffer = try BlobFiles.read(file.path) else { continue }
            do {
                for chunk in try BlobManifest.decode(buffer.readableBytesView, path: file.path).chunks {
                    if let key = ChunkKey(hash: chunk.hash) { live.insert(key) }
                }
            } catch {
                // A damaged manifest: keep every chunk it may name rather than guess.
                logger.error("damaged blob manifest; garbage collection keeps all chunks", metadata: ["blob.manifest": "\(file.path)", "error": "\(error)"])
                return report
            }
        }

        // Upload sessions still alive keep their chunks.
        var staleSessions: [String] = []
        defer { sessions.withLock { table in for id in staleSessions { table.busy.remove(id) } } }
        for id in try BlobFiles.list(uploadsRoot) {
            guard let files = try? sessionFiles(id) else { continue }
            let modified = try BlobFiles.status(files.info)?.modified ?? BlobFiles.status(files.folder)?.modified ?? .distantPast
            // A stale session not in use is reserved (marked busy) until it is deleted, so no
            // request can resume it meanwhile.
            let reserved = modified < cutoff && sessions.withLock { table -> Bool in
                guard !table.busy.contains(id) else { return false }
                _ = table.take(id)
                table.busy.insert(id)
                return true
            }
            if reserved {
                staleSessions.append(id)
                continue
            }
            for chunk in try FileBlobWriter.readLog(files, repair: false) {
                if let key = ChunkKey(hash: chunk.hash) { live.insert(key) }
            }
            if let pending = try? pendingChunksNow(files) {
                for chunk in pending {
                    if let key = ChunkKey(hash: chunk.hash) { live.insert(key) }
                }
            }
        }

        // 2. Chunks.
        for file in try BlobFiles.listSharded(chunksRoot) {
            guard let key = ChunkKey(hash: file.name), !live.contains(key) else { continue }
            try chunkLock.withLock { _ in
                guard let status = try BlobFiles.status(file.path), status.modified < cutoff else { return }
                try step?("chunk")
                if unlink(file.path) == 0 {
                    report.chunksDeleted += 1
                    report.bytesFreed += status.size
                }
            }
        }

        // 3. Sessions and temporary files.
        for id in staleSessions {
            try step?("session")
            try BlobFiles.removeTree("\(uploadsRoot)/\(id)")
            report.sessionsDeleted += 1
        }
        for name in try BlobFiles.list(temporaryRoot) {
            let path = "\(temporaryRoot)/\(name)"
            if let status = try BlobFiles.status(path), status.modified < cutoff, unlink(path) == 0 { report.sessionsDeleted += 1 }
        }
        logger.debug("blob garbage collected", metadata: [
            "blob.manifests": "\(report.manifestsDeleted)", "blob.chunks": "\(report.chunksDeleted)",
            "blob.bytes": "\(report.bytesFreed)", "blob.sessions": "\(report.sessionsDeleted)",
        ])
        return report
    }

    private func pendingChunksNow(_ files: BlobSessionFiles) throws -> [AssetChunkRef] {
        guard let buffer = try BlobFiles.read(files.pendingChunks) else { return [] }
        return try AssetChunkRef.unpack(String(decoding: buffer.readableBytesView, as: UTF8.self), path: "pending-chunks")
    }
}
