// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// What the terminal allows: colour only on a TTY, with `NO_COLOR` unset or empty
/// (https://no-color.org) and `TERM` not `dumb`. Progress output follows the same rule.
enum Terminal {
    /// Whether stdout may carry ANSI colour.
    static func colorEnabled(environment: [String: String] = ProcessInfo.processInfo.environment) -> Bool {
        if let noColor = environment["NO_COLOR"], !noColor.isEmpty { return false }
        if environment["TERM"] == "dumb" { return false }
        return isatty(STDOUT_FILENO) == 1
    }

    /// `text` in the ANSI colour `code` (e.g. 31 red) when `enabled`.
    static func paint(_ text: String, _ code: Int, enabled: Bool) -> String {
        enabled ? "\u{1B}[\(code)m\(text)\u{1B}[0m" : text
    }
}
