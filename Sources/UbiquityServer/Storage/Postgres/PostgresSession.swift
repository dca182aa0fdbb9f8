// SPDX-License-Identifier: Apache-2.0
import Logging
import NIOCore
import PostgresNIO
import UbiquityCore

/// A statement parameter. Values always travel as parameters, never inside the SQL text.
enum PostgresParameter {
    case int(Int64?)
    case double(Double?)
    case text(String?)
    case bool(Bool)
    case ints([Int64])
    case texts([String])
    case bytes([UInt8])
}

/// Runs statements on one leased connection, inside one transaction (or, for
/// `PostgresRecordStore.readWithoutSnapshot`, outside one). Every statement is awaited
/// (postgres-nio's async API); nothing blocks a thread.
final class PostgresSession {
    let connection: PostgresConnection
    let url: PostgresURL
    let logger: Logger
    /// The first statement error: after it PostgreSQL refuses everything but `ROLLBACK`, so a
    /// transaction whose body swallowed it must not report success.
    private(set) var failure: UbiquityError?

    init(connection: PostgresConnection, url: PostgresURL, logger: Logger) {
        self.connection = connection
        self.url = url
        self.logger = logger
    }

    /// Runs `sql` with `parameters` (`$1`, `$2`, …) and returns its rows.
    @discardableResult
    func rows(_ sql: String, _ parameters: [PostgresParameter] = []) async throws -> [PostgresRandomAccessRow] {
        do {
            var rows: [PostgresRandomAccessRow] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: Self.bindings(parameters)), logger: logger) {
                rows.append(row.makeRandomAccess())
            }
            return rows
        } catch {
            throw failed(error, sql: sql)
        }
    }

    /// Runs the prepared statement `statement` with `parameters` and returns its rows.
    func rows<Statement: PostgresStatement>(_ statement: Statement.Type, _ parameters: [PostgresParameter]) async throws -> [PostgresRandomAccessRow] {
        do {
            var rows: [PostgresRandomAccessRow] = []
            for try await row in try await connection.execute(PostgresPrepared<Statement>(bindings: Self.bindings(parameters)), logger: logger) {
                rows.append(row)
            }
            return rows
        } catch {
            throw failed(error, sql: Statement.sql)
        }
    }

    /// Runs the prepared statement `statement` and returns its first row, if any.
    func row<Statement: PostgresStatement>(_ statement: Statement.Type, _ parameters: [PostgresParameter]) async throws -> PostgresRandomAccessRow? {
        try await rows(statement, parameters).first
    }

    /// A statement's error as a `UbiquityError`, remembered as the transaction's failure.
    private func failed(_ error: any Error, sql: String) -> UbiquityError {
        let mapped = PostgresErrors.statementError(error, sql: sql, url: url)
        if failure == nil { failure = mapped }
        return mapped
    }

    private static func bindings(_ parameters: [PostgresParameter]) -> PostgresBindings {
        var binds = PostgresBindings(capacity: parameters.count)
        for parameter in parameters {
            switch parameter {
            case .int(let value): binds.append(value)
            case .double(let value): binds.append(value)
            case .text(let value): binds.append(value)
            case .bool(let value): binds.append(value)
            case .ints(let values): binds.append(values)
            case .texts(let values): binds.append(values)
            case .bytes(let value): binds.append(ByteBuffer(bytes: value))
            }
        }
        return binds
    }

    /// Runs `sql` and returns its first row, if any.
    func row(_ sql: String, _ parameters: [PostgresParameter] = []) async throws -> PostgresRandomAccessRow? {
        try await rows(sql, parameters).first
    }

    /// Runs `sql` for its effect.
    func execute(_ sql: String, _ parameters: [PostgresParameter] = []) async throws {
        try await rows(sql, parameters)
    }
}

extension PostgresRandomAccessRow {
    /// The value of a column, decoded.
    func value<T: PostgresDecodable>(_ column: String, as type: T.Type = T.self) throws -> T {
        do {
            return try self[column].decode(T.self)
        } catch {
            throw UbiquityError(.protocolError, "cannot read column \(column) of a PostgreSQL row as \(T.self)", underlying: error)
        }
    }
}
