// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing
import UbiquityCore
@testable import UbiquityCloudKit

/// How a record's asset transfers add up to one fraction (no I/O).
@Suite struct RecordUploadProgressTests {
    final class Seen: Sendable {
        let values = Mutex<[Double]>([])
        var all: [Double] { values.withLock { $0 } }
    }

    @Test func filesWeighByTheirSizeAndScanningIsTheFirstHalf() {
        let seen = Seen()
        let progress = RecordUploadProgress(sizes: [300, 100]) { value in seen.values.withLock { $0.append(value) } }
        progress.update(file: 0, AssetTransferProgress(phase: .uploading, completedBytes: 150, totalBytes: 300))
        #expect(seen.all == [150.0 / 400])
        progress.finish(file: 0)
        #expect(seen.all.last == 300.0 / 400)
        // the deduplicating upload: scanning is the first half of the file's share
        progress.update(file: 1, AssetTransferProgress(phase: .scanning, completedBytes: 100, totalBytes: 100))
        #expect(seen.all.last == 350.0 / 400)
        progress.update(file: 1, AssetTransferProgress(phase: .uploading, completedBytes: 50, totalBytes: 100))
        #expect(seen.all.last == 375.0 / 400)
        progress.finish(file: 1)
        #expect(seen.all.last == 1)
        progress.finish(file: 1)
        #expect(seen.all.filter { $0 == 1 }.count == 1)
    }

    @Test func neverBackwardsAndEmptyFilesEnd() {
        let seen = Seen()
        let progress = RecordUploadProgress(sizes: [0, 1000]) { value in seen.values.withLock { $0.append(value) } }
        progress.update(file: 1, AssetTransferProgress(phase: .uploading, completedBytes: 800, totalBytes: 1000))
        // a resumed upload starts again from where the server stopped: not reported as a step back
        progress.update(file: 1, AssetTransferProgress(phase: .uploading, completedBytes: 500, totalBytes: 1000))
        // tiny moves are not reported
        progress.update(file: 1, AssetTransferProgress(phase: .uploading, completedBytes: 800, totalBytes: 1000))
        #expect(seen.all.count == 1)
        progress.finish(file: 1)
        #expect(seen.all.last! < 1)
        progress.finish(file: 0)
        #expect(seen.all.last == 1)
        #expect(zip(seen.all, seen.all.dropFirst()).allSatisfy { $0 <= $1 })
    }
}
