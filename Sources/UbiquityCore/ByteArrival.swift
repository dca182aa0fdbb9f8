// SPDX-License-Identifier: Apache-2.0
import Foundation

/// The bytes of a file arriving front to back (a download writing its content in order), as
/// readers on ordinary threads wait for them: the writer says which file holds them and how
/// many are there, then that it finished or failed; a reader blocks its thread until the bytes
/// it needs are there. Readers never wait on the cooperative pool: this is for threads of
/// their own (the mounted folder's libfuse threads).
///
/// Concurrency: every member may be called from any thread; the state is behind a condition
/// lock, and waiting readers wake on every report.
package final class ByteArrival: @unchecked Sendable {
    // @unchecked because: `state` is read and written only with `condition` locked.

    /// What a wait found.
    package enum Outcome: Sendable, Equatable {
        /// The bytes asked for are in the file.
        case ready
        /// The file is complete (every byte is there).
        case finished
        /// The writer failed (the errno to answer with).
        case failed(Int32)
        /// Nothing arrived for the stall time.
        case stalled
    }

    /// Fetches bytes out of order, for a reader far ahead of the arrival.
    package typealias RangeReader = @Sendable (Range<Int64>) async throws -> Data

    private struct State {
        var file: String?
        var rangeReader: RangeReader?
        var available: Int64 = 0
        var total: Int64?
        var finished = false
        var failure: Int32?
    }

    private let condition = NSCondition()
    private var state = State()

    /// An arrival with nothing there yet.
    package init() {}

    // MARK: The writer

    /// The first `available` bytes of `file` (of `total` in all) are there.
    package func advance(file: String, available: Int64, total: Int64) {
        condition.lock()
        state.file = file
        state.available = available
        state.total = total
        condition.broadcast()
        condition.unlock()
    }

    /// Readers far ahead of the arrival may fetch their bytes with `reader` instead of
    /// waiting for them.
    package func offerRanges(_ reader: @escaping RangeReader) {
        condition.lock()
        state.rangeReader = reader
        condition.unlock()
    }

    /// Every byte is there (or the writer ended without writing: then there is no file).
    package func finish() {
        condition.lock()
        state.finished = true
        condition.broadcast()
        condition.unlock()
    }

    /// The writer failed; readers get `errorNumber`.
    package func fail(_ errorNumber: Int32) {
        condition.lock()
        if !state.finished { state.failure = errorNumber }
        condition.broadcast()
        condition.unlock()
    }

    // MARK: Readers

    /// The file holding the bytes, once the writer named it (nil: not yet, or it finished
    /// without one).
    package var file: String? {
        condition.lock()
        defer { condition.unlock() }
        return state.file
    }

    /// How many bytes from the front are there.
    package var available: Int64 {
        condition.lock()
        defer { condition.unlock() }
        return state.available
    }

    /// How bytes far ahead of the arrival can be fetched, when the writer offered a way.
    package var rangeReader: RangeReader? {
        condition.lock()
        defer { condition.unlock() }
        return state.rangeReader
    }

    /// The size of the content, once known.
    package var total: Int64? {
        condition.lock()
        defer { condition.unlock() }
        return state.total
    }

    /// Blocks until the writer names its file, finishes or fails, or nothing happens for
    /// `stall`.
    package func waitForFile(stall: Duration) -> Outcome {
        wait(stall: stall) { state in state.file != nil ? .ready : nil }
    }

    /// Blocks until the first `end` bytes are there (or all of them, when the content is
    /// shorter), the writer finishes or fails, or nothing arrives for `stall` (a slow download
    /// keeps a reader waiting as long as bytes keep coming).
    package func wait(through end: Int64, stall: Duration) -> Outcome {
        wait(stall: stall) { state in
            let needed = state.total.map { min(end, $0) } ?? end
            return state.available >= needed && state.file != nil ? .ready : nil
        }
    }

    private func wait(stall: Duration, until done: (State) -> Outcome?) -> Outcome {
        condition.lock()
        defer { condition.unlock() }
        var seen = state.available
        var deadline = Date().addingTimeInterval(Self.seconds(stall))
        while true {
            if let failure = state.failure { return .failed(failure) }
            if let outcome = done(state) { return outcome }
            if state.finished { return .finished }
            if !condition.wait(until: deadline) {
                guard state.available != seen else { return .stalled }
                seen = state.available
                deadline = Date().addingTimeInterval(Self.seconds(stall))
            }
        }
    }

    private static func seconds(_ duration: Duration) -> TimeInterval {
        let (seconds, attoseconds) = duration.components
        return TimeInterval(seconds) + TimeInterval(attoseconds) / 1e18
    }
}
