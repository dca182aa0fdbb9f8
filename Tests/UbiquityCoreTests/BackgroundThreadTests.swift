// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import Testing
@testable import UbiquityCore

/// The indexer's thread: jobs run one at a time in the order queued, 10 nice steps below the
/// thread that made it (whose own value stays as it was), and stopping lets the queued ones
/// finish first.
@Suite struct BackgroundThreadTests {
    @Test func jobsRunInOrderAtTheNiceValueAskedForAndStopAfterTheQueuedOnes() async throws {
        let before = BackgroundThread.currentThreadNice
        let thread = BackgroundThread(name: "test.background", nice: 10)
        let seen = Mutex<[Int]>([])
        let nice = Mutex<Int32?>(nil)
        for index in 0..<100 {
            thread.async {
                seen.withLock { $0.append(index) }
                if index == 0 { nice.withLock { $0 = BackgroundThread.currentThreadNice } }
            }
        }
        thread.stop()
        thread.async { seen.withLock { $0.append(-1) } }  // after stop: ignored
        let deadline = ContinuousClock.now + .seconds(10)
        while seen.withLock({ $0.count }) < 100 && ContinuousClock.now < deadline { try await Task.sleep(for: .milliseconds(5)) }
        try await Task.sleep(for: .milliseconds(50))
        #expect(seen.withLock { $0 } == Array(0..<100))
        // 10 steps below this thread (at most 19)
        #expect(nice.withLock { $0 } == min(before + 10, 19))
        #expect(BackgroundThread.currentThreadNice == before)
    }
}
