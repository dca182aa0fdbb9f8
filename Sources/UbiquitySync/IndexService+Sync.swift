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
    /// update is retried for up to ~50 s. Updates of one path apply in order (the last wins).
    package func applySyncStatus(_ status: SyncItemStatus, at path: String) {
        syncStatusApplier.submit(SyncStatusApplier.Change(status: status), at: path)
    }

    /// Keeps the index's downloading status, is downloading, percent downloaded and (while an
    /// upload runs) percent uploaded with an item's transfer state.
    package func applyTransfer(_ state: ItemSyncState, at path: String) {
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

    /// A path's change waiting to be applied: how often its row was missing, and when it is
    /// tried again (nil: at once).
    private struct Entry {
        var change: Change
        var attempts = 0
        var due: ContinuousClock.Instant?
    }

    private struct State {
        var pending: [String: Entry] = [:]
        var running = false
    }

    /// Paths updated per index transaction at most.
    static let chunk = 500
    /// How long the first state waits for the others before they are applied.
    static let gathering: Duration = .milliseconds(50)
    /// How often a path whose row is not indexed is tried, at most: after 0.1, 0.2, 0.4, 0.8 s,
    /// then every 1.6 s, about 50 s in all (the indexer runs at a lower priority than sync and
    /// may be behind by thousands of new files while the cores are busy).
    static let attempts = 34

    private let state = Mutex(State())
    private let host: @Sendable () -> IndexHost
    private let clock = ContinuousClock()

    private let uploadingGrace: Duration

    init(host: @escaping @Sendable () -> IndexHost, uploadingGrace: Duration = SyncStatusApplier.defaultUploadingGrace) {
        self.host = host
        self.uploadingGrace = uploadingGrace
    }

    /// How long an upload's "uploading" state waits for its "uploaded" before it is written:
    /// a small file's upload then makes one index write instead of two (10,000 new files made
    /// 20,000 writes, ~10 % of the sender's CPU). A transfer's progress is written at once.
    static let defaultUploadingGrace: Duration = .milliseconds(500)

    func submit(_ change: Change, at path: String) {
        let now = clock.now
        let start = state.withLock { state -> Bool in
            let earlier = state.pending[path]
            let merged = earlier.map { $0.change.merged(with: change) } ?? change
            // only "uploading" so far: it waits (keeping the wait it has) for what follows
            let waits = merged.status == .uploading && merged.transfer == nil
            state.pending[path] = Entry(change: merged, due: waits ? (earlier?.due ?? now.advanced(by: uploadingGrace)) : nil)
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

    /// The delay before attempt `attempts + 1` of a path whose row was missing.
    static func backoff(after attempts: Int) -> Duration {
        .milliseconds(100 << min(max(attempts - 1, 0), 4))
    }

    private func drain() async {
        while true {
            let now = clock.now
            // the changes due now; else when the next one is due (nil: nothing left)
            let (batch, next) = state.withLock { state -> ([String: Entry], ContinuousClock.Instant?) in
                var batch: [String: Entry] = [:]
                var next: ContinuousClock.Instant?
                for (path, entry) in state.pending {
                    if let due = entry.due, due > now {
                        next = min(next ?? due, due)
                    } else {
                        batch[path] = entry
                    }
                }
                for path in batch.keys { state.pending[path] = nil }
                if batch.isEmpty && next == nil { state.running = false }
                return (batch, next)
            }
            if batch.isEmpty {
                guard let next else { return }
                // in slices of the gathering time, so a new state does not wait for a retry
                try? await Task.sleep(until: min(next, now.advanced(by: Self.gathering)), clock: clock)
                continue
            }
            // one index transaction per `chunk` paths (a pass's states arrive together)
            var retry: [String: Entry] = [:]
            let items = Array(batch)
            var start = 0
            while start < items.count {
                let chunk = items[start..<min(start + Self.chunk, items.count)]
                start += chunk.count
                let changes = chunk.map { path, entry -> (path: String, change: @Sendable (inout UbiquitousAttributes) -> Void) in
                    let change = entry.change
                    return (path, { attributes in
                        if let status = change.status { Self.apply(status, to: &attributes) }
                        if let transfer = change.transfer { Self.apply(transfer, to: &attributes) }
                    })
                }
                let missing = Set((try? await host().updateUbiquitousAttributes(changes)) ?? chunk.map(\.key))
                for (path, entry) in chunk where missing.contains(path) && entry.attempts + 1 < Self.attempts {
                    retry[path] = Entry(change: entry.change, attempts: entry.attempts + 1,
                                        due: clock.now.advanced(by: Self.backoff(after: entry.attempts + 1)))
                }
            }
            if !retry.isEmpty {
                state.withLock { state in
                    // a newer change of the path (submitted meanwhile) is applied after the retried one
                    for (path, entry) in retry {
                        if let newer = state.pending[path] {
                            state.pending[path] = Entry(change: entry.change.merged(with: newer.change))
                        } else {
                            state.pending[path] = entry
                        }
                    }
                }
            }
            // what arrives meanwhile goes in the next round's transaction (a stream of states —
            // 10,000 files uploaded, or written — makes one write per gathering time, not one
            // per state or two)
            try? await Task.sleep(for: Self.gathering)
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
        case .unknown:
            break
        }
    }
}

extension IndexService {
    /// Indexes `folder` too (the synced folder, once sync starts there), or rescans it when it
    /// is indexed already (after its content was moved aside for another account).
    package func indexSyncedFolder(_ folder: String) async {
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
    package func setSyncRequests(_ handler: @escaping ControlService.SyncRequestHandler) {
        control.setSyncRequests(handler)
    }

    /// Sets who tells the folder sync's health in the control socket's `status`.
    package func setSyncHealth(_ provider: @escaping @Sendable () async -> SyncHealthReport?) {
        control.setSyncHealth(provider)
    }
}
