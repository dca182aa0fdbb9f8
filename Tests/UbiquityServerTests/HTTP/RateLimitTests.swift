// SPDX-License-Identifier: Apache-2.0
import AsyncHTTPClient
import Foundation
import Logging
import NIOCore
import NIOHTTP1
import Synchronization
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// The token bucket as a state machine (no clock, no I/O), the bounded limiter over an injected
/// clock, and a server with a tiny limit answering THROTTLED with retryAfter.
@Suite struct RateLimitTests {
    @Test func bucketAllowsBurstsThenRefillsAtTheRate() {
        var bucket = TokenBucket(rate: 2, burst: 3, now: 100)
        #expect(bucket.take(now: 100) == .allowed)
        #expect(bucket.take(now: 100) == .allowed)
        #expect(bucket.take(now: 100) == .allowed)
        #expect(bucket.take(now: 100) == .limited(retryAfter: 0.5))
        // a refused request takes nothing: a quarter second later half a token is there
        #expect(bucket.take(now: 100.25) == .limited(retryAfter: 0.25))
        #expect(bucket.take(now: 100.5) == .allowed)
        #expect(bucket.take(now: 100.5) == .limited(retryAfter: 0.5))
        // a long pause fills it to the burst, no more
        #expect(bucket.isFull(at: 1000))
        #expect(bucket.available(at: 1000) == 3)
        for _ in 0..<3 { #expect(bucket.take(now: 1000) == .allowed) }
        #expect(bucket.take(now: 1000) != .allowed)
        // a clock going backwards adds nothing
        #expect(bucket.take(now: 900) == .limited(retryAfter: 0.5))
    }

    @Test func slowRatesAndTinyBursts() {
        var bucket = TokenBucket(rate: 0.1, burst: 0, now: 0)
        #expect(bucket.burst == 1)
        #expect(bucket.take(now: 0) == .allowed)
        guard case .limited(let wait) = bucket.take(now: 0) else { Issue.record("expected a limit"); return }
        #expect(abs(wait - 10) < 1e-9)
        #expect(RateLimiter.wholeSeconds(wait) == 10)
        #expect(RateLimiter.wholeSeconds(0.01) == 1)
        #expect(RateLimiter.wholeSeconds(1.2) == 2)
    }

    @Test func limiterKeepsCallersApartAndStaysBounded() {
        let time = Mutex<Double>(0)
        let limiter = RateLimiter(rate: 1, burst: 1, maximumCallers: 4, clock: { time.withLock { $0 } })
        #expect(limiter.take("a") == .allowed)
        #expect(limiter.take("a") == .limited(retryAfter: 1))
        #expect(limiter.take("b") == .allowed)
        // many callers: never more than the maximum tracked
        for index in 0..<50 { _ = limiter.take("caller \(index)") }
        #expect(limiter.callerCount <= 4)
        // idle callers (full buckets) are forgotten first, the busy one is kept
        time.withLock { $0 = 10 }
        let busy = RateLimiter(rate: 1, burst: 1, maximumCallers: 3, clock: { time.withLock { $0 } })
        _ = busy.take("idle 1")
        _ = busy.take("idle 2")
        time.withLock { $0 = 20 }
        #expect(busy.take("busy") == .allowed)
        #expect(busy.take("new") == .allowed) // evicts the two idle ones
        #expect(busy.callerCount == 2)
        #expect(busy.take("busy") == .limited(retryAfter: 1))
    }

    @Test(arguments: StoreKind.available)
    func serverAnswersThrottledWithRetryAfter(kind: StoreKind) async throws {
        // one token per 100 s: a loaded machine's pauses between the requests refill nothing
        let server = try await ServerFixture.start(kind, configuration: RecordsServerConfiguration(rateLimit: 0.01, rateLimitBurst: 2))
        defer { Task { await server.stop() } }
        #expect(try await server.send(.GET, "public", "zones/list").status == 200)
        #expect(try await server.send(.GET, "public", "zones/list").status == 200)
        let throttled = try await server.send(.GET, "public", "zones/list")
        #expect(throttled.status == 429)
        #expect(throttled.errorCode == "THROTTLED")
        guard case .integer(let retryAfter)? = throttled.json["retryAfter"] else {
            Issue.record("no integer retryAfter in \(throttled.json)")
            return
        }
        #expect((1...100).contains(retryAfter))
        #expect(throttled.headers["retry-after"] == "\(retryAfter)")
        #expect(throttled.json["uuid"]?.stringValue != nil)
        // another caller has its own bucket
        #expect(try await server.send(.GET, "public", "users/current", token: server.userToken).status == 200)
        // 0 disables the limit
        let open = try await ServerFixture.start(kind, configuration: RecordsServerConfiguration(rateLimit: 0, rateLimitBurst: 1))
        defer { Task { await open.stop() } }
        for _ in 0..<5 { #expect(try await open.send(.GET, "public", "zones/list").status == 200) }
    }
}

/// A store that can be made unavailable, as a PostgreSQL server that went away.
final class SwitchableStore: RecordStore {
    let base: any RecordStore
    let down = Mutex(false)

    init(_ base: any RecordStore) { self.base = base }

    func check() throws {
        if down.withLock({ $0 }) { throw UbiquityError(.serviceUnavailable, "lost the connection to the test store") }
    }

    func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try check()
        return try await base.read(body)
    }

    func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try check()
        return try await base.write(body)
    }

    func close() async throws { try await base.close() }
    var description: String { "switchable \(base.description)" }
}

@Suite struct StoreUnavailableTests {
    @Test func anUnavailableStoreIsTryAgainLaterWithRetryAfter() async throws {
        let (base, cleanup) = try await StoreFixture.make(.sqlite)
        let store = SwitchableStore(base)
        let admin = RecordsAdmin(store: store, passwordHasher: PasswordHasher(cost: 4))
        let apiToken = try await admin.addContainer("iCloud.org.example.Tests")
        var logger = Logger(label: "test.unavailable")
        logger.logLevel = .critical
        let server = RecordsServer(store: store, configuration: RecordsServerConfiguration(unavailableRetryAfter: 7), logger: logger)
        let (stream, continuation) = AsyncStream<String>.makeStream()
        let task = Task { try await server.application { continuation.yield($0) }.run() }
        defer {
            task.cancel()
            Task { try? await cleanup() }
        }
        var iterator = stream.makeAsyncIterator()
        let url = try #require(await iterator.next())
        func get() async throws -> (status: Int, json: JSONValue, retryAfter: String?) {
            let request = HTTPClientRequest(url: "\(url)/database/1/iCloud.org.example.Tests/development/public/zones/list?ckAPIToken=\(ServerFixture.encode(apiToken))")
            let response = try await HTTPClient.shared.execute(request, timeout: .seconds(60))
            let body = try await response.body.collect(upTo: 1 << 20)
            return (Int(response.status.code), (try? JSONValue.parse(Data(body.readableBytesView))) ?? .null, response.headers.first(name: "Retry-After"))
        }
        #expect(try await get().status == 200)
        store.down.withLock { $0 = true }
        let unavailable = try await get()
        #expect(unavailable.status == 503)
        #expect(unavailable.json["serverErrorCode"] == "TRY_AGAIN_LATER")
        #expect(unavailable.json["retryAfter"] == 7)
        #expect(unavailable.retryAfter == "7")
        store.down.withLock { $0 = false }
        #expect(try await get().status == 200)
    }
}
