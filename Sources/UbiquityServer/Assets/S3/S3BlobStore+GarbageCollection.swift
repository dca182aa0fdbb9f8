// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension S3BlobStore {
    /// Mark and sweep over the bucket; see ``BlobStore/collectGarbage(referenced:olderThan:)``.
    ///
    /// 1. Manifests no record refers to, last written or touched before `olderThan`, are
    ///    deleted (each one's age checked again just before).
    /// 2. The manifests left (listed again, so those written meanwhile count) and the upload
    ///    sessions still live mark the packs they name.
    /// 3. Unmarked packs older than `olderThan` are deleted (their chunks counted), index first, each one's age checked
    ///    again just before (a writer that reused a chunk restarted it).
    /// 4. Sessions whose newest object is older than `olderThan` are deleted, with multipart
    ///    uploads begun before `olderThan` and never completed.
    ///
    /// Every step deletes only what the steps before made unreachable, so a crash between any
    /// two loses nothing referenced; the next run finishes the job.
    package func collectGarbage(referenced: Set<String>, olderThan: Date) async throws -> BlobGarbageReport {
        var report = BlobGarbageReport()
        let step = configuration.garbageCollectionStep
        for object in try await client.list(prefix: "manifests/") where object.lastModified < olderThan {
            guard let checksum = AssetChecksum.base64(hex: String(object.key.dropFirst("manifests/".count))), !referenced.contains(checksum) else { continue }
            try step?("manifest")
            guard let current = try await client.head(object.key), current.lastModified < olderThan else { continue }
            try await client.delete(object.key)
            manifestCache.withLock { $0[object.key] = nil }
            report.manifestsDeleted += 1
        }

        var live: Set<String> = []
        for object in try await client.list(prefix: "manifests/") {
            guard let body = try await client.get(object.key) else { continue }
            live.formUnion(try S3Manifest.decode(body.readableBytesView, key: object.key).chunks.map(\.pack))
        }
        var staleSessions: [String: [S3Object]] = [:]
        var sessionObjects: [String: [S3Object]] = [:]
        for object in try await client.list(prefix: "sessions/") {
            let id = object.key.dropFirst("sessions/".count).prefix { $0 != "/" }
            sessionObjects[String(id), default: []].append(object)
        }
        for (id, objects) in sessionObjects {
            if objects.allSatisfy({ $0.lastModified < olderThan }) {
                staleSessions[id] = objects
            } else if let body = try await client.get(Self.sessionKey(id, "chunks")) {
                live.formUnion(try S3ChunkLocation.lines(Substring(String(buffer: body)), lenient: true, what: "").map(\.pack))
            }
        }

        for object in try await client.list(prefix: "packs/") where object.lastModified < olderThan {
            let pack = String(object.key.dropFirst("packs/".count))
            guard !live.contains(pack), S3PackID.isValid(pack[...]) else { continue }
            try step?("pack")
            guard let current = try await client.head(object.key), current.lastModified < olderThan else { continue }
            index.forget(pack: pack)
            let entries = try await client.get(S3PackIndex.key(pack: pack)).map { String(buffer: $0).split(separator: "\n").count } ?? 0
            try await client.delete(S3PackIndex.key(pack: pack))
            try await client.delete(object.key)
            report.chunksDeleted += entries
            report.bytesFreed += object.size
        }

        for (id, objects) in staleSessions where sessions.withLock({ !$0.busy.contains(id) }) {
            try step?("session")
            for object in objects { try await client.delete(object.key) }
            _ = sessions.withLock { $0.take(id) }
            report.sessionsDeleted += 1
        }
        try await abortMultipartUploads(olderThan: olderThan)
        return report
    }

    /// Aborts multipart uploads begun before `olderThan` (a writer that died before completing
    /// its pack), whose parts S3 would otherwise keep.
    func abortMultipartUploads(olderThan: Date) async throws {
        for upload in try await client.pendingUploads(prefix: "packs/") where upload.initiated < olderThan {
            try await client.abortMultipartUpload(upload.key, uploadID: upload.uploadID)
        }
    }
}
