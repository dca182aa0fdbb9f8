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
    /// 800,000 wakes all arrive (with the chain, the relay thread's stack overflowed before
    /// 750,000 and the process crashed). Nothing here is timed.
    @Test func theChangeFeedWakesItsConsumerPastWhereTheChainOverflowed() throws {
        let feed = FolderChangeFeed()
        let folder = "/callback-slot-tests/\(UUID().uuidString)"
        feed.open(folder)
        defer { feed.close(folder) }
        let wakes = 800_000
        let woken = Atomic<Int>(0)
        let reached = DispatchSemaphore(value: 0)
        #expect(feed.subscribe(folder) {
            if woken.add(1, ordering: .relaxed).newValue == wakes { reached.signal() }
        })
        for _ in 0..<wakes {
            feed.post(.init(.created, folder + "/a"), in: folder)
            _ = feed.drain(folder)
        }
        // a bound on the wait only (a lost wake-up fails here instead of hanging the suite)
        #expect(reached.wait(timeout: .now() + 120) == .success, "\(woken.load(ordering: .relaxed)) of \(wakes) wakes")
    }
}
