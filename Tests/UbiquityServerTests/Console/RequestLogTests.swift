// SPDX-License-Identifier: Apache-2.0
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// The Console's request log and telemetry without a server: figures per operation over a
/// window, bounded memory, entries per container, and live pages woken by the next request.
@Suite struct RequestLogTests {
    static func entry(_ container: String = "iCloud.a", _ operation: RecordsOperation? = .recordsModify, time: Int64 = 1_000_000,
                      milliseconds: Int64 = 10, status: Int = 200, error: WireServerErrorCode? = nil) -> LoggedRequest {
        LoggedRequest(time: time, requestID: "r", container: container, environment: .development, scope: .public, operation: operation,
                      status: status, nanoseconds: milliseconds * 1_000_000, errorCode: error)
    }

    @Test func telemetryGivesRatesPercentilesAndErrorsPerOperation() {
        var telemetry = RequestTelemetry()
        // 100 modifies over 100 s, latencies 1…100 ms, every tenth failing; 3 old lookups
        for second in 1...100 {
            telemetry.add(operation: "records/modify", time: Int64(second) * 1000, nanoseconds: Int64(second) * 1_000_000, failed: second % 10 == 0)
        }
        for _ in 0..<3 { telemetry.add(operation: "records/lookup", time: 0, nanoseconds: 5_000_000, failed: false) }
        let summaries = telemetry.summaries(now: 100_000, window: 300_000)
        #expect(summaries.map(\.operation) == ["records/modify", "records/lookup"])
        let modify = summaries[0]
        #expect(modify.requests == 100 && modify.errors == 10 && modify.totalRequests == 100 && modify.totalErrors == 10)
        #expect(modify.p50 == 50 && modify.p99 == 99)
        #expect(abs(modify.requestsPerSecond - 1.0) < 0.01)  // over the 100 s since the first request
        // a window that has passed keeps the totals only
        let later = telemetry.summaries(now: 1_000_000, window: 60_000)
        #expect(later.allSatisfy { $0.requests == 0 && $0.p50 == 0 })
        #expect(later.first { $0.operation == "records/lookup" }?.totalRequests == 3)
    }

    @Test func telemetryKeepsTheLastSamplesOnly() {
        var telemetry = RequestTelemetry()
        let count = RequestTelemetry.samplesPerOperation + 500
        for index in 0..<count {
            // the first 500 are slow; once overwritten they leave the percentiles
            telemetry.add(operation: "records/query", time: 1000, nanoseconds: index < 500 ? 900_000_000 : 1_000_000, failed: false)
        }
        let summary = telemetry.summaries(now: 2000)[0]
        #expect(summary.requests == RequestTelemetry.samplesPerOperation && summary.totalRequests == count)
        #expect(summary.p99 == 1)
    }

    @Test func theLogKeepsEachContainersLatestEntriesWithinItsBounds() {
        let log = RequestLog()
        for index in 0..<(RequestLog.entriesPerContainer + 20) {
            log.record(Self.entry(time: Int64(index), status: index == 0 ? 500 : 200))
        }
        log.record(Self.entry("iCloud.b", .zonesList, status: 421, error: .authenticationRequired))
        let entries = log.entries(container: "iCloud.a")
        #expect(entries.count == RequestLog.entriesPerContainer)
        #expect(entries.first?.sequence == Int64(RequestLog.entriesPerContainer + 20))
        #expect(entries.map(\.sequence) == entries.map(\.sequence).sorted(by: >))
        let other = log.entries(container: "iCloud.b")
        #expect(other.count == 1 && other[0].operationName == "zones/list" && other[0].errorCode == .authenticationRequired && other[0].failed)
        #expect(log.entries(container: "iCloud.a", after: entries[1].sequence).count == 1)
        #expect(log.telemetry(container: "iCloud.a", now: 1000).first?.totalErrors == 1)
        // any number of container names keeps at most containerLimit of them
        for index in 0..<(RequestLog.containerLimit * 2) { log.record(Self.entry("iCloud.flood\(index)", time: 2_000_000 + Int64(index))) }
        #expect(log.entries(container: "iCloud.a").isEmpty)
        #expect(log.entries(container: "iCloud.flood\(RequestLog.containerLimit * 2 - 1)").count == 1)
    }

    @Test func aLivePageIsWokenByItsContainersNextRequest() async throws {
        let log = RequestLog()
        log.record(Self.entry())
        // something newer than `after` is answered at once
        #expect(await log.waitForEntries(container: "iCloud.a", after: 0, timeout: .seconds(30)).count == 1)
        let waiting = Task { await log.waitForEntries(container: "iCloud.a", after: 1, timeout: .seconds(60)) }
        try await Task.sleep(for: .milliseconds(200))
        log.record(Self.entry("iCloud.b"))  // another container's request does not wake it
        log.record(Self.entry("iCloud.a", .recordsQuery))
        let woken = await waiting.value
        #expect(woken.map(\.operationName) == ["records/query"])
        // with nothing new, the wait ends at its timeout, empty
        #expect(await log.waitForEntries(container: "iCloud.a", after: 3, timeout: .milliseconds(100)).isEmpty)
    }
}
