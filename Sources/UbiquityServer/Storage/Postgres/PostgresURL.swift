// SPDX-License-Identifier: Apache-2.0
import Foundation
import NIOCore
import NIOSSL
import PostgresNIO
import UbiquityCore

/// A PostgreSQL connection URL, parsed the way libpq reads one:
///
/// - `postgres://user:password@host:port/database` (`postgresql://` too; user, password and
///   database percent-decoded; `[::1]` for IPv6; port 5432 when left out; the database defaults
///   to the user name, the user to the process's user name);
/// - a Unix socket with `?host=/path/to/dir` (or a percent-encoded path as the host): the socket
///   file is `DIR/.s.PGSQL.PORT`; with no host at all, `/var/run/postgresql`;
/// - query parameters `host`, `port`, `user`, `password`, `dbname`, `sslmode` (`disable`, `allow`,
///   `prefer`, `require`, `verify-ca`, `verify-full`), `connect_timeout` (seconds) and
///   `application_name`. Anything else is refused, naming the parameter.
struct PostgresURL: Sendable, Equatable {
    /// Where the server is.
    enum Endpoint: Sendable, Equatable {
        case tcp(host: String, port: Int)
        /// The socket's folder and the port that names the socket file.
        case unixSocket(directory: String, port: Int)
    }

    /// How TLS is used (libpq's `sslmode`).
    enum TLSMode: String, Sendable, Equatable {
        case disable, allow, prefer, require
        case verifyCA = "verify-ca"
        case verifyFull = "verify-full"
    }

    var endpoint: Endpoint
    var user: String
    var password: String?
    var database: String
    var tlsMode: TLSMode = .prefer
    /// Seconds to wait for a connection.
    var connectTimeout: Int64 = 10
    var applicationName: String?

    /// `HOST:PORT/DB` (the socket's folder as the host): never the password.
    var displayName: String {
        switch endpoint {
        case .tcp(let host, let port): return "\(host.contains(":") ? "[\(host)]" : host):\(port)/\(database)"
        case .unixSocket(let directory, let port): return "\(directory):\(port)/\(database)"
        }
    }

    /// The host (or the socket's folder), for error messages.
    var hostDescription: String {
        switch endpoint {
        case .tcp(let host, let port): return "\(host.contains(":") ? "[\(host)]" : host):\(port)"
        case .unixSocket(let directory, let port): return "\(directory)/.s.PGSQL.\(port)"
        }
    }

    /// Parses `text`; an error names what is wrong (never the password).
    init(_ text: String) throws {
        func invalid(_ message: String) -> UbiquityError {
            UbiquityError(.invalidArgument, "invalid PostgreSQL URL: \(message) (expected postgres://user:password@host:port/database)")
        }
        guard let schemeEnd = text.range(of: "://") else { throw invalid("no scheme") }
        let scheme = text[..<schemeEnd.lowerBound].lowercased()
        guard scheme == "postgres" || scheme == "postgresql" else {
            throw invalid("the scheme is \(scheme.isEmpty ? "empty" : "'\(scheme)'"), not postgres:// or postgresql://")
        }
        var rest = Substring(text[schemeEnd.upperBound...])
        if rest.contains("#") { throw invalid("it has a fragment ('#…')") }
        var query: Substring = ""
        if let mark = rest.firstIndex(of: "?") {
            query = rest[rest.index(after: mark)...]
            rest = rest[..<mark]
        }
        var authority = rest
        var path: Substring = ""
        if let slash = rest.firstIndex(of: "/") {
            authority = rest[..<slash]
            path = rest[rest.index(after: slash)...]
        }

        var user: String?
        var password: String?
        var hostPort = authority
        if let at = authority.lastIndex(of: "@") {
            let userInfo = authority[..<at]
            hostPort = authority[authority.index(after: at)...]
            if let colon = userInfo.firstIndex(of: ":") {
                user = try Self.decode(userInfo[..<colon], what: "user name", invalid)
                password = try Self.decode(userInfo[userInfo.index(after: colon)...], what: "password", invalid)
            } else {
                user = try Self.decode(userInfo, what: "user name", invalid)
            }
        }

        var host: String?
        var port: Int?
        if hostPort.hasPrefix("[") {
            guard let close = hostPort.firstIndex(of: "]") else { throw invalid("an IPv6 host has no closing ']'") }
            host = String(hostPort[hostPort.index(after: hostPort.startIndex)..<close])
            let after = hostPort[hostPort.index(after: close)...]
            if !after.isEmpty {
                guard after.hasPrefix(":") else { throw invalid("unexpected '\(after)' after the IPv6 host") }
                port = try Self.port(after.dropFirst(), invalid)
            }
        } else if let colon = hostPort.lastIndex(of: ":") {
            host = try Self.decode(hostPort[..<colon], what: "host", invalid)
            port = try Self.port(hostPort[hostPort.index(after: colon)...], invalid)
        } else if !hostPort.isEmpty {
            host = try Self.decode(hostPort, what: "host", invalid)
        }
        if host?.isEmpty == true { host = nil }
        if host?.contains(",") == true { throw invalid("several hosts are not supported") }

        var database = path.isEmpty ? nil : try Self.decode(path, what: "database name", invalid)
        if database?.contains("/") == true { throw invalid("the database name '\(database!)' contains '/'") }

        var tlsMode = TLSMode.prefer
        var connectTimeout: Int64 = 10
        var applicationName: String?
        for pair in query.split(separator: "&", omittingEmptySubsequences: true) {
            let parts = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let name = try Self.decode(parts[0], what: "parameter name", invalid)
            let value = parts.count > 1 ? try Self.decode(parts[1], what: "value of \(name)", invalid) : ""
            switch name {
            case "host": host = value.isEmpty ? nil : value
            case "port": port = try Self.port(Substring(value), invalid)
            case "user": user = value
            case "password": password = value
            case "dbname": database = value
            case "sslmode":
                guard let mode = TLSMode(rawValue: value) else {
                    throw invalid("sslmode '\(value)' is not one of disable, allow, prefer, require, verify-ca, verify-full")
                }
                tlsMode = mode
            case "connect_timeout":
                guard let seconds = Int64(value), seconds >= 0 else { throw invalid("connect_timeout '\(value)' is not a number of seconds") }
                connectTimeout = seconds == 0 ? 10 : seconds
            case "application_name": applicationName = value
            default: throw invalid("unsupported parameter '\(name)'")
            }
        }

        let resolvedUser = (user?.isEmpty == false ? user : nil) ?? NSUserName()
        guard !resolvedUser.isEmpty else { throw invalid("no user name") }
        self.user = resolvedUser
        self.password = password?.isEmpty == true ? nil : password
        self.database = (database?.isEmpty == false ? database : nil) ?? resolvedUser
        let resolvedPort = port ?? 5432
        let resolvedHost = host ?? "/var/run/postgresql"
        if resolvedHost.hasPrefix("/") {
            let socket = "\(resolvedHost)/.s.PGSQL.\(resolvedPort)"
            guard socket.utf8.count < 108 else { throw invalid("the socket path \(socket) is longer than 107 bytes") }
            endpoint = .unixSocket(directory: resolvedHost, port: resolvedPort)
            // libpq never uses TLS on a Unix socket.
            self.tlsMode = .disable
        } else {
            endpoint = .tcp(host: resolvedHost, port: resolvedPort)
            self.tlsMode = tlsMode
        }
        self.connectTimeout = connectTimeout
        self.applicationName = applicationName
    }

    private static func decode(_ text: Substring, what: String, _ invalid: (String) -> UbiquityError) throws -> String {
        guard let decoded = String(text).removingPercentEncoding else { throw invalid("the \(what) is not valid percent-encoding") }
        return decoded
    }

    private static func port(_ text: Substring, _ invalid: (String) -> UbiquityError) throws -> Int {
        guard let port = Int(text), (1...65535).contains(port) else { throw invalid("the port '\(text)' is not a number from 1 to 65535") }
        return port
    }

    /// The postgres-nio configuration for one connection, with `startupParameters` sent at startup.
    func configuration(startupParameters: [(String, String)]) throws -> PostgresConnection.Configuration {
        var configuration: PostgresConnection.Configuration
        switch endpoint {
        case .unixSocket(let directory, let port):
            configuration = .init(unixSocketPath: "\(directory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        case .tcp(let host, let port):
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: try tls())
        }
        configuration.options.connectTimeout = .seconds(connectTimeout)
        var parameters = startupParameters
        if let applicationName { parameters.append(("application_name", applicationName)) }
        configuration.options.additionalStartupParameters = parameters
        return configuration
    }

    /// The configuration of a `PostgresClient` (the record store's pool) of at most
    /// `maximumConnections` connections, each opened with `startupParameters` (and
    /// `application_name` when the URL names one).
    func clientConfiguration(startupParameters: [(String, String)], maximumConnections: Int) -> PostgresClient.Configuration {
        var configuration: PostgresClient.Configuration
        switch endpoint {
        case .unixSocket(let directory, let port):
            configuration = .init(unixSocketPath: "\(directory)/.s.PGSQL.\(port)", username: user, password: password, database: database)
        case .tcp(let host, let port):
            let tls: PostgresClient.Configuration.TLS = switch tlsVerification {
            case nil: .disable
            case .some((let verification, let required)):
                required ? .require(Self.tlsConfiguration(verification)) : .prefer(Self.tlsConfiguration(verification))
            }
            configuration = .init(host: host, port: port, username: user, password: password, database: database, tls: tls)
        }
        configuration.options.connectTimeout = .seconds(connectTimeout)
        configuration.options.maximumConnections = max(1, maximumConnections)
        var parameters = startupParameters
        if let applicationName { parameters.append(("application_name", applicationName)) }
        configuration.options.additionalStartupParameters = parameters
        return configuration
    }

    /// How `sslmode` checks the server (nil: no TLS) and whether TLS is required.
    private var tlsVerification: (CertificateVerification, required: Bool)? {
        switch tlsMode {
        case .disable, .allow: nil
        // libpq's prefer and require do not check the certificate; verify-ca skips the host name.
        case .prefer: (.none, false)
        case .require: (.none, true)
        case .verifyCA: (.noHostnameVerification, true)
        case .verifyFull: (.fullVerification, true)
        }
    }

    private static func tlsConfiguration(_ verification: CertificateVerification) -> TLSConfiguration {
        var tls = TLSConfiguration.makeClientConfiguration()
        tls.certificateVerification = verification
        return tls
    }

    private func tls() throws -> PostgresConnection.Configuration.TLS {
        guard let (verification, required) = tlsVerification else { return .disable }
        let context: NIOSSLContext
        do {
            context = try NIOSSLContext(configuration: Self.tlsConfiguration(verification))
        } catch {
            throw UbiquityError(.io, "cannot set up TLS for PostgreSQL at \(hostDescription)", underlying: error)
        }
        return required ? .require(context) : .prefer(context)
    }
}
