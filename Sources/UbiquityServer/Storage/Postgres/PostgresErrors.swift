// SPDX-License-Identifier: Apache-2.0
import PostgresNIO
import UbiquityCore

/// Turns postgres-nio's errors (whose descriptions hide everything) into `UbiquityError`s that say
/// what happened: the SQLSTATE, the server's message and the statement (never its values).
enum PostgresErrors {
    /// SQLSTATEs after which the whole transaction is run again.
    static let retryableStates: Set<String> = ["40P01", "40001"]

    /// The SQLSTATE of a server error, looking through `UbiquityError.underlying`.
    static func sqlState(_ error: any Error) -> String? {
        if let error = error as? PSQLError { return error.serverInfo?[.sqlState] }
        if let error = error as? UbiquityError, let underlying = error.underlying { return sqlState(underlying) }
        return nil
    }

    /// Whether running the transaction again may succeed (deadlock, serialization failure).
    static func isRetryable(_ error: any Error) -> Bool {
        sqlState(error).map(retryableStates.contains) ?? false
    }

    private static let connectionCodes: Set<PSQLError.Code> = [
        .connectionError, .serverClosedConnection, .clientClosedConnection, .uncleanShutdown, .poolClosed,
        .sslUnsupported, .failedToAddSSLHandler, .receivedUnencryptedDataAfterSSLRequest,
    ]

    /// An error of a statement, as a `UbiquityError`.
    static func statementError(_ error: any Error, sql: String, url: PostgresURL) -> UbiquityError {
        if let error = error as? UbiquityError { return error }
        guard let error = error as? PSQLError else {
            return UbiquityError(.io, "PostgreSQL at \(url.displayName): \(error) in: \(shortened(sql))", underlying: error)
        }
        if connectionCodes.contains(error.code) {
            return UbiquityError(.serviceUnavailable, "lost the connection to PostgreSQL at \(url.hostDescription) (\(error.code))", underlying: error)
        }
        let state = error.serverInfo?[.sqlState] ?? "?"
        let message = error.serverInfo?[.message] ?? "\(error.code)"
        let code: UbiquityError.Code
        switch state {
        case "23505": code = .alreadyExists
        case "40P01", "40001": code = .conflict
        case "22021", "22P05", "54000": code = .invalidArgument
        case _ where state.hasPrefix("08") || state.hasPrefix("57P") || state == "53300": code = .serviceUnavailable
        default: code = .io
        }
        return UbiquityError(code, "PostgreSQL at \(url.displayName) failed (\(state) \(message)) in: \(shortened(sql))", underlying: error)
    }

    /// An error opening a connection: the server is unreachable (`serviceUnavailable`, naming the
    /// host), refuses the credentials (`permissionDenied`) or has no such database (`notFound`).
    static func connectError(_ error: any Error, url: PostgresURL) -> UbiquityError {
        if let error = error as? UbiquityError { return error }
        if let error = error as? PSQLError, let state = error.serverInfo?[.sqlState] {
            let message = error.serverInfo?[.message] ?? "\(error.code)"
            switch state {
            case "28P01", "28000":
                return UbiquityError(.permissionDenied, "PostgreSQL at \(url.hostDescription) refused user \(url.user): \(message)", underlying: error)
            case "3D000":
                return UbiquityError(.notFound, "PostgreSQL at \(url.hostDescription) has no database \(url.database): \(message)", underlying: error)
            default:
                return UbiquityError(.serviceUnavailable, "cannot connect to PostgreSQL at \(url.hostDescription): \(state) \(message)", underlying: error)
            }
        }
        var detail = "\(error)"
        if let error = error as? PSQLError {
            detail = "\(error.code)" + (error.underlying.map { ": \($0)" } ?? "")
        }
        return UbiquityError(.serviceUnavailable, "cannot connect to PostgreSQL at \(url.hostDescription) (\(detail))", underlying: error)
    }

    private static func shortened(_ sql: String) -> String {
        let flat = sql.split(whereSeparator: \.isWhitespace).joined(separator: " ")
        return flat.count > 160 ? String(flat.prefix(160)) + "…" : flat
    }
}
