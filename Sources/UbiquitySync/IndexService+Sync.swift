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
        syncStatusApplier.submit(SyncStatusApplier.Change(status: status), at: path)
    }

    /// Keeps the index's downloading status, is downloading, percent downloaded and (while an
    /// upload runs) percent uploaded with an item's transfer state.
    public func applyTransfer(_ state: ItemSyncState, at path: String) {
        syncStatusApplier.submit(SyncStatusApplier.Change(transfer: state), at: path)
    }
}

/// The latest sync state per path, applied to the index by one task.
final class SyncStatusApplier: Sendable {
    /// What to apply to one path: the sync state, then the transfer state (each the latest).
    struct Change: Sendable {
        var status: SyncItemStatus?
        var transfer: ItemSyncState?

        /// `self` followed by `later`.
        func merged(with later: Change) -> Change {
            Change(status: later.status ?? status, transfer: later.transfer ?? transfer)
        }
    }

    private struct State {
        var pending: [String: (change: Change, attempts: Int)] = [:]
        var running = false
    }

    /// Paths updated per index transaction at most.
    static let chunk = 500

    private let state = Mutex(State())
    private let host: @Sendable () -> IndexHost

    init(host: @escaping @Sendable () -> IndexHost) {
        self.host = host
    }

    func submit(_ change: Change, at path: String) {
        let start = state.withLock { state -> Bool in
            let merged = state.pending[path].map { $0.change.merged(with: change) } ?? change
            state.pending[path] = (merged, 0)
            defer { state.running = true }
            return !state.running
        }
        if start {
            Task {
                // a short gathering time: an upload's "uploading" and "uploaded" of a small file
                // merge into one write, the states of a batch of files go in one transaction,
                // and a file just written is usually indexed by then (no retry)
                try? await Task.sleep(for: Self.gathering)
                await self.drain()
            }
        }
    }

    /// How long the first state waits for the others before they are applied.
    static let gathering: Duration = .milliseconds(50)

    private func drain() async {
        while true {
            let batch = state.withLock { state -> [String: (change: Change, attempts: Int)] in
                let batch = state.pending
                state.pending = [:]
                if batch.isEmpty { state.running = false }
                return batch
            }
            if batch.isEmpty { return }
            // one index transaction per `chunk` paths (a pass's states arrive together)
            var retry: [String: (change: Change, attempts: Int)] = [:]
            let items = Array(batch)
            var start = 0
            while start < items.count {
                let chunk = items[start..<min(start + Self.chunk, items.count)]
                start += chunk.count
                let changes = chunk.map { path, item -> (path: String, change: @Sendable (inout UbiquitousAttributes) -> Void) in
                    let change = item.change
                    return (path, { attributes in
                        if let status = change.status { Self.apply(status, to: &attributes) }
                        if let transfer = change.transfer { Self.apply(transfer, to: &attributes) }
                    })
                }
                let missing = Set((try? await host().updateUbiquitousAttributes(changes)) ?? chunk.map(\.key))
                for (path, item) in chunk where missing.contains(path) && item.attempts < 40 {
                    retry[path] = (item.change, item.attempts + 1)
                }
            }
            if !retry.isEmpty {
                state.withLock { state in
                    for (path, item) in retry { state.pending[path] = state.pending[path].map { (item.change.merged(with: $0.change), $0.attempts) } ?? item }
                }
                try? await Task.sleep(for: .milliseconds(100))
            }
        }
    }

    static func apply(_ transfer: ItemSyncState, to attributes: inout UbiquitousAttributes) {
        attributes.downloadingStatus = transfer.downloadingStatus
        attributes.uploadingError = transfer.uploadError
        attributes.downloadingError = transfer.downloadError
        attributes.isDownloading = transfer.isDownloading
        attributes.percentDownloaded = transfer.percentDownloaded ?? (transfer.downloadingStatus == .notDownloaded ? 0 : 100)
        if transfer.isUploading {
            attributes.isUploading = true
            attributes.percentUploaded = transfer.percentUploaded ?? 0
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

extension IndexService {
    /// Answers the control socket's sync requests (`evict`, `download`, `item`) with `handler`
    /// (the daemon's folder sync); without one they fail with `serviceUnavailable`.
    public func setSyncRequests(_ handler: @escaping ControlService.SyncRequestHandler) {
        control.setSyncRequests(handler)
    }
}
