// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityIndex

/// What the engine's passes tell about the sync's health: the run of failures since the last
/// success and the last error. A value the engine updates after every pass (no I/O), read by the
/// daemon's status (``SyncHealthReport``, `ubiq doctor`).
struct SyncHealth: Sendable, Equatable {
    private(set) var consecutiveFailures = 0
    private(set) var failingSince: Date?
    private(set) var lastError: String?
    private(set) var lastSuccess: Date?

    /// A pass succeeded at `date`: the failures are over.
    mutating func passSucceeded(at date: Date) {
        consecutiveFailures = 0
        failingSince = nil
        lastError = nil
        lastSuccess = date
    }

    /// A pass failed at `date` with `error`.
    mutating func passFailed(_ error: String, at date: Date) {
        if consecutiveFailures == 0 { failingSince = date }
        consecutiveFailures += 1
        lastError = error
    }

    /// The report for the folder at `folder`.
    func report(folder: String) -> SyncHealthReport {
        SyncHealthReport(folder: folder, consecutiveFailures: consecutiveFailures, failingSince: failingSince,
                         lastError: lastError, lastSuccess: lastSuccess)
    }
}
