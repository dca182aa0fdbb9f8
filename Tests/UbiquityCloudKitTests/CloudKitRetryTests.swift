// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit

/// The client honours `retryAfter`: it waits (capped, cancellable) and retries THROTTLED and
/// TRY_AGAIN_LATER answers a bounded number of times, and leaves other errors alone.
@Suite struct CloudKitRetryTests {
    typealias Support = CloudKitTestSupport
    static let lookupOK = #"{"records":[\#(CloudKitTestSupport.recordJSON("a"))]}"#
    static let fast = CloudContainer.RetryPolicy(maximumAttempts: 3, maximumDelay: 0.01, defaultDelay: 0)

    @Test func throttledThenUnavailableThenSuccess() async throws {
        let fake = FakeCloudKitTransport(responses: [
            (429, #"{"serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":1}"#),
            (503, #"{"serverErrorCode":"TRY_AGAIN_LATER","reason":"storage","retryAfter":1}"#),
            (200, Self.lookupOK),
        ])
        let record = try await Support.container(fake, retryPolicy: Self.fast).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        #expect(record.recordID.recordName == "a")
        #expect(fake.requests.count == 3)
        #expect(fake.requests.map(\.body) == Array(repeating: fake.requests[0].body, count: 3))
    }

    @Test func attemptsAreBoundedAndTheErrorKeepsItsDelay() async throws {
        let fake = FakeCloudKitTransport { _, _ in
            CloudKitHTTPResponse(status: 429, headers: ["Retry-After": "4"], body: Data(#"{"serverErrorCode":"THROTTLED","reason":"slow down"}"#.utf8))
        }
        let error = await #expect(throws: CloudKitError.self) {
            try await Support.container(fake, retryPolicy: Self.fast).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(error?.code == .requestRateLimited)
        #expect(error?.retryAfterSeconds == 4) // from the Retry-After header
        #expect(fake.requests.count == 3)
    }

    @Test func otherErrorsAreNotRetried() async throws {
        let fake = FakeCloudKitTransport(responses: [(409, #"{"serverErrorCode":"CONFLICT","reason":"tag"}"#), (200, Self.lookupOK)])
        await #expect(throws: CloudKitError.self) {
            try await Support.container(fake, retryPolicy: Self.fast).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        }
        #expect(fake.requests.count == 1)
        // a bare 503 (a proxy) is retried after the default delay
        let proxy = FakeCloudKitTransport(responses: [(503, "<html>busy</html>"), (200, Self.lookupOK)])
        _ = try await Support.container(proxy, retryPolicy: Self.fast).privateCloudDatabase.record(for: Record.ID(recordName: "a"))
        #expect(proxy.requests.count == 2)
    }

    @Test func policyDelays() {
        let policy = CloudContainer.RetryPolicy(maximumAttempts: 5, maximumDelay: 10, defaultDelay: 2)
        var throttled = CloudKitError(.requestRateLimited, "x", serverErrorCode: "THROTTLED")
        #expect(policy.delay(for: throttled) == 2)
        throttled.retryAfterSeconds = 3
        #expect(policy.delay(for: throttled) == 3)
        throttled.retryAfterSeconds = 3600
        #expect(policy.delay(for: throttled) == 10)
        #expect(policy.delay(for: CloudKitError(.networkFailure, "x")) == nil)
        #expect(CloudContainer.RetryPolicy.never.maximumAttempts == 1)
        #expect(CloudContainer.RetryPolicy(maximumAttempts: 0).maximumAttempts == 1)
    }

    @Test func cancellingTheWaitEndsTheRequest() async throws {
        let fake = FakeCloudKitTransport { _, _ in
            CloudKitHTTPResponse(status: 429, body: Data(#"{"serverErrorCode":"THROTTLED","reason":"slow down","retryAfter":600}"#.utf8))
        }
        let container = Support.container(fake, retryPolicy: CloudContainer.RetryPolicy(maximumAttempts: 3, maximumDelay: 600))
        let task = Task { try await container.privateCloudDatabase.record(for: Record.ID(recordName: "a")) }
        while fake.requests.isEmpty { try await Task.sleep(for: .milliseconds(5)) }
        task.cancel()
        let result = await task.result
        guard case .failure(let error as CloudKitError) = result else { Issue.record("expected a CloudKitError, got \(result)"); return }
        #expect(error.code == .operationCancelled)
        #expect(fake.requests.count == 1)
    }
}
