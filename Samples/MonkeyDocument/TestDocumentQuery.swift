// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity

/// Finds `test.txt` in the containers' documents with a metadata query, as Apple's sample
/// does in `loadDocument`: the query's scope is `NSMetadataQueryUbiquitousDocumentsScope`, its
/// predicate `%K == %@` on `NSMetadataItemFSNameKey`; when gathering finishes the query is
/// stopped and its one result (if any) is the document to open.
enum TestDocumentQuery {
    /// The URL of the `test.txt` the query found, or nil when there is none.
    static func find() async throws -> URL? {
        let query = NSMetadataQuery()
        query.searchScopes = [NSMetadataQueryUbiquitousDocumentsScope]
        query.predicate = try QueryPredicate(format: "%K == %@", NSMetadataItemFSNameKey, "test.txt")
        let observers = ObserverBox()
        let url: URL? = try await withCheckedThrowingContinuation { continuation in
            let once = OnceBox(continuation)
            observers.add(NotificationCenter.default.addObserver(
                forName: .NSMetadataQueryDidFinishGathering, object: query, queue: nil
            ) { _ in
                // queryDidFinishGathering: disable updates, stop, then read the results.
                query.disableUpdates()
                query.stop()
                if let error = query.lastError { once.resume(throwing: error); return }
                let item = query.resultCount == 1 ? query.result(at: 0) as? NSMetadataItem : nil
                once.resume(returning: item?.value(forAttribute: NSMetadataItemURLKey) as? URL)
            })
            if !query.start() {
                once.resume(throwing: query.lastError ?? UbiquityError(.invalidArgument, "the query did not start"))
            }
        }
        observers.removeAll()
        return url
    }
}

/// Observer tokens to remove afterwards. `@unchecked Sendable`: guarded by its lock.
private final class ObserverBox: @unchecked Sendable {
    private let lock = NSLock()
    private var tokens: [any NSObjectProtocol] = []
    func add(_ token: any NSObjectProtocol) { lock.withLock { tokens.append(token) } }
    func removeAll() {
        for token in lock.withLock({ tokens }) { NotificationCenter.default.removeObserver(token) }
    }
}

/// Resumes a continuation at most once. `@unchecked Sendable`: guarded by its lock.
private final class OnceBox: @unchecked Sendable {
    private let lock = NSLock()
    private var continuation: CheckedContinuation<URL?, any Error>?
    init(_ continuation: CheckedContinuation<URL?, any Error>) { self.continuation = continuation }
    func resume(returning value: URL?) { take()?.resume(returning: value) }
    func resume(throwing error: any Error) { take()?.resume(throwing: error) }
    private func take() -> CheckedContinuation<URL?, any Error>? {
        lock.withLock {
            defer { continuation = nil }
            return continuation
        }
    }
}
