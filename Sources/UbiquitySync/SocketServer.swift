import Foundation
import Synchronization
import UbiquityCore

/// A Unix-socket listener with a thread per connection, shared by the daemon's services: the
/// accept loop and each connection block in `accept` and `read`, so they run on their own
/// threads, never on the cooperative pool.
final class SocketServer: Sendable {
    /// The socket path.
    let path: String
    private let name: String
    private let listener: UnixSocket
    private let stopped = Atomic<Bool>(false)
    private let connections = Mutex<[ObjectIdentifier: UnixSocket]>([:])

    /// Binds `path` (creating its folder, mode 0700). Fails with `alreadyExists` when another
    /// process serves the path, `accessDenied` when its folder is not this user's private one.
    init(path: String, name: String) throws {
        self.path = path
        self.name = name
        try PrivateFolder.ensure(CanonicalPath.parentPath(of: path), strict: true)  // never in another user's folder
        listener = try UnixSocket.listen(at: path)
    }

    /// Accepts connections on a dedicated thread until ``stop()``; `handler` serves one
    /// connection on its own thread and returns when the connection is done.
    func start(handler: @escaping @Sendable (UnixSocket) -> Void) {
        let thread = Thread { [self] in acceptLoop(handler) }
        thread.name = "ubiquity.\(name).accept"
        thread.start()
    }

    /// Stops accepting, shuts every connection down and removes the socket file.
    func stop() {
        guard !stopped.exchange(true, ordering: .relaxed) else { return }
        unlink(path)
        listener.shutdown()
        for socket in connections.withLock({ Array($0.values) }) { socket.shutdown() }
    }

    private func acceptLoop(_ handler: @escaping @Sendable (UnixSocket) -> Void) {
        while !stopped.load(ordering: .relaxed) {
            guard let socket = try? listener.accept() else {
                if stopped.load(ordering: .relaxed) { return }
                usleep(10_000)
                continue
            }
            connections.withLock { $0[ObjectIdentifier(socket)] = socket }
            let thread = Thread { [self] in
                handler(socket)
                connections.withLock { _ = $0.removeValue(forKey: ObjectIdentifier(socket)) }
            }
            thread.name = "ubiquity.\(name).connection"
            thread.start()
        }
    }
}
