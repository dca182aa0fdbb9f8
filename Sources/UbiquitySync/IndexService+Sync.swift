// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore
import UbiquityIndex
import UbiquityStore

extension IndexService {
    /// Keeps the index's ubiquitous attributes (is uploaded, is uploading, has unresolved
    /// conflicts, is excluded, downloading status) with sync's state of the item at `path`, so
    /// metadata queries see them. The row may not be indexed yet (a file just downloaded): the
    /// update is retried for a few seconds. Updates of one path apply in order (the last wins).
    public func applySyncStatus(_ status: SyncItemStatus, at path: String) {
        syncStatusApplier.submit(status, at: path)
    }
}

/// The latest sync state per path, applied to the index by one task.
final class SyncStatusApplier: Sendable {
    private struct State {
        var pending: [String: (status: SyncItemStatus, attempts: Int)] = [:]
        var running = false
    }

    private let state = Mutex(State())
    private let host: @Sendable () -> IndexHost

    init(host: @escaping @Sendable () -> IndexHost) {
        self.host = host
    }

    func submit(_ status: SyncItemStatus, at path: String) {
        let start = state.withLock { state -> Bool in
            state.pending[path] = (status, 0)
            defer { state.running = true }
            return !state.running
        }
        if start { Task { await self.drain() } }
    }

    private func drain() async {
        while true {
            let batch = state.withLock { state -> [String: (status: SyncItemStatus, attempts: Int)] in
                let batch = state.pending
                state.pending = [:]
                if batch.isEmpty { state.running = false }
                return batch
            }
            if batch.isEmpty { return }
            var retry: [String: (status: SyncItemStatus, attempts: Int)] = [:]
            for (path, item) in batch {
                let applied = (try? await host().updateUbiquitousAttributes(path: path) { Self.apply(item.status, to: &$0) }) ?? false
                if !applied && item.attempts < 40 { retry[path] = (item.status, item.attempts + 1) }
            }
            if !retry.isEmpty {
                state.withLock { state in
                    for (path, item) in retry where state.pending[path] == nil { state.pending[path] = item }
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    static func apply(_ status: SyncItemStatus, to attributes: inout UbiquitousAttributes) {
        switch status {
        case .uploaded:
            attributes.hasUnresolvedConflicts = false
            attributes.isUploaded = true
            attributes.isUploading = false
            attributes.percentUploaded = 100
            attributes.downloadingStatus = .current
            attributes.isExcludedFromBackup = false
        case .uploading:
            attributes.isUploaded = false
            attributes.isUploading = true
            attributes.percentUploaded = 0
        case .inConflict:
            attributes.hasUnresolvedConflicts = true
            attributes.isUploaded = true
            attributes.isUploading = false
            attributes.downloadingStatus = .current
        case .excluded:
            attributes.isExcludedFromBackup = true
            attributes.isUploaded = false
            attributes.isUploading = false
        }
    }
}

extension IndexService {
    /// Indexes `folder` too (the synced folder, once sync starts there), or rescans it when it
    /// is indexed already (after its content was moved aside for another account).
    public func indexSyncedFolder(_ folder: String) async {
        do {
            if host.roots.contains(folder) {
                _ = try await host.rescan(folder)
            } else {
                try await host.addPermanentRoot(folder)
            }
        } catch {
            logger.error("cannot index the synced folder", metadata: ["ubiquity.root": "\(folder)", "ubiquity.error": "\(error)"])
        }
    }
}
