// SPDX-License-Identifier: Apache-2.0
import Synchronization
import Testing
import UbiquityServer

/// Expectations made inside a store transaction. A transaction body runs on the store's own
/// thread, where `#expect` cannot tell which test it belongs to (its issue is reported against no
/// test); `Checks` keeps the failures and reports them on the test's task when the transaction
/// returns (`StoreFixture.read`/`write`), with the source location of each check.
final class Checks: Sendable {
    private struct Failure {
        var comment: Comment
        var sourceLocation: SourceLocation
    }

    struct RequirementFailed: Error {}

    private let failures = Mutex<[Failure]>([])

    /// Records a failure when `condition` is false.
    func expect(_ condition: Bool, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        if !condition { fail(comment.isEmpty ? "Expectation failed" : comment, sourceLocation: sourceLocation) }
    }

    /// Records a failure when `actual` differs from `expected`, showing both.
    func equal<T: Equatable>(_ actual: T, _ expected: T, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) {
        if actual != expected {
            fail("Expected \(expected), got \(actual)" + (comment.isEmpty ? "" : " (\(comment))"), sourceLocation: sourceLocation)
        }
    }

    /// The value, or a recorded failure and a thrown error when it is nil.
    func require<T>(_ value: T?, _ comment: String = "", sourceLocation: SourceLocation = #_sourceLocation) throws -> T {
        guard let value else {
            fail("Required value was nil" + (comment.isEmpty ? "" : " (\(comment))"), sourceLocation: sourceLocation)
            throw RequirementFailed()
        }
        return value
    }

    /// Records a failure.
    func fail(_ comment: String, sourceLocation: SourceLocation = #_sourceLocation) {
        failures.withLock { $0.append(Failure(comment: Comment(rawValue: comment), sourceLocation: sourceLocation)) }
    }

    /// Reports the recorded failures as issues of the current test. Call on the test's task.
    func report() {
        let recorded = failures.withLock { failures in
            defer { failures = [] }
            return failures
        }
        for failure in recorded { Issue.record(failure.comment, sourceLocation: failure.sourceLocation) }
    }
}

extension StoreFixture {
    /// Runs `body` in a read transaction of `store` with `Checks` reported to the running test.
    static func read<T: Sendable>(_ store: any RecordStore,
                                  _ body: @escaping @Sendable (any RecordStoreTransaction, Checks) async throws -> T) async throws -> T {
        let checks = Checks()
        defer { checks.report() }
        return try await store.read { tx in try await body(tx, checks) }
    }

    /// Runs `body` in a write transaction of `store` with `Checks` reported to the running test.
    static func write<T: Sendable>(_ store: any RecordStore,
                                   _ body: @escaping @Sendable (any RecordStoreTransaction, Checks) async throws -> T) async throws -> T {
        let checks = Checks()
        defer { checks.report() }
        return try await store.write { tx in try await body(tx, checks) }
    }
}
