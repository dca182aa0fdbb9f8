// SPDX-License-Identifier: Apache-2.0
import CUbiquityShims
import Foundation
import Synchronization

/// A serial queue of blocking work on one dedicated thread with a higher nice value: work that
/// may fall behind under load (indexing) without taking CPU from work someone is waiting for
/// (sync, the server), as Spotlight's indexers run at background priority on macOS. With CPU
/// to spare it runs as fast as any other thread; when every core is busy it gets what the
/// others leave (a thread 10 nice steps down weighs about a tenth as much in Linux's scheduler).
///
/// The thread lives until ``stop()`` (also called when the last reference goes): work queued
/// before it still runs, in order.
package final class BackgroundThread: Sendable {
    private struct State {
        var jobs: [@Sendable () -> Void] = []
        var stopped = false
    }

    /// What the thread and the queuers share (the thread holds this, not the owner).
    private final class Shared: Sendable {
        let state = Mutex(State())
        let signal = DispatchSemaphore(value: 0)
    }

    private let shared = Shared()

    /// Starts the thread, named `name`, `nice` steps below the priority of the thread that
    /// starts it (a nice value that much higher, at most 19; when lowering the priority fails,
    /// the thread runs at the starter's).
    package init(name: String, nice: Int32) {
        let shared = self.shared
        let target = min(Self.currentThreadNice + max(nice, 0), 19)
        let thread = Thread {
            _ = ub_set_thread_nice(target)
            while true {
                shared.signal.wait()
                let (jobs, stopped) = shared.state.withLock { state -> ([@Sendable () -> Void], Bool) in
                    defer { state.jobs.removeAll(keepingCapacity: true) }
                    return (state.jobs, state.stopped)
                }
                for job in jobs { job() }
                if stopped && jobs.isEmpty { return }
            }
        }
        thread.name = name
        thread.start()
    }

    deinit { stop() }

    /// The nice value of the calling thread.
    package static var currentThreadNice: Int32 { ub_thread_nice() }

    /// Queues `job` after the work already queued (ignored once stopped).
    package func async(_ job: @escaping @Sendable () -> Void) {
        let queued = shared.state.withLock { state -> Bool in
            guard !state.stopped else { return false }
            state.jobs.append(job)
            return true
        }
        if queued { shared.signal.signal() }
    }

    /// Lets the thread end once the work queued so far has run.
    package func stop() {
        let first = shared.state.withLock { state -> Bool in
            defer { state.stopped = true }
            return !state.stopped
        }
        if first { shared.signal.signal() }
    }
}
