// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing
import UbiquityCore

/// `AsyncTurns`: one body at a time, each body runs whole, a failing body passes the turn on.
@Suite struct AsyncTurnsTests {
    final class Counters: Sendable {
        let state = Mutex((inside: 0, most: 0, done: 0))
    }

    @Test func oneAtATime() async throws {
        let turns = AsyncTurns()
        let counters = Counters()
        try await withThrowingTaskGroup(of: Void.self) { group in
            for _ in 0..<20 {
                group.addTask {
                    try await turns.run {
                        counters.state.withLock { $0.inside += 1; $0.most = max($0.most, $0.inside) }
                        try await Task.sleep(for: .milliseconds(1))
                        counters.state.withLock { $0.inside -= 1; $0.done += 1 }
                    }
                }
            }
            try await group.waitForAll()
        }
        #expect(counters.state.withLock { $0.most } == 1)
        #expect(counters.state.withLock { $0.done } == 20)
        #expect(!turns.isHeld)
    }

    @Test func aFailingBodyPassesTheTurnOn() async {
        struct Failure: Error {}
        let turns = AsyncTurns()
        await #expect(throws: Failure.self) { try await turns.run { throw Failure() } }
        #expect(!turns.isHeld)
        #expect(await turns.run { 7 } == 7)
    }
}
