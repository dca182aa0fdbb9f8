import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityIndex
import UbiquityStore

/// The daemon's control socket: metadata queries with live updates, index status, rescans and
/// read-your-writes syncs, for the library and the CLI (`docs/control-protocol.md`).
///
/// Each connection carries one request. The accept loop and each connection's reader run on
/// their own threads (they block in `accept` and `read`); query work runs in tasks.
package final class ControlService: Sendable {
    /// Answers a sync request (`evict`, `download`, `item`); `send` writes a line before the
    /// final reply (download progress).
    package typealias SyncRequestHandler = @Sendable (_ request: ControlWire.Request,
                                                     _ send: @escaping @Sendable (ControlWire.Reply) -> Void) async throws -> ControlWire.Reply
    /// The socket path.
    package let socketPath: String
    /// The index host requests go to now (the daemon replaces it when it rebuilds the index).
    package var host: IndexHost { hostProvider() }
    private let hostProvider: @Sendable () -> IndexHost
    let logger: Logger
    private let server: SocketServer
    private let databasePath: String?
    private let syncRequests = Mutex(CallbackSlot<SyncRequestHandler>())
    private let syncHealth = Mutex(CallbackSlot<@Sendable () async -> SyncHealthReport?>())

    /// Sets who answers `evict`, `download` and `item` (the daemon's folder sync).
    package func setSyncRequests(_ handler: @escaping SyncRequestHandler) {
        syncRequests.withLock { $0.callback = handler }
    }

    /// Sets who tells the folder sync's health for `status` (the daemon's folder sync).
    package func setSyncHealth(_ provider: @escaping @Sendable () async -> SyncHealthReport?) {
        syncHealth.withLock { $0.callback = provider }
    }

    /// Binds the socket (creating its folder, mode 0700).
    package init(socketPath: String, hostProvider: @escaping @Sendable () -> IndexHost, databasePath: String?, logger: Logger) throws {
        self.socketPath = socketPath
        self.hostProvider = hostProvider
        self.logger = logger
        self.databasePath = databasePath
        server = try SocketServer(path: socketPath, name: "control")
    }

    /// Accepts connections on a dedicated thread until ``stop()``.
    package func start() {
        server.start { [self] socket in
            serve(socket)
        }
    }

    /// Stops accepting, ends every connection and removes the socket file.
    package func stop() {
        server.stop()
    }


    /// The status report of the host's index.
    package func statusReport() throws -> IndexStatusReport {
        try host.statusReport(database: databasePath)
    }

    /// The folder sync's health, nil without a folder sync. Blocks until the sync answers: only
    /// for a connection's own thread.
    private func waitForSyncHealth() -> SyncHealthReport? {
        guard let provider = syncHealth.withLock({ $0.callback }) else { return nil }
        return Self.waitFor(provider)
    }

    /// Runs `body` in a task and blocks the calling thread until it returns: only for a
    /// connection's own thread (never the cooperative pool's).
    private static func waitFor<T: Sendable>(_ body: @escaping @Sendable () async -> T) -> T {
        let done = DispatchSemaphore(value: 0)
        let result = Mutex<T?>(nil)
        Task {
            let value = await body()
            result.withLock { $0 = value }
            done.signal()
        }
        done.wait()
        return result.withLock { $0! }
    }

    private func serve(_ socket: UnixSocket) {
        defer { socket.shutdown() }
        guard let line = socket.readLine() else { return }
        let request: ControlWire.Request
        do {
            request = try ControlWire.decode(ControlWire.Request.self, from: line)
        } catch {
            send(ControlWire.Reply(error: UbiquityError.wrapping(error, "bad request")), on: socket)
            return
        }
        switch request.op {
        case .query:
            guard let query = request.query else {
                send(ControlWire.Reply(error: UbiquityError(.invalidArgument, "query: missing 'query'")), on: socket)
                return
            }
            serveQuery(query, on: socket)
        case .status:
            var reply = ControlWire.Reply(event: .status)
            do {
                reply.status = try statusReport()
                reply.status?.sync = waitForSyncHealth()
            } catch {
                reply = ControlWire.Reply(error: .wrapping(error, "status failed"))
            }
            send(reply, on: socket)
        case .rescan, .sync:
            guard let path = request.path else {
                send(ControlWire.Reply(error: UbiquityError(.invalidArgument, "\(request.op): missing 'path'")), on: socket)
                return
            }
            let host = self.host
            send(Self.waitFor {
                do {
                    if request.op == .rescan { try await host.rescan(path) } else { try await host.sync(root: path) }
                    return ControlWire.Reply(event: .done)
                } catch {
                    return ControlWire.Reply(error: .wrapping(error, "\(request.op) failed"))
                }
            }, on: socket)
        case .evict, .download, .pin, .unpin, .item, .confirmDeletes:
            serveSync(request, on: socket)
        case .stop:
            send(ControlWire.Reply(error: UbiquityError(.invalidArgument, "stop: ends a query's updates on its own connection; there is no query here")), on: socket)
        }
    }

    private func serveSync(_ request: ControlWire.Request, on socket: UnixSocket) {
        guard request.op == .confirmDeletes || request.path?.hasPrefix("/") == true else {
            send(ControlWire.Reply(error: UbiquityError(.invalidArgument, "\(request.op): missing 'path' (an absolute path)")), on: socket)
            return
        }
        guard let handler = syncRequests.withLock({ $0.callback }) else {
            send(ControlWire.Reply(error: UbiquityError(.serviceUnavailable, "\(request.op): this daemon syncs no folder")), on: socket)
            return
        }
        let logger = self.logger
        send(Self.waitFor {
            do {
                return try await handler(request) { line in
                    do { try socket.send(ControlWire.encode(line)) } catch {
                        logger.debug("control progress not sent", metadata: ["ubiquity.error": "\(error)"])
                    }
                }
            } catch {
                return ControlWire.Reply(error: .wrapping(error, "\(request.op) failed"))
            }
        }, on: socket)
    }

    private func serveQuery(_ query: QueryRequest, on socket: UnixSocket) {
        let events = host.run(query)
        let task = Task { [logger] in
            for await event in events {
                do {
                    try socket.send(ControlWire.encode(ControlWire.Reply(event)))
                } catch {
                    logger.debug("control client went away", metadata: ["ubiquity.error": "\(error)"])
                    break
                }
            }
            socket.shutdown()
        }
        // The client ends a query by closing the connection or sending {"op":"stop"}.
        while let line = socket.readLine() {
            if let request = try? ControlWire.decode(ControlWire.Request.self, from: line), request.op == .stop { break }
        }
        task.cancel()
    }

    private func send(_ reply: ControlWire.Reply, on socket: UnixSocket) {
        do { try socket.send(ControlWire.encode(reply)) } catch {
            logger.debug("control reply not sent", metadata: ["ubiquity.error": "\(error)"])
        }
    }
}
