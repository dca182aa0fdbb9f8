// SPDX-License-Identifier: Apache-2.0
import Testing
import UbiquityServer

/// Nextcloud's thinning schedule, as a value: which versions stay at which ages.
@Suite struct VersionThinningTests {
    let thinning = VersionThinning.nextcloud
    let second: Int64 = 1000

    /// The times kept of `times` at `now`.
    func kept(_ times: [Int64], now: Int64) -> [Int64] {
        let dropped = Set(thinning.dropped(savedAt: times, now: now))
        return times.indices.filter { !dropped.contains($0) }.map { times[$0] }.sorted()
    }

    @Test func everyVersionOfTheLastTenSecondsStays() {
        let now: Int64 = 1_000_000
        let times = (0..<10).map { now - Int64($0) * second }
        #expect(kept(times, now: now) == times.sorted())
    }

    @Test func oneVersionPerTenSecondsForTheFirstMinute() {
        let now: Int64 = 10_000_000
        // one a second from 11 s to 59 s ago: one per 10 s stays
        let times = (11..<60).map { now - Int64($0) * second }
        let kept = kept(times, now: now)
        #expect(kept.count >= 4 && kept.count <= 6, "\(kept.count)")
        for (older, newer) in zip(kept, kept.dropFirst()) { #expect(newer - older >= 10 * second) }
    }

    @Test func onePerMinuteHourDayThenWeek() {
        let now: Int64 = 400 * 86_400_000
        let minute: Int64 = 60 * second, hour = 60 * minute, day = 24 * hour
        // every 10 s over the second to the fifth minute: one per minute stays
        let minutes = stride(from: 2 * minute, to: 5 * minute, by: Int(10 * second)).map { now - $0 }
        #expect(kept(minutes, now: now).count == 3)
        // every 5 minutes from 2 to 10 hours ago: one per hour
        let hours = stride(from: 2 * hour, to: 10 * hour, by: Int(5 * minute)).map { now - $0 }
        #expect(kept(hours, now: now).count == 8)
        // every hour from 2 to 9 days ago: one per day
        let days = stride(from: 2 * day, to: 9 * day, by: Int(hour)).map { now - $0 }
        #expect(kept(days, now: now).count == 7)
        // every day from 40 to 110 days ago: one per week
        let weeks = stride(from: 40 * day, to: 110 * day, by: Int(day)).map { now - $0 }
        #expect(kept(weeks, now: now).count == 10)
    }

    @Test func theNewestIsAlwaysKept() {
        let now: Int64 = 400 * 86_400_000
        let times: [Int64] = [now - 100 * 86_400_000, now - 100 * 86_400_000 + 1, now - 100 * 86_400_000 + 2]
        #expect(kept(times, now: now) == [times[2]])
        #expect(thinning.dropped(savedAt: [], now: now).isEmpty)
        #expect(thinning.dropped(savedAt: [now - 1], now: now).isEmpty)
    }
}
