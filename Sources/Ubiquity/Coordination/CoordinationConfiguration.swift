// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityCore

/// Process-wide settings of file coordination. Set them with
/// ``FileCoordinator/configure(_:)`` before the first coordination.
public struct CoordinationConfiguration: Sendable {
    /// How long a coordination may wait for other claims, and for each presenter's answer,
    /// before it fails with `timedOut`. Default 30 s, or `UBIQUITY_COORDINATION_TIMEOUT` (seconds).
    public var timeout: Duration
    /// The daemon's socket. Default `$XDG_RUNTIME_DIR/ubiquity/coordination.sock`, or
    /// `UBIQUITY_COORDINATION_SOCKET`.
    public var socketPath: String
    /// The lock file for inter-process exclusion without the daemon.
    public var lockFilePath: String
    /// Whether to use the daemon when it runs (default true; `UBIQUITY_COORDINATION=local` turns
    /// it off, leaving in-process coordination plus inter-process locks).
    public var usesDaemon: Bool
    /// Where coordination logs. Default: discards.
    public var logger: Logger

    /// Settings from the environment.
    public init(environment: [String: String] = ProcessInfo.processInfo.environment, logger: Logger? = nil) {
        let paths = UbiquityPaths(environment: environment)
        let seconds = environment["UBIQUITY_COORDINATION_TIMEOUT"].flatMap(Double.init) ?? 30
        timeout = .milliseconds(Int64(max(seconds, 0.001) * 1000))
        socketPath = environment["UBIQUITY_COORDINATION_SOCKET"] ?? paths.coordinationSocket.path
        lockFilePath = paths.coordinationLockFile.path
        usesDaemon = environment["UBIQUITY_COORDINATION"] != "local"
        self.logger = logger ?? Logger(label: "ubiquity.coordination", factory: { _ in SwiftLogNoOpLogHandler() })
    }
}

extension FileCoordinator {
    /// Replaces the process-wide coordination settings (socket, time-out, logger). Takes effect
    /// for coordinations that start afterwards.
    public static func configure(_ configuration: CoordinationConfiguration) {
        CoordinationRuntime.shared.configure(configuration)
    }

    /// Whether this process currently coordinates through the daemon (false: in-process with
    /// inter-process locks only).
    public static var isUsingCoordinationService: Bool { CoordinationRuntime.shared.connectedClient() != nil }
}
