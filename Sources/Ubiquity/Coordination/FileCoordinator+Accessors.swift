// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import UbiquityCore

extension FileCoordinator {
    // MARK: Apple's forms (NSError out-parameter)

    /// Waits for access to read `url`, messages presenters (relinquish, then save unless
    /// `.withoutChanges`), and runs `reader`. On failure `reader` is not run and `outError` is set.
    public func coordinate(readingItemAt url: URL, options: ReadingOptions = [], error outError: NSErrorPointer,
                           byAccessor reader: (URL) -> Void) {
        report(outError) { try coordinate(readingItemAt: url, options: options) { reader($0) } }
    }

    /// Waits for access to write `url`, messages presenters (relinquish, then accommodate
    /// deletion or save as the options say), runs `writer`, then tells presenters of the change.
    public func coordinate(writingItemAt url: URL, options: WritingOptions = [], error outError: NSErrorPointer,
                           byAccessor writer: (URL) -> Void) {
        report(outError) { try coordinate(writingItemAt: url, options: options) { writer($0) } }
    }

    /// A read of one item and a write of another as one claim (no lock-ordering deadlock).
    public func coordinate(readingItemAt readingURL: URL, options readingOptions: ReadingOptions = [],
                           writingItemAt writingURL: URL, options writingOptions: WritingOptions = [],
                           error outError: NSErrorPointer, byAccessor readerWriter: (URL, URL) -> Void) {
        report(outError) {
            try coordinate(readingItemAt: readingURL, options: readingOptions, writingItemAt: writingURL,
                           options: writingOptions) { readerWriter($0, $1) }
        }
    }

    /// Two writes as one claim, e.g. a move: `.forMoving` on the source, `.forReplacing` on the
    /// destination.
    public func coordinate(writingItemAt url1: URL, options options1: WritingOptions = [],
                           writingItemAt url2: URL, options options2: WritingOptions = [],
                           error outError: NSErrorPointer, byAccessor writer: (URL, URL) -> Void) {
        report(outError) {
            try coordinate(writingItemAt: url1, options: options1, writingItemAt: url2, options: options2) { writer($0, $1) }
        }
    }

    /// Messages the presenters of the items and of everything inside them once, then runs
    /// `batchAccessor`, which must make its own coordinated accesses and call the completion
    /// handler (from any thread) when done; presenters reacquire then.
    public func prepare(forReadingItemsAt readingURLs: [URL], options readingOptions: ReadingOptions = [],
                        writingItemsAt writingURLs: [URL], options writingOptions: WritingOptions = [],
                        error outError: NSErrorPointer,
                        byAccessor batchAccessor: (@escaping @Sendable () -> Void) -> Void) {
        report(outError) {
            try prepare(forReadingItemsAt: readingURLs, options: readingOptions, writingItemsAt: writingURLs,
                        options: writingOptions, byAccessor: batchAccessor)
        }
    }

    private func report(_ outError: NSErrorPointer, _ body: () throws -> Void) {
        do {
            try body()
        } catch let error as UbiquityError {
            outError?.pointee = error.nsError
        } catch {
            outError?.pointee = error as NSError
        }
    }

    // MARK: Throwing forms

    /// Coordinated read; returns what `reader` returns and rethrows what it throws.
    @discardableResult
    public func coordinate<T>(readingItemAt url: URL, options: ReadingOptions = [],
                              byAccessor reader: (URL) throws -> T) throws -> T {
        let path = try canonical(url, resolveLast: options.contains(.resolvesSymbolicLink))
        let item = ItemRequest(path: path, access: .read(options))
        if options.contains(.forUploading) {
            let snapshot = try withClaim([item]) { try Snapshot.make(of: path) }
            defer { snapshot.remove() }
            return try reader(snapshot.url)
        }
        return try withClaim([item]) { try reader(URL(fileURLWithPath: path)) }
    }

    /// Coordinated write; returns what `writer` returns and rethrows what it throws.
    @discardableResult
    public func coordinate<T>(writingItemAt url: URL, options: WritingOptions = [],
                              byAccessor writer: (URL) throws -> T) throws -> T {
        let path = try canonical(url)
        return try withClaim([ItemRequest(path: path, access: .write(options))]) { try writer(URL(fileURLWithPath: path)) }
    }

    /// Coordinated read of one item and write of another.
    @discardableResult
    public func coordinate<T>(readingItemAt readingURL: URL, options readingOptions: ReadingOptions = [],
                              writingItemAt writingURL: URL, options writingOptions: WritingOptions = [],
                              byAccessor readerWriter: (URL, URL) throws -> T) throws -> T {
        let read = try canonical(readingURL, resolveLast: readingOptions.contains(.resolvesSymbolicLink))
        let write = try canonical(writingURL)
        return try withClaim([ItemRequest(path: read, access: .read(readingOptions)), ItemRequest(path: write, access: .write(writingOptions))]) {
            try readerWriter(URL(fileURLWithPath: read), URL(fileURLWithPath: write))
        }
    }

    /// Coordinated write of two items (a move, a copy over).
    @discardableResult
    public func coordinate<T>(writingItemAt url1: URL, options options1: WritingOptions = [],
                              writingItemAt url2: URL, options options2: WritingOptions = [],
                              byAccessor writer: (URL, URL) throws -> T) throws -> T {
        let path1 = try canonical(url1), path2 = try canonical(url2)
        return try withClaim([ItemRequest(path: path1, access: .write(options1)), ItemRequest(path: path2, access: .write(options2))]) {
            try writer(URL(fileURLWithPath: path1), URL(fileURLWithPath: path2))
        }
    }

    /// Batch preparation; see the `error:` form.
    public func prepare(forReadingItemsAt readingURLs: [URL], options readingOptions: ReadingOptions = [],
                        writingItemsAt writingURLs: [URL], options writingOptions: WritingOptions = [],
                        byAccessor batchAccessor: (@escaping @Sendable () -> Void) -> Void) throws {
        if readingOptions.contains(.resolvesSymbolicLink) || writingOptions.contains(.forReplacing) {
            throw UbiquityError(.invalidArgument, "prepare(forReadingItemsAt:…) does not accept .resolvesSymbolicLink or .forReplacing")
        }
        var cache = CanonicalPathCache()  // each folder resolved once
        var items = try readingURLs.map { ItemRequest(path: try canonical($0, cache: &cache), access: .read(readingOptions.union(.forUploading))) }
        items += try writingURLs.map { url -> ItemRequest in
            var options = writingOptions
            if options.isDisjoint(with: [.forDeleting, .forMoving]) { options.insert(.forMoving) }  // message the whole subtree
            return ItemRequest(path: try canonical(url, cache: &cache), access: .write(options))
        }
        let id = try acquire(items, isPrepare: true)
        let runtime = CoordinationRuntime.shared
        batchAccessor { runtime.finish(claimID: id) }
    }

    // MARK: Intents

    /// Waits (without blocking the caller) for access to every intent's item as one claim, then
    /// runs `accessor` once on `queue` with nil, or with the error that prevented access. Use
    /// `intent.url` inside; access ends when the accessor returns.
    public func coordinate(with intents: [FileAccessIntent], queue: OperationQueue,
                           byAccessor accessor: @escaping @Sendable ((any Error)?) -> Void) {
        let items: [ItemRequest]
        var cache = CanonicalPathCache()  // each folder resolved once
        do {
            items = try intents.map { intent in
                switch intent.kind {
                case .reading(let o): return ItemRequest(path: try canonical(intent.url, resolveLast: o.contains(.resolvesSymbolicLink), cache: &cache), access: .read(o))
                case .writing(let o): return ItemRequest(path: try canonical(intent.url, cache: &cache), access: .write(o))
                }
            }
        } catch {
            queue.addOperation { accessor(error) }
            return
        }
        // (the intent's own directory-ness: `URL(fileURLWithPath:)` alone would stat the item)
        for (intent, item) in zip(intents, items) { intent.updateURL(URL(fileURLWithPath: item.path, isDirectory: intent.url.hasDirectoryPath)) }
        let runtime = CoordinationRuntime.shared
        let request = makeRequest(items, isPrepare: false)
        runtime.request(request) { [self] error in
            if let error {
                queue.addOperation { accessor(error.code == .cancelled ? error.nsError : error) }
                return
            }
            queue.addOperation { [self] in
                do {
                    let locks = try runtime.locks()
                    try locks.acquire(items.map(\.lock), purpose: request.purpose, deadline: .now.advanced(by: request.timeout))
                    HeldClaims.threadStack.claims.append(request.arbiterClaim)
                    accessor(nil)
                    HeldClaims.threadStack.claims.removeLast()
                    locks.release(items.map(\.lock), purpose: request.purpose)
                } catch {
                    accessor(error)
                }
                runtime.finish(claimID: request.id)
                self.afterClaim()
            }
        }
    }

    // MARK: Machinery

    func canonical(_ url: URL, resolveLast: Bool = false) throws -> String {
        try CanonicalPath.canonicalize(Self.filePath(url), resolveLast: resolveLast)
    }

    /// ``canonical(_:resolveLast:)`` for one of many items of a claim: each folder resolved once.
    func canonical(_ url: URL, resolveLast: Bool = false, cache: inout CanonicalPathCache) throws -> String {
        try cache.canonicalize(Self.filePath(url), resolveLast: resolveLast)
    }

    /// The path of a file URL; coordination works on nothing else.
    static func filePath(_ url: URL) throws -> String {
        guard url.isFileURL else {
            throw UbiquityError(.invalidArgument, "'\(url.absoluteString)' is not a file URL; coordination works on file URLs only")
        }
        return url.path
    }

    func makeRequest(_ items: [ItemRequest], isPrepare: Bool) -> ClaimRequest {
        ClaimRequest(id: CoordinationRuntime.shared.nextClaimID(), purpose: purposeIdentifier, items: items,
                     isPrepare: isPrepare, timeout: timeout)
    }

    /// Waits for the claim to be granted (presenters messaged); returns its id.
    func acquire(_ items: [ItemRequest], isPrepare: Bool) throws -> UInt64 {
        let request = makeRequest(items, isPrepare: isPrepare)
        if !isPrepare, let blocker = HeldClaims.blocker(for: request.arbiterClaim) {
            throw UbiquityError(.wouldDeadlock,
                "a coordinated access to '\(items.first?.path ?? "?")' would wait for the coordinated access to '\(blocker.locks.first?.path ?? "?")' that this thread is already inside; nest with the same FileCoordinator, or use the two-item coordinate forms")
        }
        let runtime = CoordinationRuntime.shared
        let done = DispatchSemaphore(value: 0)
        let outcome = OutcomeBox()
        activeClaims.withLock { _ = $0.insert(request.id) }
        defer { activeClaims.withLock { _ = $0.remove(request.id) } }
        if cancelled.load(ordering: .relaxed) { throw UbiquityError(.cancelled, "the coordinator was cancelled") }
        runtime.request(request) { error in
            outcome.set(error)
            outcome.finished.store(true, ordering: .releasing)
            done.signal()
        }
        if cancelled.load(ordering: .relaxed) { runtime.cancel(claimID: request.id) }
        // Presenters usually answer within tens of microseconds: spin briefly before sleeping,
        // which saves a thread wake-up on the common path.
        // Only in-process: through the daemon, the answer takes several hops and spinning would
        // take a core away from the daemon and the presenter.
        let spinUntil = DispatchTime.now().uptimeNanoseconds + (runtime.connectedClient() == nil ? 40_000 : 0)
        while !outcome.finished.load(ordering: .acquiring) && DispatchTime.now().uptimeNanoseconds < spinUntil {}
        if done.wait(timeout: .now() + .milliseconds(Int(request.timeout.components.seconds * 1000) + 5000)) == .timedOut {
            runtime.cancel(claimID: request.id)
            done.wait()
        }
        if let error = outcome.error {
            runtime.finish(claimID: request.id)
            throw error
        }
        return request.id
    }

    /// Runs `body` holding a claim on `items` (in-process arbitration or the daemon, plus the
    /// inter-process locks), then releases it.
    func withClaim<T>(_ items: [ItemRequest], _ body: () throws -> T) throws -> T {
        let id = try acquire(items, isPrepare: false)
        let runtime = CoordinationRuntime.shared
        let locks = items.map(\.lock)
        let bytes = InterprocessLocks.requests(for: locks)
        let purpose = purposeIdentifier
        let interprocess: InterprocessLocks
        do {
            interprocess = try runtime.locks()
            try interprocess.acquire(bytes, describing: items[0].path, purpose: purpose, deadline: .now.advanced(by: timeout))
        } catch {
            runtime.finish(claimID: id)
            throw error
        }
        let stack = HeldClaims.threadStack
        stack.claims.append(ArbiterState.Claim(id: id, purpose: purpose, locks: locks))
        defer {
            stack.claims.removeLast()
            interprocess.release(bytes, purpose: purpose)
            runtime.finish(claimID: id)
            afterClaim()
        }
        return try body()
    }

    func afterClaim() {
        if let filePresenter { CoordinationRuntime.shared.refreshPresenter(filePresenter) }
    }
}

/// The outcome of a claim, handed from the granting thread to the waiting one.
final class OutcomeBox: @unchecked Sendable {  // @unchecked because set happens-before the semaphore signal that precedes every read
    private(set) var error: UbiquityError?
    let finished = Atomic<Bool>(false)
    func set(_ error: UbiquityError?) { self.error = error }
}
