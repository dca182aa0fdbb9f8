// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How the daemon's folder sync fares, for `ubiq doctor` and `ubiq index status`: whether its
/// passes (pull the server's changes, push the local ones) succeed, and the last error while
/// they do not.
package struct SyncHealthReport: Codable, Sendable, Hashable {
    /// The synced folder.
    package var folder: String
    /// Passes that failed since the last one that succeeded.
    package var consecutiveFailures: Int
    /// When the first of those failures happened (nil while passes succeed).
    package var failingSince: Date?
    /// The last failure's error, until a pass succeeds.
    package var lastError: String?
    /// When a pass last succeeded (nil: none yet).
    package var lastSuccess: Date?

    /// A report.
    package init(folder: String, consecutiveFailures: Int = 0, failingSince: Date? = nil, lastError: String? = nil, lastSuccess: Date? = nil) {
        self.folder = folder
        self.consecutiveFailures = consecutiveFailures
        self.failingSince = failingSince
        self.lastError = lastError
        self.lastSuccess = lastSuccess
    }

    /// Failed passes in a row from which on the sync counts as failing, not as having a hiccup:
    /// with the engine's back-off (1, 2, 4 s) about 7 s of failing.
    package static let failingAfter = 3

    /// Whether the passes keep failing (``failingAfter`` in a row or more).
    package var isFailing: Bool { consecutiveFailures >= Self.failingAfter }
}
