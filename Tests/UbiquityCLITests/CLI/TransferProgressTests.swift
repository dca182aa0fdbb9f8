// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityTestSupport
@testable import ubiq

/// The progress line of long transfers, as a value: what it says and when it is redrawn (the
/// times are given, never read from a clock).
struct TransferProgressTests {
    @Test func theLineHasTheBarBytesRateAndTimeLeft() {
        var progress = TransferProgress(name: "movie.bin", total: 10_000_000, start: 100)
        let first = progress.update(done: 0, now: 100)
        #expect(first?.hasPrefix("movie.bin  [                    ] 0%") == true, "\(first ?? "")")
        #expect(progress.update(done: 1_000_000, now: 100.05) == nil, "not redrawn within a tenth of a second")
        let half = progress.update(done: 5_000_000, now: 102)
        #expect(half == "movie.bin  [##########          ] 50%  5 MB / 10 MB  2.5 MB/s  2s left", "\(half ?? "")")
        let done = progress.update(done: 10_000_000, now: 102.01)
        #expect(done?.contains("100%") == true && done?.contains("left") == false, "the last byte is always drawn: \(done ?? "")")
    }

    @Test func anUnknownTotalShowsBytesAndRateOnly() {
        var progress = TransferProgress(name: "stdin", total: 0, start: 0)
        #expect(progress.update(done: 3_000_000, now: 1) == "stdin  3 MB  3 MB/s")
    }

    @Test func durationsReadAsPeopleSayThem() {
        #expect(TransferProgress.duration(0.2) == "1s")
        #expect(TransferProgress.duration(185) == "3m 05s")
        #expect(TransferProgress.duration(7_900) == "2h 11m")
        #expect(TransferProgress.duration(.infinity) == "?")
    }
}
