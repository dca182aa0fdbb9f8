import Dispatch

/// Runs blocking work (SQLite, directory scans, syscalls that wait) off Swift's cooperative
/// pool, on a Dispatch queue, and awaits its result.
package enum BlockingWork {
    private static let queue = DispatchQueue(label: "ubiquity.blocking", qos: .userInitiated, attributes: .concurrent)

    /// Runs `work` on the blocking queue and returns its result or error.
    package static func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}
