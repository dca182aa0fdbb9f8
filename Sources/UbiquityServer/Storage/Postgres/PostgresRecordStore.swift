// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import Synchronization
import UbiquityCore

/// The record store on a PostgreSQL server, through postgres-nio: the tables of
/// `SQLiteRecordStore`, in PostgreSQL's types, so several `ubiq serve` processes can share one
/// database.
///
/// Connections come from postgres-nio's `PostgresClient` (its pool, run by the store for its
/// lifetime); a transaction leases one and awaits each statement, so no thread ever blocks on the
/// server. Write transactions are `BEGIN … COMMIT` at READ COMMITTED: `lockDatabase(_:)` takes
/// the database row `FOR UPDATE`, which serializes the writers of one database across processes.
/// Reads are `REPEATABLE READ READ ONLY`, one snapshot. An error thrown by the body rolls back; a
/// transaction that meets a deadlock or a serialization failure (SQLSTATE 40P01, 40001) runs
/// again, up to `maximumAttempts` times, so bodies must be safe to repeat (they are: everything
/// they do is in the transaction).
package final class PostgresRecordStore: RecordStore {
    let url: PostgresURL
    let client: PostgresClient
    /// The task running `client` (postgres-nio's pool works only while `run()` does).
    private let clientTask: Task<Void, Never>
    let logger: Logger
    /// The schema the store's tables are in (`search_path`), or nil for the server's default.
    package let schema: String?
    /// Refreshes the planner's statistics after bulk writes (``PostgresStatistics``).
    let statistics = PostgresStatistics()

    /// How many times a transaction runs at most when it meets deadlocks or serialization failures.
    package static let maximumAttempts = 5

    /// Connects to the server at `url`, creating `schema` and the store's tables when missing.
    ///
    /// - Parameters:
    ///   - url: `postgres://user:password@host:port/database` (or `postgresql://`); a Unix socket
    ///     with `?host=/socket/folder` (the socket file is `.s.PGSQL.PORT` in it); `sslmode`
    ///     (`disable`, `allow`, `prefer`, the default, `require`, `verify-ca`, `verify-full`),
    ///     `connect_timeout` and `application_name` are understood.
    ///   - schema: a schema for the tables (created when missing, set as `search_path` on every
    ///     connection); nil uses the server's `search_path` (normally `public`). Lets several stores
    ///     share a database, and tests run side by side.
    ///   - maximumConnections: the most connections (and so transactions running) at once.
    ///   - eventLoopGroup: where postgres-nio does its I/O; the process-wide NIO group by default.
    ///   - logger: where connection events and retries are logged.
    /// - Throws: `UbiquityError` `.invalidArgument` for a malformed URL or schema (naming what is
    ///   wrong), `.serviceUnavailable` when the server cannot be reached (naming the host),
    ///   `.permissionDenied` when it refuses the user, `.notFound` when the database is missing.
    package init(url: String, schema: String? = nil, maximumConnections: Int = 8,
                eventLoopGroup: any EventLoopGroup = MultiThreadedEventLoopGroup.singleton, logger: Logger) async throws {
        let parsed = try PostgresURL(url)
        if let schema {
            guard !schema.isEmpty, schema.utf8.count <= 63, !schema.contains("\u{0}") else {
                throw UbiquityError(.invalidArgument, "invalid PostgreSQL schema name '\(schema)': it must have 1 to 63 bytes and no NUL")
            }
        }
        var parameters: [(String, String)] = []
        if let schema { parameters.append(("search_path", Self.quotedIdentifier(schema))) }
        // The first connection is opened here, by itself, so that a server that cannot be reached
        // or refuses the user fails the store at once with what went wrong; it migrates the tables.
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(on: eventLoopGroup.any(), configuration: try parsed.configuration(startupParameters: parameters),
                                                              id: 0, logger: logger)
        } catch {
            throw PostgresErrors.connectError(error, url: parsed)
        }
        do {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let applied = try await Self.transaction(on: connection, mode: .write, url: parsed, logger: logger) { session in
                try await Self.migrate(session: session, schema: schema, now: now)
            }
            try await connection.close()
            if !applied.isEmpty {
                logger.info("migrated the PostgreSQL record store", metadata: ["store": "postgres \(parsed.displayName)", "migrations": "\(applied)"])
            }
        } catch {
            try? await connection.close()
            throw error
        }
        self.url = parsed
        self.schema = schema
        self.logger = logger
        let client = PostgresClient(configuration: parsed.clientConfiguration(startupParameters: parameters, maximumConnections: maximumConnections),
                                    eventLoopGroup: eventLoopGroup, backgroundLogger: logger)
        self.client = client
        clientTask = Task { await client.run() }
    }

    /// `"postgres HOST:PORT/DB"` (the socket's folder as the host for a Unix socket).
    package var description: String { "postgres \(url.displayName)" }

    /// Runs `body` in a `REPEATABLE READ READ ONLY` transaction: one snapshot.
    package func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try await run(.read) { session in try await body(PostgresTransaction(session: session)) }
    }

    /// Runs `body`'s statements without `BEGIN` and `COMMIT` (autocommit: each statement at READ
    /// COMMITTED sees what was committed when it ran; two round trips fewer).
    package func readWithoutSnapshot<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        try await run(.autocommit) { session in try await body(PostgresTransaction(session: session)) }
    }

    /// Runs `body` in a read-write transaction (`BEGIN … COMMIT`; rolled back when it throws).
    /// After a commit that takes the records written past ``PostgresStatistics``' line, the
    /// record tables' statistics are refreshed in the background.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) async throws -> T) async throws -> T {
        let (result, written) = try await run(.write) { session in
            let transaction = PostgresTransaction(session: session)
            return (try await body(transaction), transaction.recordsWritten)
        }
        if written > 0, statistics.wrote(written) {
            Task { [self] in
                let records = try? await run(.write) { session -> Int in
                    try await session.execute(PostgresStatistics.refreshSQL)
                    return Int(try await session.row("SELECT reltuples::BIGINT AS n FROM pg_class WHERE oid = 'records'::regclass")?.value("n", as: Int64.self) ?? 0)
                }
                statistics.refreshed(tableRecords: records)
            }
        }
        return result
    }

    /// Stops the pool: connections close, and later calls fail with `.serviceUnavailable`. Waits
    /// for the pool to stop at most ``closeWait`` (a pool retrying connections to a server that
    /// is down may take longer; it stops in the background).
    package func close() async throws {
        clientTask.cancel()
        let running = clientTask
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let once = ResumeOnce(continuation)
            Task {
                await running.value
                once.resume()
            }
            Task {
                try? await Task.sleep(for: Self.closeWait)
                once.resume()
            }
        }
    }

    /// A continuation resumed by the first of several callers.
    private final class ResumeOnce: Sendable {
        private let continuation: Mutex<CheckedContinuation<Void, Never>?>

        init(_ continuation: CheckedContinuation<Void, Never>) {
            self.continuation = Mutex(continuation)
        }

        func resume() {
            continuation.withLock { continuation in
                defer { continuation = nil }
                return continuation
            }?.resume()
        }
    }

    /// The longest ``close()`` waits for the pool to stop.
    static let closeWait: Duration = .seconds(5)

    deinit {
        clientTask.cancel()
    }


    /// A connection that failed before its transaction began (the server closed it while idle):
    /// the transaction runs again on another connection.
    private struct StaleConnection: Error {
        var error: any Error
    }

    /// How long a transaction waits for a connection before it fails with `.serviceUnavailable`
    /// (the server is down or every connection is stuck): the URL's `connect_timeout`.
    private var leaseDeadline: Duration { .seconds(url.connectTimeout) }

    /// How `run` runs a body.
    enum Mode {
        /// `REPEATABLE READ READ ONLY`: one snapshot.
        case read
        /// `BEGIN … COMMIT` at READ COMMITTED.
        case write
        /// Statements outside a transaction (reads only).
        case autocommit
    }

    /// Runs `body` in a transaction on a leased connection, again on deadlocks and serialization
    /// failures.
    func run<T: Sendable>(_ mode: Mode, _ body: @escaping @Sendable (PostgresSession) async throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await withLeasedConnection { [url, logger] connection in
                    try await Self.transaction(on: connection, mode: mode, url: url, logger: logger, body)
                }
            } catch let stale as StaleConnection {
                guard attempt < Self.maximumAttempts else { throw stale.error }
                logger.debug("a pooled PostgreSQL connection was closed; retrying on another", metadata: ["store": "\(description)"])
            } catch let error where attempt < Self.maximumAttempts && PostgresErrors.isRetryable(error) {
                logger.debug("PostgreSQL transaction conflict; retrying", metadata: [
                    "store": "\(description)", "attempt": "\(attempt)", "sqlstate": "\(PostgresErrors.sqlState(error) ?? "")",
                ])
                // A short random pause, growing with the attempts, so the conflicting transactions part.
                try await Task.sleep(for: .milliseconds(Int.random(in: 1...5) * attempt))
            }
            attempt += 1
        }
    }

    /// Runs `body` with a connection of the pool. postgres-nio's pool keeps a request waiting
    /// while it cannot open connections (up to a minute, its circuit breaker); the store gives up
    /// after ``leaseDeadline`` instead, so that a request during an outage is answered
    /// TRY_AGAIN_LATER in bounded time. Once `body` has its connection, it is never cut short.
    ///
    /// The lease runs as a task of its own that the caller does not wait for once the deadline
    /// passed: a request the pool never answers (one made as the store closes) cannot hold the
    /// caller. A lease granted after the deadline hands its connection straight back.
    private func withLeasedConnection<T: Sendable>(_ body: @escaping @Sendable (PostgresConnection) async throws -> T) async throws -> T {
        let race = LeaseRace<T>()
        let deadline = leaseDeadline
        return try await withTaskCancellationHandler {
            try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
                let lease = Task { [client, url] in
                    do {
                        let result = try await client.withConnection { connection in
                            guard race.lease() else { throw CancellationError() }
                            return try await body(connection)
                        }
                        race.finish(.success(result))
                    } catch {
                        let leased = race.isLeased
                        race.finish(.failure(leased || error is UbiquityError || error is StaleConnection || error is CancellationError
                            ? error : PostgresErrors.connectError(error, url: url)))
                    }
                }
                let timer = Task { [url] in
                    try? await Task.sleep(for: deadline)
                    if race.abandon() {
                        lease.cancel()
                        race.finish(.failure(UbiquityError(.serviceUnavailable, "no connection to PostgreSQL at \(url.hostDescription) within \(url.connectTimeout) s")))
                    }
                }
                race.start(continuation, lease: lease, timer: timer)
            }
        } onCancel: {
            race.cancel()
        }
    }

    /// One transaction on `connection` (or statements outside one, for `.autocommit`).
    static func transaction<T>(on connection: PostgresConnection, mode: Mode, url: PostgresURL, logger: Logger,
                               _ body: (PostgresSession) async throws -> T) async throws -> T {
        if mode == .autocommit {
            do {
                return try await body(PostgresSession(connection: connection, url: url, logger: logger))
            } catch {
                // a read is safe to run again on another connection
                if connection.isClosed { throw StaleConnection(error: error) }
                throw error
            }
        }
        let session = PostgresSession(connection: connection, url: url, logger: logger)
        do {
            try await session.execute(mode == .read ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN")
        } catch {
            if connection.isClosed { throw StaleConnection(error: error) }
            throw error
        }
        do {
            let result = try await body(session)
            // The body caught a statement's error and went on: PostgreSQL has aborted the
            // transaction, and COMMIT would quietly roll it back.
            if let failure = session.failure { throw failure }
            try await session.execute("COMMIT")
            return result
        } catch {
            do {
                try await PostgresSession(connection: connection, url: url, logger: logger).execute("ROLLBACK")
            } catch {
                // The connection's state is unknown: close it (the pool replaces closed connections).
                try? await connection.close()
            }
            // A deadlock or serialization failure the body wrapped in an error of its own is still
            // one: report it as itself so that the transaction runs again.
            if let failure = session.failure, PostgresErrors.isRetryable(failure) { throw failure }
            throw error
        }
    }

    /// The value of a server setting (`current_setting(name)`), for tests and diagnostics.
    package func setting(_ name: String) async throws -> String {
        try await run(.read) { session in
            guard let row = try await session.row("SELECT current_setting($1) AS value", [.text(name)]) else {
                throw UbiquityError(.notFound, "PostgreSQL has no setting \(name)")
            }
            return try row.value("value", as: String.self)
        }
    }

    /// Drops `schema` and everything in it (for tests and tools that made a throw-away schema).
    package static func dropSchema(_ schema: String, url: String, logger: Logger) async throws {
        let parsed = try PostgresURL(url)
        let connection: PostgresConnection
        do {
            connection = try await PostgresConnection.connect(configuration: try parsed.configuration(startupParameters: []), id: 0, logger: logger)
        } catch {
            throw PostgresErrors.connectError(error, url: parsed)
        }
        do {
            try await connection.query(PostgresQuery(unsafeSQL: "DROP SCHEMA IF EXISTS \(quotedIdentifier(schema)) CASCADE"), logger: logger)
            try await connection.close()
        } catch {
            try? await connection.close()
            throw PostgresErrors.statementError(error, sql: "DROP SCHEMA", url: parsed)
        }
    }
}
