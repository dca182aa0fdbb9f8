// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// When the PostgreSQL store refreshes the planner's statistics of its record tables itself.
///
/// The planner chooses plans from `ANALYZE`'s statistics, which autovacuum refreshes a minute or
/// more after a table changed by a tenth. Right after a bulk load (a first sync of 100,000 items,
/// `scripts/bench-records`) they still describe the empty table: a `NEAR` query then ran its
/// spatial lookup once per record of the type, 119 ms instead of 5.6 ms at 10,000 records
/// (docs/benchmarks.md, "Issue 26: queries from query indexes"). So the store counts the records
/// it writes and, past a tenth of the table (at least ``minimumRecords``), runs `ANALYZE` on the
/// record tables once, in the background, after the write that crossed the line.
final class PostgresStatistics: Sendable {
    /// Records written before the first refresh.
    static let minimumRecords = 5_000

    private struct State {
        var written = 0
        /// Records to write before the next refresh.
        var threshold = PostgresStatistics.minimumRecords
        var running = false
    }

    private let state = Mutex(State())

    /// Notes records written by a committed transaction; true when a refresh should start now
    /// (the caller then runs it and reports ``refreshed(tableRecords:)``).
    func wrote(_ count: Int) -> Bool {
        state.withLock { state in
            state.written += count
            guard state.written >= state.threshold, !state.running else { return false }
            state.running = true
            state.written = 0
            return true
        }
    }

    /// The refresh ended; the records table holds about `tableRecords` rows (nil: it failed).
    func refreshed(tableRecords: Int?) {
        state.withLock { state in
            state.running = false
            if let tableRecords { state.threshold = max(Self.minimumRecords, tableRecords / 10) }
        }
    }

    /// The statements of a refresh: the tables queries plan over.
    static let refreshSQL = "ANALYZE records, record_index, record_keys"
}
