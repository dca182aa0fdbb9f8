// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityCore

/// The cross-process coordination service hosted by `ubiq daemon`: one ``CoordinationEngine``
/// for every process of the user, reached through a Unix socket under `$XDG_RUNTIME_DIR`. It is
/// the hosting process's own engine (`CoordinationRuntime.shared.engine`), so the daemon's
/// file coordinators (the sync's writes) meet every client's claims and presenters in-process;
/// the daemon configures its coordination not to use the daemon (`usesDaemon = false`).
///
/// A writer in one process makes presenters in other processes relinquish, save and hear of the
/// change. When a client process dies, its presenters are forgotten (messages waiting for them
/// count as answered), its waiting claims are withdrawn and its granted claims released, so no
/// other process waits for it.
package final class CoordinationService: Sendable {
    /// The socket path.
    package let socketPath: String
    let engine: CoordinationEngine
    let logger: Logger
    /// The IDs this service gives its clients' claims and presenters in the shared engine,
    /// from 2^62 up: the in-process registry and runtime number theirs from 1.
    private let nextID = Atomic<UInt64>(1 << 62)
    private let server: SocketServer
    /// Told when a client resolved or removed a version (CoordinationService+Versions.swift).
    let versionObservers = Mutex<[@Sendable (_ path: String) -> Void]>([])

    /// Binds the socket (creating its folder, mode 0700). Fails with `alreadyExists` when another
    /// daemon serves it.
    package init(socketPath: String, logger: Logger) throws {
        self.socketPath = socketPath
        self.logger = logger
        server = try SocketServer(path: socketPath, name: "coordination")
        engine = CoordinationRuntime.shared.engine
    }

    /// Accepts connections on a dedicated thread until ``stop()``.
    package func start() {
        server.start { [self] socket in ServiceConnection(socket: socket, service: self).run() }
        logger.debug("coordination service started", metadata: ["ubiquity.socket": "\(socketPath)"])
    }

    /// Stops accepting, closes every connection and removes the socket file.
    package func stop() {
        server.stop()
    }

    func makeID() -> UInt64 { nextID.wrappingAdd(1, ordering: .relaxed).oldValue }
}

