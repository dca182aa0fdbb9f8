// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import NIOCore
import NIOPosix
import PostgresNIO
import UbiquityCore

/// The record store on a PostgreSQL server, through postgres-nio: the tables of
/// `SQLiteRecordStore`, in PostgreSQL's types, so several `ubiq serve` processes can share one
/// database.
///
/// Each transaction takes a connection from a small pool and runs on that connection's own thread
/// (never an event loop's, never Swift's cooperative pool), blocking for each statement's result.
/// Write transactions are `BEGIN … COMMIT` at READ COMMITTED: `lockDatabase(_:)` takes the
/// database row `FOR UPDATE`, which serializes the writers of one database across processes.
/// Reads are `REPEATABLE READ READ ONLY`, one snapshot. An error thrown by the body rolls back;
/// a transaction that meets a deadlock or a serialization failure (SQLSTATE 40P01, 40001) runs
/// again, up to `maximumAttempts` times, so bodies must be safe to repeat (they are: everything
/// they do is in the transaction).
package final class PostgresRecordStore: RecordStore {
    let url: PostgresURL
    let pool: PostgresConnectionPool
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
        let configuration = try parsed.configuration(startupParameters: parameters)
        self.url = parsed
        self.schema = schema
        self.logger = logger
        pool = PostgresConnectionPool(url: parsed, configuration: configuration, maximumConnections: maximumConnections,
                                      eventLoopGroup: eventLoopGroup, logger: logger)
        do {
            let now = Int64(Date().timeIntervalSince1970 * 1000)
            let applied = try await run(readOnly: false) { session in try Self.migrate(session: session, schema: schema, now: now) }
            if !applied.isEmpty {
                logger.info("migrated the PostgreSQL record store", metadata: ["store": "\(description)", "migrations": "\(applied)"])
            }
        } catch {
            await pool.close()
            throw error
        }
    }

    /// `"postgres HOST:PORT/DB"` (the socket's folder as the host for a Unix socket).
    package var description: String { "postgres \(url.displayName)" }

    /// Runs `body` in a `REPEATABLE READ READ ONLY` transaction: one snapshot.
    package func read<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) throws -> T) async throws -> T {
        try await run(readOnly: true) { session in try body(PostgresTransaction(session: session)) }
    }

    /// Runs `body` in a read-write transaction (`BEGIN … COMMIT`; rolled back when it throws).
    /// After a commit that takes the records written past ``PostgresStatistics``' line, the
    /// record tables' statistics are refreshed in the background.
    package func write<T: Sendable>(_ body: @escaping @Sendable (any RecordStoreTransaction) throws -> T) async throws -> T {
        let (result, written) = try await run(readOnly: false) { session in
            let transaction = PostgresTransaction(session: session)
            return (try body(transaction), transaction.recordsWritten)
        }
        if written > 0, statistics.wrote(written) {
            Task { [self] in
                let records = try? await run(readOnly: false) { session -> Int in
                    try session.execute(PostgresStatistics.refreshSQL)
                    return Int(try session.row("SELECT reltuples::BIGINT AS n FROM pg_class WHERE oid = 'records'::regclass")?.value("n", as: Int64.self) ?? 0)
                }
                statistics.refreshed(tableRecords: records)
            }
        }
        return result
    }

    /// Closes the idle connections; those in use close when their transaction ends. Later calls
    /// fail with `.serviceUnavailable`.
    package func close() async throws {
        await pool.close()
    }

    /// A connection that failed before its transaction began (the server closed it while idle):
    /// the transaction runs again on another connection.
    private struct StaleConnection: Error {
        var error: any Error
    }

    /// Runs `body` in a transaction on a pooled connection's thread, again on deadlocks and
    /// serialization failures.
    func run<T: Sendable>(readOnly: Bool, _ body: @escaping @Sendable (PostgresSession) throws -> T) async throws -> T {
        var attempt = 1
        while true {
            do {
                return try await pool.withConnection { [url, logger] pooled in
                    try await pooled.run {
                        try Self.transaction(on: pooled.connection, readOnly: readOnly, url: url, logger: logger, body)
                    }
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

    /// One transaction, blocking, on the connection's thread.
    private static func transaction<T>(on connection: PostgresConnection, readOnly: Bool, url: PostgresURL, logger: Logger,
                                       _ body: (PostgresSession) throws -> T) throws -> T {
        let session = PostgresSession(connection: connection, url: url, logger: logger)
        do {
            try session.execute(readOnly ? "BEGIN ISOLATION LEVEL REPEATABLE READ READ ONLY" : "BEGIN")
        } catch {
            if connection.isClosed { throw StaleConnection(error: error) }
            throw error
        }
        do {
            let result = try body(session)
            // The body caught a statement's error and went on: PostgreSQL has aborted the
            // transaction, and COMMIT would quietly roll it back.
            if let failure = session.failure { throw failure }
            try session.execute("COMMIT")
            return result
        } catch {
            do {
                try PostgresSession(connection: connection, url: url, logger: logger).execute("ROLLBACK")
            } catch {
                // The connection's state is unknown: drop it (the pool forgets closed connections).
                try? connection.close().wait()
            }
            // A deadlock or serialization failure the body wrapped in an error of its own is still
            // one: report it as itself so that the transaction runs again.
            if let failure = session.failure, PostgresErrors.isRetryable(failure) { throw failure }
            throw error
        }
    }

    /// The value of a server setting (`current_setting(name)`), for tests and diagnostics.
    package func setting(_ name: String) async throws -> String {
        try await run(readOnly: true) { session in
            guard let row = try session.row("SELECT current_setting($1) AS value", [.text(name)]) else {
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
