// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Synchronization
import Testing
import UbiquityCore

/// A callback behind a lock is read as it was stored, however often it is read: a
/// `Mutex<(@Sendable () -> Void)?>` wrapped it in two more reabstraction thunks per read, so
/// each call walked a chain as long as the calls before it, and the stack overflowed past about
/// 700,000 (the mounted folder's change feed wakes its consumer once per change).
@Suite struct CallbackSlotTests {
    @Test func readingACallbackAMillionTimesCallsItAMillionTimes() {
        let calls = Atomic<Int>(0)
        let slot = Mutex(CallbackSlot<@Sendable () -> Void>())
        slot.withLock { $0.callback = { calls.add(1, ordering: .relaxed) } }
        for _ in 0..<1_000_000 { slot.withLock { $0.callback }?() }
        #expect(calls.load(ordering: .relaxed) == 1_000_000)
    }

    @Test func anAsyncCallbackStaysAsCheapAsItWas() async {
        let calls = Atomic<Int>(0)
        let slot = Mutex(CallbackSlot<@Sendable (Int) async -> Void>())
        slot.withLock { $0.callback = { calls.add($0, ordering: .relaxed) } }
        for _ in 0..<200_000 { await slot.withLock({ $0.callback })?(1) }
        #expect(calls.load(ordering: .relaxed) == 200_000)
    }

    /// The change feed's relay wakes its consumer once per change that lands in an empty queue:
    /// the last of four runs of 50,000 wakes costs about what the first did (with the chain, it
    /// cost seven times as much). A ratio of the same run's own times, never a time.
    @Test func theChangeFeedsWakeUpCostsTheSameAfterManyWakes() throws {
        let feed = FolderChangeFeed()
        let folder = "/callback-slot-tests/\(UUID().uuidString)"
        feed.open(folder)
        defer { feed.close(folder) }
        let woken = Atomic<Int>(0)
        let reached = DispatchSemaphore(value: 0)
        let target = Atomic<Int>(0)
        #expect(feed.subscribe(folder) {
            if woken.add(1, ordering: .relaxed).newValue == target.load(ordering: .relaxed) { reached.signal() }
        })
        let batch = 50_000
        var seconds: [Double] = []
        for round in 1...4 {
            target.store(round * batch, ordering: .relaxed)
            let start = ContinuousClock.now
            for _ in 0..<batch {
                feed.post(.init(.created, folder + "/a"), in: folder)
                _ = feed.drain(folder)
            }
            #expect(reached.wait(timeout: .now() + 60) == .success, "round \(round): \(woken.load(ordering: .relaxed)) wakes")
            let elapsed = start.duration(to: .now)
            seconds.append(Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18)
        }
        #expect(seconds[3] < 4 * seconds[0], "50,000 wakes: \(seconds) s")
    }
}
