// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The recent requests of one container, per operation, and what the Console's telemetry shows
/// of them: requests per second, median and 99th-percentile latency, errors. A value without
/// I/O: ``RequestLog`` keeps one per container and adds every request it logs.
package struct RequestTelemetry: Sendable {
    /// A request's time (ms), latency and outcome.
    struct Sample: Sendable, Hashable {
        var time: Int64
        var nanoseconds: Int64
        var failed: Bool
    }

    /// The last samples of one operation, oldest overwritten first, and its totals.
    struct Operation: Sendable {
        var samples: [Sample] = []
        var next = 0
        var requests = 0
        var errors = 0
    }

    /// What one operation did within the window.
    package struct Summary: Sendable, Hashable {
        /// The operation (``LoggedRequest/operationName``).
        package var operation: String
        /// Requests within the window, and per second over it.
        package var requests: Int
        package var requestsPerSecond: Double
        /// Latency percentiles (milliseconds) of those requests (nearest rank).
        package var p50: Double
        package var p99: Double
        /// Failed requests within the window.
        package var errors: Int
        /// Since the server started.
        package var totalRequests: Int
        package var totalErrors: Int
    }

    /// Samples kept per operation (older ones leave the percentiles).
    package static let samplesPerOperation = 2048

    private var operations: [String: Operation] = [:]
    /// When the first request was added (ms): the rate's window is never longer than that.
    private var since: Int64?

    /// Makes an empty record.
    package init() {}

    /// Adds a request.
    package mutating func add(operation: String, time: Int64, nanoseconds: Int64, failed: Bool) {
        since = since.map { min($0, time) } ?? time
        var entry = operations[operation] ?? Operation()
        let sample = Sample(time: time, nanoseconds: nanoseconds, failed: failed)
        if entry.samples.count < Self.samplesPerOperation {
            entry.samples.append(sample)
        } else {
            entry.samples[entry.next] = sample
        }
        entry.next = (entry.next + 1) % Self.samplesPerOperation
        entry.requests += 1
        if failed { entry.errors += 1 }
        operations[operation] = entry
    }

    /// Each operation's figures over the `window` milliseconds before `now` (over the time since
    /// the first request when that is shorter), busiest first.
    package func summaries(now: Int64, window: Int64 = 300_000) -> [Summary] {
        let start = now - window
        let seconds = Double(max(1000, min(window, now - (since ?? now)))) / 1000
        return operations.map { name, entry in
            let recent = entry.samples.filter { $0.time > start && $0.time <= now }
            let latencies = recent.map(\.nanoseconds).sorted()
            return Summary(operation: name, requests: recent.count, requestsPerSecond: Double(recent.count) / seconds,
                           p50: Self.percentile(0.5, of: latencies), p99: Self.percentile(0.99, of: latencies),
                           errors: recent.count(where: \.failed), totalRequests: entry.requests, totalErrors: entry.errors)
        }.sorted { ($0.requests, $0.totalRequests, $1.operation) > ($1.requests, $1.totalRequests, $0.operation) }
    }

    /// The nearest-rank percentile `q` of sorted nanoseconds, in milliseconds (0 when empty).
    static func percentile(_ q: Double, of sorted: [Int64]) -> Double {
        guard !sorted.isEmpty else { return 0 }
        let rank = Int((q * Double(sorted.count)).rounded(.up))
        return Double(sorted[min(sorted.count, max(1, rank)) - 1]) / 1_000_000
    }
}
