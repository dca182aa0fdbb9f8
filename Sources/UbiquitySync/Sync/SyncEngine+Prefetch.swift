// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

extension SyncEngine {
    /// Downloads the asset contents of the records about to be applied, ``transfersInFlight``
    /// at once, into the staging folder (`dl-ID`), before the records are applied one by one in
    /// order of depth: ``download(_:_:expected:)`` then takes the staged file instead of
    /// fetching it. Only files whose content differs from the journal's are fetched; a failed
    /// fetch is left to the apply step (which fetches it again and reports the error).
    func prefetch(_ items: [(RemoteItem, Record)]) async throws {
        var wanted: [(String, String, Asset, String, AssetDownloadBasis?)] = []
        for (item, record) in items where item.kind == .file {
            guard record[SyncRecord.Field.inline] == nil, let asset = record[SyncRecord.Field.content]?.assetValue else { continue }
            if let entry = try journal.entry(id: item.id), entry.contentHash == item.contentHash { continue }
            wanted.append((item.id, item.contentHash, asset, item.path, deltaBasis(for: item)))  // SyncEngine+Delta.swift
        }
        guard wanted.count > 1 else { return }  // one download gains nothing from staging
        let directory = stagingDirectory
        let logger = self.logger
        var fetched: [String: (path: String, hash: String)] = [:]
        var next = 0
        while next < wanted.count {
            // one wave of up to `transfersInFlight` downloads at once
            let wave = Array(wanted[next..<min(next + Self.transfersInFlight, wanted.count)])
            next += wave.count
            let results = try await withThrowingTaskGroup(of: (String, String, String?).self,
                                                          returning: [(String, String, String?)].self) { group in
                for (id, hash, asset, relative, basis) in wave {
                    let progress = downloadProgress(for: relative)  // status (SyncEngine+Progress.swift)
                    group.addTask {
                        let destination = directory + "/dl-" + UUID().uuidString
                        do {
                            try await self.downloadAsset(asset, to: URL(fileURLWithPath: destination), basis: basis, progress: progress)
                            return (id, hash, destination)
                        } catch {
                            unlink(destination)
                            if error is CancellationError { throw error }
                            logger.debug("prefetch failed; fetched again when applied", metadata: ["ubiquity.id": "\(id)", "ubiquity.error": "\(error)"])
                            return (id, hash, nil)
                        }
                    }
                }
                var results: [(String, String, String?)] = []
                for try await result in group { results.append(result) }
                return results
            }
            for (id, hash, path) in results { if let path { fetched[id] = (path, hash) } }
        }
        memory.prefetched = fetched
    }

    /// Moves the prefetched content of `item` (the same ID and hash) to `temporary` (next to
    /// its target): true when there was one.
    func takePrefetched(_ item: RemoteItem, to temporary: String) -> Bool {
        guard let (staged, hash) = memory.prefetched.removeValue(forKey: item.id) else { return false }
        guard hash == item.contentHash else {
            unlink(staged)
            return false
        }
        if rename(staged, temporary) == 0 { return true }
        defer { unlink(staged) }
        // another file system: a copy
        return (try? FileManager.default.copyItem(atPath: staged, toPath: temporary)) != nil
    }

    /// Removes prefetched contents that were not used.
    func dropPrefetched() {
        for (path, _) in memory.prefetched.values { unlink(path) }
        memory.prefetched = [:]
    }
}
