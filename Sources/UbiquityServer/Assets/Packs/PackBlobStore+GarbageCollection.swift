// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import UbiquityCore
import UbiquityWire

extension PackBlobStore {
    /// Mark and sweep over the objects; see ``BlobStore/collectGarbage(referenced:olderThan:)``.
    ///
    /// 1. Manifests no record refers to, last written or touched before `olderThan`, are
    ///    deleted (each one's age checked again just before).
    /// 2. The manifests left (listed again, so those written meanwhile count) and the upload
    ///    sessions still live mark the packs they name.
    /// 3. Unmarked packs older than `olderThan` are deleted (their chunks counted), index first, each one's age checked
    ///    again just before (a writer that reused a chunk restarted it).
    /// 4. Packs older than `olderThan` of which less than half is still used are compacted
    ///    (``compact(_:manifests:keeping:olderThan:report:)``).
    /// 5. Sessions whose newest object is older than `olderThan` are deleted, with packs begun
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
        var manifests: [String: PackManifest] = [:]
        for object in try await objects.list(prefix: "manifests/") {
            guard let body = try await objects.get(object.key) else { continue }
            let manifest = try PackManifest.decode(body.readableBytesView, key: object.key)
            manifests[object.key] = manifest
            live.formUnion(manifest.chunks.map(\.pack))
        }
        var sessionPacks: Set<String> = []
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
                sessionPacks.formUnion(try PackChunkLocation.lines(Substring(String(buffer: body)), lenient: true, what: "").map(\.pack))
            }
        }

        live.formUnion(sessionPacks)
        let packs = try await objects.list(prefix: "packs/")
        for object in packs where object.lastModified < olderThan {
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

        try await compact(packs.filter { $0.lastModified < olderThan }, manifests: manifests, keeping: sessionPacks, olderThan: olderThan, report: &report)

        for (id, files) in staleSessions where sessions.withLock({ !$0.busy.contains(id) }) {
            try step?("session")
            for object in files { try await objects.delete(object.key) }
            _ = sessions.withLock { $0.take(id) }
            report.sessionsDeleted += 1
        }
        try await objects.discardAbandonedWrites(olderThan: olderThan)
        return report
    }

    /// Rewrites the used chunks of mostly unused packs into one new pack: the new pack (and its
    /// index) is written first, then every manifest naming those packs is replaced by one naming
    /// the new locations, and only then are the old packs deleted, each one's age checked again
    /// just before (a writer that reused one of its chunks meanwhile restarted it: that pack then
    /// stays, still whole). A crash at any point leaves every manifest naming whole packs.
    func compact(_ candidates: [StoredObject], manifests: [String: PackManifest], keeping sessionPacks: Set<String>, olderThan: Date,
                 report: inout BlobGarbageReport) async throws {
        // the bytes of each pack that manifests still use (a chunk counted once)
        var used: [String: [String: PackChunkLocation]] = [:]
        for manifest in manifests.values {
            for chunk in manifest.chunks { used[chunk.pack, default: [:]][chunk.hash] = chunk }
        }
        let sparse = candidates.filter { object in
            let pack = String(object.key.dropFirst("packs/".count))
            guard let chunks = used[pack], !sessionPacks.contains(pack) else { return false }
            return chunks.values.reduce(Int64(0)) { $0 + Int64($1.size) } * 2 < object.size
        }
        guard !sparse.isEmpty else { return }
        try configuration.garbageCollectionStep?("compact")
        var moved: [String: PackChunkLocation] = [:]  // by the old "pack offset"
        var upload = PackUpload(objects: objects)
        var compacted: [StoredObject] = []
        do {
            for object in sparse {
                let pack = String(object.key.dropFirst("packs/".count))
                guard let current = try await objects.head(object.key), current.lastModified < olderThan else { continue }
                let chunks = used[pack]!.values.sorted { $0.offset < $1.offset }
                for run in readRuns(chunks[...]) {
                    let bytes = try await fetch(run)
                    for chunk in run {
                        let start = Int(chunk.offset - run.first!.offset)
                        let copy = Array(bytes.readableBytesView[bytes.readerIndex + start..<bytes.readerIndex + start + chunk.size])
                        moved["\(pack) \(chunk.offset)"] = try await upload.add(hash: chunk.hash, bytes: copy)
                    }
                }
                compacted.append(object)
            }
            index.add(try await upload.close())
        } catch {
            await upload.abort()
            throw error
        }
        for (key, manifest) in manifests where manifest.chunks.contains(where: { moved["\($0.pack) \($0.offset)"] != nil }) {
            var rewritten = manifest
            rewritten.chunks = manifest.chunks.map { moved["\($0.pack) \($0.offset)"] ?? $0 }
            try await objects.put(key, body: ByteBuffer(bytes: rewritten.encoded()))
            manifestCache.withLock { $0[key] = nil }
        }
        for object in compacted {
            let pack = String(object.key.dropFirst("packs/".count))
            try configuration.garbageCollectionStep?("pack")
            guard let current = try await objects.head(object.key), current.lastModified < olderThan else { continue }
            index.forget(pack: pack)
            try await objects.delete(PackIndex.key(pack: pack))
            try await objects.delete(object.key)
            report.packsCompacted += 1
            report.bytesFreed += object.size - used[pack]!.values.reduce(Int64(0)) { $0 + Int64($1.size) }
        }
    }
}
