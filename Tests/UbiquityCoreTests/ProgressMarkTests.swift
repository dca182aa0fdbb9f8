// SPDX-License-Identifier: Apache-2.0
import Testing
@testable import UbiquityCore

@Suite struct ProgressMarkTests {
    @Test func aReachedMarkReturnsAtOnce() async {
        let mark = ProgressMark()
        mark.advance(to: 5)
        #expect(await mark.wait(until: 5, timeout: .seconds(30)))
        #expect(await mark.wait(until: 0, timeout: .seconds(30)))
    }

    @Test func waitersResumeWhenTheirMarkIsReachedAndNotBefore() async {
        let mark = ProgressMark()
        async let low = mark.wait(until: 2, timeout: .seconds(30))
        async let high = mark.wait(until: 10, timeout: .seconds(30))
        while mark.waiting < 2 { await Task.yield() }
        mark.advance(to: 3)
        #expect(await low)
        #expect(mark.waiting == 1)
        mark.advance(to: 1)  // lower: nothing changes
        #expect(mark.value == 3)
        mark.increment()
        #expect(mark.value == 4)
        mark.advance(to: 10)
        #expect(await high)
        #expect(mark.waiting == 0)
    }

    @Test func aTimeOutReturnsFalseAndForgetsTheWaiter() async {
        let mark = ProgressMark()
        #expect(await mark.wait(until: 1, timeout: .milliseconds(20)) == false)
        #expect(mark.waiting == 0)
    }

    @Test func cancellationReturnsFalse() async {
        let mark = ProgressMark()
        let task = Task { await mark.wait(until: 1, timeout: .seconds(600)) }
        while mark.waiting < 1 { await Task.yield() }
        task.cancel()
        #expect(await task.value == false)
        #expect(mark.waiting == 0)
    }

    @Test func incrementsAtOnceAreEachCounted() async {
        let mark = ProgressMark()
        await withTaskGroup(of: Void.self) { group in
            for _ in 0..<200 { group.addTask { mark.increment() } }
        }
        #expect(mark.value == 200)
    }
}
