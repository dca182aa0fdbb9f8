// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

/// The on-demand downloads that readers follow as their bytes arrive (the mounted folder's
/// reads of an evicted file), by the item's relative path: one arrival per download, shared
/// by every reader of it, fed from the download's progress reports.
final class DownloadArrivals: Sendable {
    private let arrivals = Mutex<[String: ByteArrival]>([:])

    /// The arrival of `relative`'s download, and whether it is new (then the caller starts
    /// the download and ends it with ``end(_:)``).
    func begin(_ relative: String) -> (arrival: ByteArrival, isNew: Bool) {
        arrivals.withLock { arrivals in
            if let arrival = arrivals[relative] { return (arrival, false) }
            let arrival = ByteArrival()
            arrivals[relative] = arrival
            return (arrival, true)
        }
    }

    /// Tells `relative`'s readers (if any) what a progress report of its download says: the
    /// bytes of a download written in order are readable as they arrive.
    func report(_ relative: String, _ progress: AssetTransferProgress) {
        guard let file = progress.prefixFile, let arrival = arrivals.withLock({ $0[relative] }) else { return }
        arrival.advance(file: file.path, available: progress.completedBytes, total: progress.totalBytes)
    }

    /// Readers of `relative` far ahead of its download may fetch their bytes with `reader`.
    func offerRanges(_ relative: String, _ reader: @escaping ByteArrival.RangeReader) {
        arrivals.withLock { $0[relative] }?.offerRanges(reader)
    }

    /// `relative`'s download ended: finished, or failed with `errorNumber`.
    func end(_ relative: String, failure errorNumber: Int32?) {
        guard let arrival = arrivals.withLock({ $0.removeValue(forKey: relative) }) else { return }
        if let errorNumber { arrival.fail(errorNumber) } else { arrival.finish() }
    }
}
