// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// A property guarded by a lock: how the operations keep their settings and blocks safe to
/// set from any thread (an implementation detail of ``CloudDatabaseOperation`` and its
/// subclasses, public only because their properties use it).
@propertyWrapper
public final class OperationLocked<Value>: @unchecked Sendable {
    private let lock = NSLock()
    private var value: Value

    /// Wraps the initial value.
    public init(wrappedValue: Value) { value = wrappedValue }

    /// The value, read and written under the lock.
    public var wrappedValue: Value {
        get { lock.withLock { value } }
        set { lock.withLock { value = newValue } }
    }
}

/// The base of the database operations (`CKDatabaseOperation`). Configure an operation, then
/// either hand it to ``CloudDatabase/add(_:)`` (it runs in a new task and reports through its
/// blocks) or set ``database`` and `try await operation.run()` (it reports through its blocks
/// too, and throws the error its result block gets).
///
/// Blocks are called one at a time, in order, from the task running the operation: do not
/// block in them. An operation runs once. `@unchecked Sendable`: every property is guarded
/// by a lock.
public class CloudDatabaseOperation: @unchecked Sendable, CustomStringConvertible {
    private let state = Mutex(State())

    private struct State {
        var started = false
        var finished = false
        var cancelled = false
        var task: Task<Void, Never>?
        var work: Task<Void, any Error>?
        var waiters: [CheckedContinuation<Void, Never>] = []
    }

    /// The database the operation runs on (set by ``CloudDatabase/add(_:)``).
    @OperationLocked public var database: CloudDatabase?
    /// A name for logs.
    @OperationLocked public var name: String?
    /// Called once after the operation finished, after its result block.
    @OperationLocked public var completionBlock: (@Sendable () -> Void)?

    init() {}

    /// Whether ``cancel()`` was called.
    public var isCancelled: Bool { state.withLock { $0.cancelled } }
    /// Whether the operation has started and not finished.
    public var isExecuting: Bool { state.withLock { $0.started && !$0.finished } }
    /// Whether the operation has finished (successfully or not).
    public var isFinished: Bool { state.withLock { $0.finished } }

    /// Cancels the operation: a request in flight is abandoned, no further request is sent,
    /// and the result block gets ``CloudKitError/Code/operationCancelled``.
    public func cancel() {
        let work = state.withLock { state -> Task<Void, any Error>? in
            state.cancelled = true
            return state.work
        }
        work?.cancel()
    }

    /// Runs the operation on ``database`` in the calling task and returns when it finished;
    /// throws the error its result block got (a ``CloudKitError``; for per-item failures,
    /// ``CloudKitError/Code/partialFailure``).
    public func run() async throws {
        let begin = state.withLock { state -> Bool in
            guard !state.started else { return false }
            state.started = true
            return true
        }
        guard begin else {
            throw CloudKitError(.invalidArguments, "\(self) already ran; make a new operation to run it again")
        }
        defer { finish() }
        guard let database else {
            let error = CloudKitError(.invalidArguments, "\(self) has no database: add it with database.add(_:) or set its database")
            report(.failure(error))
            throw error
        }
        let work = Task { [self] in try await execute(in: database) }
        let cancelledAlready = state.withLock { state -> Bool in
            state.work = work
            return state.cancelled
        }
        if cancelledAlready { work.cancel() }
        try await withTaskCancellationHandler {
            try await work.value
        } onCancel: {
            work.cancel()
        }
    }

    /// Waits until the operation finished (for operations started with ``CloudDatabase/add(_:)``).
    public func waitUntilFinished() async {
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let done = state.withLock { state -> Bool in
                if state.finished { return true }
                state.waiters.append(continuation)
                return false
            }
            if done { continuation.resume() }
        }
    }

    /// `ModifyRecordsOperation(name)`.
    public var description: String {
        let type = String(describing: Swift.type(of: self))
        return name.map { "\(type)(\($0))" } ?? type
    }

    func startDetached() {
        let task = Task { [self] in _ = try? await run() }
        state.withLock { $0.task = task }
    }

    private func finish() {
        let waiters = state.withLock { state -> [CheckedContinuation<Void, Never>] in
            state.finished = true
            defer { state.waiters = [] }
            return state.waiters
        }
        completionBlock?()
        for waiter in waiters { waiter.resume() }
    }

    /// Whether to stop before the next request.
    var shouldStop: Bool { isCancelled || Task.isCancelled }

    /// The work; subclasses override. Must call the subclass's result block exactly once.
    func execute(in database: CloudDatabase) async throws {
        fatalError("\(Swift.type(of: self)) must override execute(in:)")
    }

    /// Reports a failure before the work started (no database); subclasses override to call
    /// their result block.
    func report(_ result: Result<Void, CloudKitError>) {}

    /// Runs `body` (the requests), turning its outcome into the final result: cancellation →
    /// operationCancelled, per-item failures → partialFailure. Calls `resultBlock` with it and
    /// throws the error.
    func finishing<Value>(_ body: () async throws -> (Value, [CloudKitError.ItemID: CloudKitError]),
                          resultBlock: (Result<Value, CloudKitError>) -> Void) async throws {
        let result: Result<Value, CloudKitError>
        do {
            if shouldStop { throw CloudKitError.cancelled }
            let (value, failures) = try await body()
            if shouldStop {
                result = .failure(.cancelled)
            } else if failures.isEmpty {
                result = .success(value)
            } else {
                var error = CloudKitError(.partialFailure, "\(failures.count) item\(failures.count == 1 ? "" : "s") failed")
                error.partialErrors = failures
                result = .failure(error)
            }
        } catch {
            result = .failure(shouldStop ? CloudKitError.cancelled : CloudKitError.wrap(error))
        }
        resultBlock(result)
        if case .failure(let error) = result { throw error }
    }
}
