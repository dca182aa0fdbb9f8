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

/// Runs statements on one leased connection, inside one transaction. Every statement is awaited
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
        do {
            var rows: [PostgresRandomAccessRow] = []
            for try await row in try await connection.query(PostgresQuery(unsafeSQL: sql, binds: binds), logger: logger) {
                rows.append(row.makeRandomAccess())
            }
            return rows
        } catch {
            let mapped = PostgresErrors.statementError(error, sql: sql, url: url)
            if failure == nil { failure = mapped }
            throw mapped
        }
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
