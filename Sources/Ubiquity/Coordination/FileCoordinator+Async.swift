// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore

extension FileCoordinator {
    /// Coordinated read that waits without blocking a thread. Task cancellation cancels the wait.
    @discardableResult
    public func coordinate<T: Sendable>(readingItemAt url: URL, options: ReadingOptions = [],
                                        byAccessor reader: @Sendable (URL) async throws -> T) async throws -> T {
        let path = try canonical(url, resolveLast: options.contains(.resolvesSymbolicLink))
        let item = ItemRequest(path: path, access: .read(options))
        if options.contains(.forUploading) {
            let snapshotURL = try await withClaimAsync([item]) { try Snapshot.make(of: path).url }
            defer { try? FileManager.default.removeItem(at: snapshotURL.deletingLastPathComponent()) }
            return try await reader(snapshotURL)
        }
        return try await withClaimAsync([item]) { try await reader(URL(fileURLWithPath: path)) }
    }

    /// Coordinated write that waits without blocking a thread.
    @discardableResult
    public func coordinate<T: Sendable>(writingItemAt url: URL, options: WritingOptions = [],
                                        byAccessor writer: @Sendable (URL) async throws -> T) async throws -> T {
        let path = try canonical(url)
        return try await withClaimAsync([ItemRequest(path: path, access: .write(options))]) { try await writer(URL(fileURLWithPath: path)) }
    }

    /// Coordinated read of one item and write of another, without blocking a thread.
    @discardableResult
    public func coordinate<T: Sendable>(readingItemAt readingURL: URL, options readingOptions: ReadingOptions = [],
                                        writingItemAt writingURL: URL, options writingOptions: WritingOptions = [],
                                        byAccessor readerWriter: @Sendable (URL, URL) async throws -> T) async throws -> T {
        let read = try canonical(readingURL, resolveLast: readingOptions.contains(.resolvesSymbolicLink))
        let write = try canonical(writingURL)
        return try await withClaimAsync([ItemRequest(path: read, access: .read(readingOptions)), ItemRequest(path: write, access: .write(writingOptions))]) {
            try await readerWriter(URL(fileURLWithPath: read), URL(fileURLWithPath: write))
        }
    }

    /// Coordinated write of two items, without blocking a thread.
    @discardableResult
    public func coordinate<T: Sendable>(writingItemAt url1: URL, options options1: WritingOptions = [],
                                        writingItemAt url2: URL, options options2: WritingOptions = [],
                                        byAccessor writer: @Sendable (URL, URL) async throws -> T) async throws -> T {
        let path1 = try canonical(url1), path2 = try canonical(url2)
        return try await withClaimAsync([ItemRequest(path: path1, access: .write(options1)), ItemRequest(path: path2, access: .write(options2))]) {
            try await writer(URL(fileURLWithPath: path1), URL(fileURLWithPath: path2))
        }
    }

    /// Coordinated access to every intent's item as one claim; use `intent.url` inside `accessor`.
    @discardableResult
    public func coordinate<T: Sendable>(with intents: [FileAccessIntent],
                                        byAccessor accessor: @Sendable () async throws -> T) async throws -> T {
        var cache = CanonicalPathCache()  // each folder resolved once
        let items = try intents.map { intent -> ItemRequest in
            switch intent.kind {
            case .reading(let o): return ItemRequest(path: try canonical(intent.url, resolveLast: o.contains(.resolvesSymbolicLink), cache: &cache), access: .read(o))
            case .writing(let o): return ItemRequest(path: try canonical(intent.url, cache: &cache), access: .write(o))
            }
        }
        // (the intent's own directory-ness: `URL(fileURLWithPath:)` alone would stat the item)
        for (intent, item) in zip(intents, items) { intent.updateURL(URL(fileURLWithPath: item.path, isDirectory: intent.url.hasDirectoryPath)) }
        return try await withClaimAsync(items) { try await accessor() }
    }

    func withClaimAsync<T: Sendable>(_ items: [ItemRequest], _ body: @Sendable () async throws -> T) async throws -> T {
        let request = makeRequest(items, isPrepare: false)
        if let blocker = HeldClaims.blocker(for: request.arbiterClaim) {
            throw UbiquityError(.wouldDeadlock,
                "a coordinated access to '\(items.first?.path ?? "?")' would wait for the coordinated access to '\(blocker.locks.first?.path ?? "?")' that this task is already inside")
        }
        if cancelled.load(ordering: .relaxed) { throw UbiquityError(.cancelled, "the coordinator was cancelled") }
        let runtime = CoordinationRuntime.shared
        activeClaims.withLock { _ = $0.insert(request.id) }
        let error: UbiquityError? = await withTaskCancellationHandler {
            await withCheckedContinuation { continuation in
                runtime.request(request) { continuation.resume(returning: $0) }
            }
        } onCancel: {
            runtime.cancel(claimID: request.id)
        }
        activeClaims.withLock { _ = $0.remove(request.id) }
        if let error {
            runtime.finish(claimID: request.id)
            throw error
        }
        let locks = items.map(\.lock)
        let interprocess: InterprocessLocks
        do {
            interprocess = try runtime.locks()
            try interprocess.acquire(locks, purpose: request.purpose, deadline: .now.advanced(by: request.timeout))
        } catch {
            runtime.finish(claimID: request.id)
            throw error
        }
        defer {
            interprocess.release(locks, purpose: request.purpose)
            runtime.finish(claimID: request.id)
            afterClaim()
        }
        return try await HeldClaims.$taskClaims.withValue(HeldClaims.taskClaims + [request.arbiterClaim]) {
            try await body()
        }
    }
}
