// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import UbiquityCore

/// One pooled connection and the thread its transactions block on: a serial Dispatch queue, which
/// (unlike a concurrent one) always gets a thread of its own, so a transaction waiting for a row
/// lock never holds up another connection's.
final class PostgresPooledConnection: Sendable {
    let connection: PostgresConnection
    let queue: DispatchQueue

    init(connection: PostgresConnection) {
        self.connection = connection
        queue = DispatchQueue(label: "ubiquity.postgres.connection-\(connection.id)")
    }

    /// Runs blocking `work` on this connection's thread.
    func run<T: Sendable>(_ work: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { continuation in
            queue.async { continuation.resume(with: Result { try work() }) }
        }
    }
}

/// A small pool of PostgreSQL connections: at most `maximumConnections` open, opened on demand,
/// handed to waiters first come first served, dropped when the server closed them.
final class PostgresConnectionPool: Sendable {
    private enum Grant {
        case connection(PostgresPooledConnection)
        /// A slot is free: the waiter opens a connection itself.
        case open
    }

    private struct Waiter {
        var id: Int
        var continuation: CheckedContinuation<Grant, any Error>
    }

    private struct State {
        var idle: [PostgresPooledConnection] = []
        /// Connections open, being opened or lent out.
        var count = 0
        var waiters: [Waiter] = []
        var closed = false
        var nextID = 1
    }

    private let state = Mutex(State())
    private let url: PostgresURL
    private let configuration: PostgresConnection.Configuration
    private let eventLoopGroup: any EventLoopGroup
    private let logger: Logger
    /// The most connections open at once.
    let maximumConnections: Int

    init(url: PostgresURL, configuration: PostgresConnection.Configuration, maximumConnections: Int,
         eventLoopGroup: any EventLoopGroup, logger: Logger) {
        self.url = url
        self.configuration = configuration
        self.maximumConnections = max(1, maximumConnections)
        self.eventLoopGroup = eventLoopGroup
        self.logger = logger
    }

    private var closedError: UbiquityError {
        UbiquityError(.serviceUnavailable, "the PostgreSQL record store at \(url.displayName) is closed")
    }

    /// Runs `body` with a connection of the pool, then gives the connection back (or drops it when
    /// it was closed meanwhile).
    func withConnection<T: Sendable>(_ body: (PostgresPooledConnection) async throws -> T) async throws -> T {
        let connection = try await acquire()
        do {
            let result = try await body(connection)
            release(connection)
            return result
        } catch {
            release(connection)
            throw error
        }
    }

    func acquire() async throws -> PostgresPooledConnection {
        enum Next { case use(PostgresPooledConnection), open(Int), wait(Int), closed }
        let next: Next = state.withLock { state in
            if state.closed { return .closed }
            while let connection = state.idle.popLast() {
                if !connection.connection.isClosed { return .use(connection) }
                state.count -= 1
            }
            let id = state.nextID
            state.nextID += 1
            if state.count < maximumConnections {
                state.count += 1
                return .open(id)
            }
            return .wait(id)
        }
        switch next {
        case .closed: throw closedError
        case .use(let connection): return connection
        case .open(let id): return try await open(id: id)
        case .wait(let id):
            let grant = try await withTaskCancellationHandler {
                try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<Grant, any Error>) in
                    let cancelled: Bool = state.withLock { state in
                        if state.closed || Task.isCancelled { return true }
                        state.waiters.append(Waiter(id: id, continuation: continuation))
                        return false
                    }
                    if cancelled { continuation.resume(throwing: Task.isCancelled ? CancellationError() : closedError) }
                }
            } onCancel: {
                let waiter: Waiter? = state.withLock { state in
                    guard let index = state.waiters.firstIndex(where: { $0.id == id }) else { return nil }
                    return state.waiters.remove(at: index)
                }
                waiter?.continuation.resume(throwing: CancellationError())
            }
            switch grant {
            case .connection(let connection): return connection
            case .open: return try await open(id: id)
            }
        }
    }

    /// Opens a connection in a slot already counted.
    private func open(id: Int) async throws -> PostgresPooledConnection {
        do {
            let connection = try await PostgresConnection.connect(on: eventLoopGroup.any(), configuration: configuration, id: id, logger: logger)
            return PostgresPooledConnection(connection: connection)
        } catch {
            freeSlot()
            throw PostgresErrors.connectError(error, url: url)
        }
    }

    /// Gives a slot back: to the first waiter, who opens a connection, or to the pool.
    private func freeSlot() {
        let waiter: Waiter? = state.withLock { state in
            if !state.closed, !state.waiters.isEmpty { return state.waiters.removeFirst() }
            state.count -= 1
            return nil
        }
        waiter?.continuation.resume(returning: .open)
    }

    /// Gives a connection back.
    func release(_ connection: PostgresPooledConnection) {
        if connection.connection.isClosed {
            freeSlot()
            return
        }
        enum Next { case handed(Waiter), kept, close }
        let next: Next = state.withLock { state in
            if state.closed {
                state.count -= 1
                return .close
            }
            if !state.waiters.isEmpty { return .handed(state.waiters.removeFirst()) }
            state.idle.append(connection)
            return .kept
        }
        switch next {
        case .handed(let waiter): waiter.continuation.resume(returning: .connection(connection))
        case .kept: break
        case .close:
            // Keep the connection alive until it is closed (postgres-nio asserts that on deinit).
            let pgConnection = connection.connection
            pgConnection.close().whenComplete { _ in withExtendedLifetime(pgConnection) {} }
        }
    }

    /// Closes idle connections, fails waiters; connections lent out close when they come back.
    func close() async {
        let (idle, waiters): ([PostgresPooledConnection], [Waiter]) = state.withLock { state in
            state.closed = true
            let idle = state.idle
            let waiters = state.waiters
            state.count -= idle.count
            state.idle = []
            state.waiters = []
            return (idle, waiters)
        }
        for waiter in waiters { waiter.continuation.resume(throwing: closedError) }
        for connection in idle { try? await connection.connection.close() }
    }

    deinit {
        // A store dropped without `close()`: close its idle connections, keeping each alive until
        // it is closed (postgres-nio asserts that a connection is closed before it goes away).
        let idle = state.withLock { $0.idle }
        for pooled in idle {
            let connection = pooled.connection
            connection.close().whenComplete { _ in withExtendedLifetime(connection) {} }
        }
    }
}
