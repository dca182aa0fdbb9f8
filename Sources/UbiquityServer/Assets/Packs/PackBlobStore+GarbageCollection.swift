// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension PackBlobStore {
    /// Mark and sweep over the bucket; see ``BlobStore/collectGarbage(referenced:olderThan:)``.
    ///
    /// 1. Manifests no record refers to, last written or touched before `olderThan`, are
    ///    deleted (each one's age checked again just before).
    /// 2. The manifests left (listed again, so those written meanwhile count) and the upload
    ///    sessions still live mark the packs they name.
    /// 3. Unmarked packs older than `olderThan` are deleted (their chunks counted), index first, each one's age checked
    ///    again just before (a writer that reused a chunk restarted it).
    /// 4. Sessions whose newest object is older than `olderThan` are deleted, with packs begun
    ///    before `olderThan` and never closed (an S3 multipart upload, a file in `tmp/`).
    ///
    /// Every step deletes only what the steps before made unreachable, so a crash between any
    /// two loses nothing referenced; the next run finishes the job.
    package func collectGarbage(referenced: Set<String>, olderThan: Date) async throws -> BlobGarbageReport {
        var report = BlobGarbageReport()
        let step = configuration.garbageCollectionStep
        for object in try await objects.list(prefix: "manifests/") where object.lastModified < olderThan {
            guard let checksum = AssetChecksum.base64(hex: String(object.key.dropFirst("manifests/".count))), !referenced.contains(checksum) else { continue }
            try step?("manifest")
            guard let current = try await objects.head(object.key), current.lastModified < olderThan else { continue }
            try await objects.delete(object.key)
            manifestCache.withLock { $0[object.key] = nil }
            report.manifestsDeleted += 1
        }

        var live: Set<String> = []
        for object in try await objects.list(prefix: "manifests/") {
            guard let body = try await objects.get(object.key) else { continue }
            live.formUnion(try PackManifest.decode(body.readableBytesView, key: object.key).chunks.map(\.pack))
        }
        var staleSessions: [String: [StoredObject]] = [:]
        var sessionObjects: [String: [StoredObject]] = [:]
        for object in try await objects.list(prefix: "sessions/") {
            let id = object.key.dropFirst("sessions/".count).prefix { $0 != "/" }
            sessionObjects[String(id), default: []].append(object)
        }
        for (id, files) in sessionObjects {
            if files.allSatisfy({ $0.lastModified < olderThan }) {
                staleSessions[id] = files
            } else if let body = try await objects.get(Self.sessionKey(id, "chunks")) {
                live.formUnion(try PackChunkLocation.lines(Substring(String(buffer: body)), lenient: true, what: "").map(\.pack))
            }
        }

        for object in try await objects.list(prefix: "packs/") where object.lastModified < olderThan {
            let pack = String(object.key.dropFirst("packs/".count))
            guard !live.contains(pack), PackID.isValid(pack[...]) else { continue }
            try step?("pack")
            guard let current = try await objects.head(object.key), current.lastModified < olderThan else { continue }
            index.forget(pack: pack)
            let entries = try await objects.get(PackIndex.key(pack: pack)).map { String(buffer: $0).split(separator: "\n").count } ?? 0
            try await objects.delete(PackIndex.key(pack: pack))
            try await objects.delete(object.key)
            report.chunksDeleted += entries
            report.bytesFreed += object.size
        }

        for (id, files) in staleSessions where sessions.withLock({ !$0.busy.contains(id) }) {
            try step?("session")
            for object in files { try await objects.delete(object.key) }
            _ = sessions.withLock { $0.take(id) }
            report.sessionsDeleted += 1
        }
        try await objects.discardAbandonedWrites(olderThan: olderThan)
        return report
    }
}
