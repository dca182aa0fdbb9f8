// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How one hook run ended.
package struct HookResult: Sendable, Hashable {
    /// The hook's executable.
    package var executable: URL
    /// Its exit status (128 + the signal when killed); nil when it could not be started.
    package var status: Int32?
    /// Whether it ran past the time limit and was killed.
    package var timedOut: Bool
    /// The first bytes of what it wrote on stdout and stderr (at most ``HookRunner/outputLimit``).
    package var output: String
    /// Why it could not be started, when it could not.
    package var failure: String?
    /// How long it ran.
    package var duration: Duration

    /// Whether it ran and exited with status 0 in time.
    package var succeeded: Bool { status == 0 && !timedOut && failure == nil }
}
