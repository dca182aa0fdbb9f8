// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One result of `ubiq doctor`: what was checked, how it stands, and what to do about it.
package struct DoctorFinding: Sendable, Hashable {
    /// How a check came out.
    package enum Level: String, Sendable, Hashable, Comparable {
        /// Fine.
        case ok
        /// Works, but something will bite later (low limits, a skewed clock).
        case warning
        /// Broken: something Ubiquity needs is missing.
        case failure

        private var rank: Int { self == .ok ? 0 : self == .warning ? 1 : 2 }
        /// Orders ok < warning < failure.
        package static func < (lhs: Self, rhs: Self) -> Bool { lhs.rank < rhs.rank }
    }

    /// The area checked: `inotify`, `daemon`, `account`, `server`, `clock`, `folder`, `xattr`, `disk`.
    package var check: String
    /// How it came out.
    package var level: Level
    /// What was found.
    package var detail: String
    /// What to do, when something is to be done.
    package var fix: String?

    /// A finding.
    package init(_ check: String, _ level: Level, _ detail: String, fix: String? = nil) {
        self.check = check
        self.level = level
        self.detail = detail
        self.fix = fix
    }
}
