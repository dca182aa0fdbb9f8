// SPDX-License-Identifier: Apache-2.0
import Foundation
import ServiceLifecycle
import Synchronization

/// The developer Console's live request log and telemetry: the last requests of each container
/// (``entriesPerContainer``) and their per-operation figures (``RequestTelemetry``), in memory.
/// ``RecordsAuthMiddleware`` adds every `/database/1/…` request it answers, with the same
/// latency it gives `/metrics`.
///
/// Bounded: at most ``containerLimit`` containers are followed (the one idle longest is
/// forgotten first), since a path may name any container. Pages waiting for new entries
/// (``waitForEntries(container:after:timeout:)``) are woken by the next entry of their
/// container; as a service, the log wakes them all when the server shuts down.
package final class RequestLog: Service, Sendable {
    /// Entries kept per container.
    package static let entriesPerContainer = 500
    /// Containers followed at once.
    package static let containerLimit = 64

    private struct Followed {
        var entries: [LoggedRequest] = []
        var next = 0
        var telemetry = RequestTelemetry()
        var lastUsed: Int64 = 0
    }

    private struct Waiter {
        var container: String
        var continuation: AsyncStream<Void>.Continuation
    }

    private struct State {
        var sequence: Int64 = 0
        var containers: [String: Followed] = [:]
        var waiters: [Int: Waiter] = [:]
        var nextWaiter = 0
        var closed = false
    }

    private let state = Mutex(State())

    /// Makes an empty log.
    package init() {}

    /// Adds an answered request and wakes the pages waiting for its container.
    package func record(_ request: LoggedRequest) {
        let woken: [AsyncStream<Void>.Continuation] = state.withLock { state in
            state.sequence += 1
            var entry = request
            entry.sequence = state.sequence
            var followed = state.containers[entry.container] ?? {
                if state.containers.count >= Self.containerLimit,
                   let idlest = state.containers.min(by: { $0.value.lastUsed < $1.value.lastUsed })?.key {
                    state.containers[idlest] = nil
                }
                return Followed()
            }()
            if followed.entries.count < Self.entriesPerContainer {
                followed.entries.append(entry)
            } else {
                followed.entries[followed.next] = entry
            }
            followed.next = (followed.next + 1) % Self.entriesPerContainer
            followed.telemetry.add(operation: entry.operationName, time: entry.time, nanoseconds: entry.nanoseconds, failed: entry.failed)
            followed.lastUsed = entry.time
            state.containers[entry.container] = followed
            return state.waiters.values.filter { $0.container == entry.container }.map(\.continuation)
        }
        for continuation in woken { continuation.yield() }
    }

    /// The container's entries after `sequence`, newest first, at most `limit`.
    package func entries(container: String, after sequence: Int64 = 0, limit: Int = entriesPerContainer) -> [LoggedRequest] {
        state.withLock { state in
            guard let followed = state.containers[container] else { return [] }
            return Array(followed.entries.filter { $0.sequence > sequence }.sorted { $0.sequence > $1.sequence }.prefix(limit))
        }
    }

    /// The container's per-operation figures over the last five minutes (see ``RequestTelemetry``).
    package func telemetry(container: String, now: Int64) -> [RequestTelemetry.Summary] {
        state.withLock { $0.containers[container]?.telemetry.summaries(now: now) ?? [] }
    }

    /// The container's entries after `sequence`, waiting up to `timeout` for one when there is
    /// none yet (a live page's long poll); empty when none came or the server is shutting down.
    package func waitForEntries(container: String, after sequence: Int64, timeout: Duration) async -> [LoggedRequest] {
        let (stream, continuation) = AsyncStream<Void>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let waiter: Int? = state.withLock { state in
            let newest = state.containers[container].map { $0.entries.map(\.sequence).max() ?? 0 } ?? 0
            guard !state.closed, newest <= sequence else { return nil }
            state.nextWaiter += 1
            state.waiters[state.nextWaiter] = Waiter(container: container, continuation: continuation)
            return state.nextWaiter
        }
        if let waiter {
            await withTaskGroup(of: Void.self) { group in
                group.addTask { for await _ in stream { break } }
                group.addTask { try? await Task.sleep(for: timeout) }
                await group.next()
                group.cancelAll()
            }
            _ = state.withLock { $0.waiters.removeValue(forKey: waiter) }
        }
        continuation.finish()
        return entries(container: container, after: sequence)
    }

    /// Waits for the server's graceful shutdown, then wakes every waiting page.
    package func run() async throws {
        try? await gracefulShutdown()
        let waiting: [AsyncStream<Void>.Continuation] = state.withLock { state in
            state.closed = true
            defer { state.waiters = [:] }
            return state.waiters.values.map(\.continuation)
        }
        for continuation in waiting { continuation.finish() }
    }
}
