// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Ubiquity
import UbiquityCore
import UbiquityIndex
import UbiquityCloudKit

/// At most one progress report per item every `interval` (the first and the last always pass).
final class ProgressThrottle: Sendable {
    private let last = Mutex<[String: ContinuousClock.Instant]>([:])
    let interval: Duration

    init(interval: Duration = .milliseconds(250)) {
        self.interval = interval
    }

    /// Whether a report of `fraction` for `path` goes out now.
    func admits(_ path: String, fraction: Double) -> Bool {
        let now = ContinuousClock.now
        return last.withLock { last in
            if fraction >= 1 {
                last[path] = nil
                return true
            }
            if let previous = last[path], now - previous < interval { return false }
            last[path] = now
            return true
        }
    }
}

extension SyncEngine {
    /// Changes the journal's transfer state of `relative` (its index row follows in the same
    /// transaction).
    nonisolated func noteTransfer(_ relative: String, _ change: (inout SyncTransfer) -> Void) {
        do { try journal.updateTransfer(path: relative, change) } catch {
            logger.debug("transfer state not recorded", metadata: ["ubiquity.path": "\(relative)", "ubiquity.error": "\(error)"])
        }
    }

    /// The progress callback of a download of `relative`: percent downloaded, throttled (at
    /// most 4 updates a second per item), in the journal and the index.
    nonisolated func downloadProgress(for relative: String) -> @Sendable (AssetTransferProgress) -> Void {
        let throttle = progressThrottle
        return { [self] progress in
            arrivals.report(relative, progress)  // every report: a reader may wait for these bytes
            let fraction = progress.fractionCompleted
            guard throttle.admits("down:" + relative, fraction: fraction) else { return }
            let percent = min(100, max(0, fraction * 100))
            noteTransfer(relative) { transfer in
                transfer.isDownloading = true
                transfer.percentDownloaded = percent
            }
            progressListeners.withLock { $0[relative] }?(percent)
        }
    }

    /// The progress of an upload of `relative` (a fraction 0…1), throttled like downloads. The
    /// batching upload calls it from its per-record progress.
    nonisolated func noteUploadProgress(_ relative: String, fraction: Double) {
        guard progressThrottle.admits("up:" + relative, fraction: fraction) else { return }
        noteTransfer(relative) { transfer in
            transfer.isUploading = fraction < 1
            transfer.percentUploaded = fraction < 1 ? min(100, max(0, fraction * 100)) : nil
        }
    }

    /// A download of `relative` failed: its error is kept until one succeeds.
    nonisolated func noteDownloadFailed(_ relative: String, _ error: any Error) {
        noteTransfer(relative) { transfer in
            transfer.isDownloading = false
            transfer.percentDownloaded = nil
            transfer.downloadError = Self.message(error)
        }
    }

    /// An upload of `relative` failed: its error is kept until one succeeds.
    nonisolated func noteUploadFailed(_ relative: String, _ error: any Error) {
        noteTransfer(relative) { transfer in
            transfer.isUploading = false
            transfer.percentUploaded = nil
            transfer.uploadError = Self.message(error)
        }
    }

    /// The file of a download is in place at `paths` (relative: its name, and where its stub was
    /// when it was evicted): the stubs there go, durably, before the journal says the file is
    /// here. A stub at its name stands for nothing now; found by the sync simulator (seed 9 of
    /// the power-loss batch: a file written at an evicted file's name, in conflict with an edit
    /// elsewhere, left the stub beside the download). Removed after the journal write and undone
    /// by a power loss, a stub stood beside the downloaded file for good (seed 174); removed
    /// before it, a power loss leaves the file at an evicted item's name, which the next pass
    /// adopts (``settleWrittenOverStub(_:_:item:record:)``).
    func removeStubsDurably(at paths: [String]) throws {
        let removed = Set(paths).filter { Placeholder.removeStub(for: absolute($0)) }
        for folder in Set(removed.map { SyncFiles.parent(of: absolute($0)) }) { try SafeSave.syncDirectory(folder) }
    }

    /// `item` was written here: when it was evicted, it no longer is (its stubs went before the
    /// journal write, ``removeStubsDurably(at:)``); its download is over (a write only when a
    /// transfer state was recorded: a read otherwise, as for most of 1,000 new folders).
    func noteDownloaded(_ item: RemoteItem, evictedAt: String?) throws {
        if evictedAt != nil { try journal.setEvicted(item.id, false) }
        guard try !journal.transfers(among: [item.path]).isEmpty else { return }
        noteTransfer(item.path) { transfer in
            transfer.isDownloading = false
            transfer.percentDownloaded = nil
            transfer.downloadRequested = false
            transfer.downloadError = nil
        }
    }

    /// The uploads of `paths` reached the server: their progress and errors are forgotten (one
    /// read for the batch; a write only for those with a transfer state).
    func noteUploaded(_ paths: [String]) {
        for relative in (try? journal.transfers(among: paths)) ?? [] {
            noteTransfer(relative) { transfer in
                transfer.isUploading = false
                transfer.percentUploaded = nil
                transfer.uploadError = nil
            }
        }
    }

    static func message(_ error: any Error) -> String {
        if let error = error as? UbiquityError { return error.message }
        if let error = error as? CloudKitError { return "\(error)" }
        return "\(error)"
    }
}
