// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Runs a transaction's asynchronous body on the thread of the GRDB access that holds the
/// transaction, to its end.
///
/// The stores' transactions are asynchronous (`RecordStoreTransaction`'s methods are `async`, so
/// PostgreSQL awaits its statements), but a GRDB connection may only be used inside GRDB's own
/// closure, on its queue's thread. So `SQLiteRecordStore` runs the body as a task whose executor
/// preference is this executor, and drains the task's jobs right there, inside the closure, until
/// the body has returned. `SQLiteTransaction`'s methods are synchronous, so the body does not
/// really suspend: its jobs run back to back on the database's thread. If it does await
/// something else (an actor), it hops there and back, and the thread waits meanwhile; it is
/// GRDB's thread, never one of Swift's cooperative pool.
final class SQLiteTransactionExecutor: TaskExecutor, @unchecked Sendable {
    private let condition = NSCondition()
    /// Jobs enqueued and not run yet (guarded by `condition`).
    private var jobs: [UnownedJob] = []
    /// Set by the body's task when it has returned (guarded by `condition`).
    private var finished = false

    private init() {}

    func enqueue(_ job: consuming ExecutorJob) {
        let job = UnownedJob(job)
        condition.lock()
        jobs.append(job)
        condition.signal()
        condition.unlock()
    }

    /// Runs `body` to its end on the calling thread and returns what it returned.
    static func run<T>(_ body: @escaping () async throws -> T) throws -> T {
        let executor = SQLiteTransactionExecutor()
        // The result is written by the task (on this thread, in a job drained below) and read
        // after it finished.
        nonisolated(unsafe) var result: Result<T, any Error>?
        nonisolated(unsafe) let body = body
        Task(executorPreference: executor) {
            do {
                result = .success(try await body())
            } catch {
                result = .failure(error)
            }
            executor.finish()
        }
        executor.drain()
        return try result!.get()
    }

    private func finish() {
        condition.lock()
        finished = true
        condition.unlock()
    }

    /// Runs the jobs enqueued, waiting for more, until the task has finished.
    private func drain() {
        let unowned = asUnownedTaskExecutor()
        while true {
            condition.lock()
            while jobs.isEmpty, !finished { condition.wait() }
            if jobs.isEmpty {
                condition.unlock()
                return
            }
            let batch = jobs
            jobs.removeAll(keepingCapacity: true)
            condition.unlock()
            for job in batch { job.runSynchronously(on: unowned) }
        }
    }
}
