// SPDX-License-Identifier: Apache-2.0
import Foundation

/// How one hook run ended.
public struct HookResult: Sendable, Hashable {
    /// The hook's executable.
    public var executable: URL
    /// Its exit status (128 + the signal when killed); nil when it could not be started.
    public var status: Int32?
    /// Whether it ran past the time limit and was killed.
    public var timedOut: Bool
    /// The first bytes of what it wrote on stdout and stderr (at most ``HookRunner/outputLimit``).
    public var output: String
    /// Why it could not be started, when it could not.
    public var failure: String?
    /// How long it ran.
    public var duration: Duration

    /// Whether it ran and exited with status 0 in time.
    public var succeeded: Bool { status == 0 && !timedOut && failure == nil }
}
