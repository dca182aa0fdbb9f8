// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import Ubiquity
import UbiquityCore

/// The cross-process coordination service hosted by `ubiq daemon`: one ``CoordinationEngine``
/// for every process of the user, reached through a Unix socket under `$XDG_RUNTIME_DIR`.
///
/// A writer in one process makes presenters in other processes relinquish, save and hear of the
/// change. When a client process dies, its presenters are forgotten (messages waiting for them
/// count as answered), its waiting claims are withdrawn and its granted claims released, so no
/// other process waits for it.
public final class CoordinationService: Sendable {
    /// The socket path.
    public let socketPath: String
    let engine: CoordinationEngine
    let logger: Logger
    private let listener: UnixSocket
    private let nextID = Atomic<UInt64>(1)
    private let connections = Mutex<[ObjectIdentifier: ServiceConnection]>([:])
    private let stopped = Atomic<Bool>(false)

    /// Binds the socket (creating its folder, mode 0700). Fails with `alreadyExists` when another
    /// daemon serves it.
    public init(socketPath: String, logger: Logger) throws {
        self.socketPath = socketPath
        self.logger = logger
        try UbiquityPaths.ensureDirectory(URL(fileURLWithPath: CanonicalPath.parentPath(of: socketPath)))
        listener = try UnixSocket.listen(at: socketPath)
        engine = CoordinationEngine(logger: logger)
    }

    /// Accepts connections on a dedicated thread until ``stop()``.
    public func start() {
        let thread = Thread { [self] in self.acceptLoop() }
        thread.name = "ubiquity.coordination.accept"
        thread.start()
        logger.debug("coordination service started", metadata: ["ubiquity.socket": "\(socketPath)"])
    }

    /// Stops accepting, closes every connection and removes the socket file.
    public func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        unlink(socketPath)
        listener.shutdown()
        for connection in connections.withLock({ Array($0.values) }) { connection.socket.shutdown() }
    }

    func makeID() -> UInt64 { nextID.wrappingAdd(1, ordering: .relaxed).oldValue }

    private func acceptLoop() {
        while !stopped.load(ordering: .relaxed) {
            guard let socket = try? listener.accept() else {
                if stopped.load(ordering: .relaxed) { return }
                usleep(10_000)
                continue
            }
            let connection = ServiceConnection(socket: socket, service: self)
            connections.withLock { $0[ObjectIdentifier(connection)] = connection }
            let thread = Thread { [self] in
                connection.run()
                self.connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(connection)) }
            }
            thread.name = "ubiquity.coordination.connection"
            thread.start()
        }
    }
}
