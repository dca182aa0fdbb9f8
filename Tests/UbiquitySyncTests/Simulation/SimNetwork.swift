// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCloudKit
import UbiquityCore

/// A fault the simulated network puts on one request.
enum SimFault: String, CaseIterable, Sendable {
    /// Never reaches the server: `networkUnavailable`.
    case unreachable
    /// Reaches the server, which acts on it; the answer is lost: `networkFailure`.
    case lostResponse
    /// Reaches the server twice (a retransmission); the device gets the second answer.
    case duplicated
    /// Refused for now: HTTP 429 `THROTTLED` with a `retryAfter`.
    case throttled
    /// Refused for now: HTTP 503 `TRY_AGAIN_LATER`.
    case unavailable
    /// Fails on the server's side: HTTP 500 `INTERNAL_ERROR`.
    case internalError
    /// Takes longer than the device waits: the server acts on it later, the device sees a
    /// time-out now (`networkFailure`), and the request arrives after the next one
    /// (reordered).
    case delayed
}

/// One device's network in the simulator: each request goes to the real server on loopback,
/// through the fault the run's seed picks for it (by the device's request count, not by wall
/// time), and may pause there so that the world acts in the middle of a pass (``SimGate``).
/// A crash point makes this request and every later one fail as the device dies.
final class SimNetwork: CloudKitTransport {
    struct State {
        /// Requests sent so far (the fault plan's clock).
        var count = 0
        /// ``count`` when the pass being run started (crash and pause points count from it).
        var passStart = 0
        /// Requests sent so far, by operation (`records/modify`, …): the fault plan's clocks.
        var operations: [String: Int] = [:]
        /// The share of requests that get a fault.
        var faultRate = 0.0
        /// The request of this pass at which the device dies.
        var crashAt: Int?
        /// Whether the device is dead: requests fail until it restarts.
        var dead = false
        /// The request of this pass at which it pauses for the world.
        var pauseAt: Int?
        /// A delayed request, sent just before the next one.
        var delayed: CloudKitHTTPRequest?
        /// Faults put on requests, by kind.
        var faults: [SimFault: Int] = [:]
        /// Seconds of `retryAfter` asked for (virtual time: nobody waits them).
        var retryAfterSeconds = 0
    }

    private let inner = HTTPClientTransport()
    private let seed: UInt64
    let state = Mutex(State())
    let gate = SimGate()

    init(seed: UInt64) { self.seed = seed }

    func send(_ request: CloudKitHTTPRequest) async throws -> CloudKitHTTPResponse {
        let operation = request.path.split(separator: "/").suffix(2).joined(separator: "/")
        let (number, fault, pause, late) = state.withLock { state -> (Int, SimFault?, Bool, CloudKitHTTPRequest?) in
            state.count += 1
            // the fault is the seed's for the n-th request of this operation: requests of other
            // operations sent at the same time (a pass's parallel work) do not move it
            state.operations[operation, default: 0] += 1
            var key = Self.stableHash(operation)
            key ^= UInt64(state.operations[operation, default: 0]) &* 0x9E37_79B9_7F4A_7C15
            var generator = SeededRandom(seed: seed ^ key)
            let roll = Double(generator.next() % 10_000) / 10_000
            let fault = state.dead || roll >= state.faultRate ? nil : SimFault.allCases[Int(generator.next() % UInt64(SimFault.allCases.count))]
            if let fault { state.faults[fault, default: 0] += 1 }
            let inPass = state.count - state.passStart
            if state.crashAt == inPass { state.dead = true }
            let late = state.delayed
            state.delayed = nil
            return (inPass, fault, state.pauseAt == inPass, late)
        }
        if state.withLock({ $0.dead }) { throw CancellationError() }  // a dead device sends nothing
        if pause { await gate.pause(request: number) }
        if let late { _ = try? await inner.send(late) }  // the late one lands now, after its successor was made
        switch fault {
        case nil:
            return try await inner.send(request)
        case .unreachable:
            throw CloudKitError(.networkUnavailable, "simulated: the server cannot be reached")
        case .lostResponse:
            _ = try? await inner.send(request)
            throw CloudKitError(.networkFailure, "simulated: the connection dropped before the answer")
        case .duplicated:
            _ = try? await inner.send(request)
            return try await inner.send(request)
        case .throttled:
            state.withLock { $0.retryAfterSeconds += 3 }
            return Self.refusal(429, "THROTTLED", retryAfter: 3)
        case .unavailable:
            state.withLock { $0.retryAfterSeconds += 1 }
            return Self.refusal(503, "TRY_AGAIN_LATER", retryAfter: 1)
        case .internalError:
            return Self.refusal(500, "INTERNAL_ERROR", retryAfter: nil)
        case .delayed:
            state.withLock { $0.delayed = request }
            throw CloudKitError(.networkFailure, "simulated: the request timed out")
        }
    }

    /// FNV-1a of `text`'s bytes: the same in every process (Swift's `Hasher` is seeded per
    /// process, so it cannot key a plan a seed replays).
    static func stableHash(_ text: String) -> UInt64 {
        text.utf8.reduce(0xcbf2_9ce4_8422_2325) { ($0 ^ UInt64($1)) &* 0x100_0000_01b3 }
    }

    /// A CloudKit error answer.
    static func refusal(_ status: Int, _ code: String, retryAfter: Int?) -> CloudKitHTTPResponse {
        let after = retryAfter.map { #","retryAfter":\#($0)"# } ?? ""
        return CloudKitHTTPResponse(status: status, headers: ["content-type": "application/json"],
                                    body: Data(#"{"serverErrorCode":"\#(code)","reason":"simulated"\#(after),"uuid":"sim"}"#.utf8))
    }

    /// Sends a delayed request that is still held (before the device goes quiet).
    func flush() async {
        guard let late = state.withLock({ value in defer { value.delayed = nil }; return value.delayed }) else { return }
        _ = try? await inner.send(late)
    }
}

/// What the world hears of a pass it runs.
enum SimPassEvent: Sendable {
    /// The pass waits at the device's network (request number).
    case paused(Int)
    /// The pass ended: nil, or its error.
    case finished((any Error)?)
}

/// Where a pass waits while the world acts: the device's network holds one request until the
/// world lets it go, and tells the pass's listener.
final class SimGate: Sendable {
    private struct State {
        var waiting: CheckedContinuation<Void, Never>?
        var listener: AsyncStream<SimPassEvent>.Continuation?
    }
    private let state = Mutex(State())

    /// Who hears of the next pauses (the pass being run), or nobody.
    func listen(_ listener: AsyncStream<SimPassEvent>.Continuation?) {
        state.withLock { $0.listener = listener }
    }

    /// Called by the network: tells the listener and waits for ``resume()`` (at once without one).
    func pause(request: Int) async {
        await withCheckedContinuation { continuation in
            let told = state.withLock { state -> Bool in
                guard let listener = state.listener else { return false }
                state.waiting = continuation
                listener.yield(.paused(request))
                return true
            }
            if !told { continuation.resume() }
        }
    }

    /// Lets the held request go.
    func resume() {
        state.withLock { value in defer { value.waiting = nil }; return value.waiting }?.resume()
    }
}

