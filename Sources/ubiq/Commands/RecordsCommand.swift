// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquityWire
import UbiquityCloudKit

/// `ubiq records save|fetch|delete|query|zones|changes`: CloudKit records on a server that
/// speaks CloudKit Web Services (`ubiq serve`), from the shell.
struct RecordsCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "records",
        abstract: "Save, fetch, query and sync CloudKit records on a CloudKit Web Services server.",
        discussion: """
            Talks to a server that speaks CloudKit Web Services (`ubiq serve`, or any compatible \
            one). Every subcommand takes the connection options: --server URL ($UBIQUITY_SERVER), \
            --container ID ($UBIQUITY_CLOUDKIT_CONTAINER), --environment development|production, \
            --database public|private|shared (default: private with a web-auth token, public \
            otherwise), --zone NAME (default: the default zone), and credentials: --api-token \
            ($UBIQUITY_API_TOKEN) with --web-auth-token ($UBIQUITY_WEB_AUTH_TOKEN) for a signed-in \
            user, or --key-id and --private-key FILE for a server-to-server key.

            Records are read and written as CloudKit's record dictionaries: \
            {"recordName":"mei","recordType":"Artist","fields":{"name":{"value":"Mei"}}}. With \
            --json every record is printed as one such dictionary per line; otherwise as a readable \
            summary.

            Exit codes: 0 success; 1 failure (some records failed, or not found); 64 bad usage or \
            a malformed record or predicate; 69 the server cannot be reached or is unavailable; \
            75 temporary failure (rate limited, network dropped: try again); 77 not signed in or \
            not allowed.

            Examples:
              export UBIQUITY_SERVER=http://localhost:8080
              export UBIQUITY_CLOUDKIT_CONTAINER=iCloud.com.example.notes
              ubiq records save --json '{"recordType":"Artist","recordName":"mei",
                                         "fields":{"name":{"value":"Mei Chen"}}}'
              ubiq records fetch mei --json
              ubiq records query Artist 'name BEGINSWITH %@ AND age > %d' Mei 30 --all
              ubiq records zones create Notes --database private
              ubiq records changes --zone Notes --token "$(cat notes.token)"
            """,
        subcommands: [
            RecordsSave.self, RecordsFetch.self, RecordsDelete.self, RecordsQuery.self, RecordsZones.self, RecordsChanges.self,
        ]
    )
}

/// The options every `ubiq records` subcommand takes: where the server is and who is asking.
struct CloudKitConnectionOptions: ParsableArguments {
    @Option(help: "The server's URL, e.g. http://localhost:8080 (default: $UBIQUITY_SERVER).")
    var server: String?

    @Option(help: "The container identifier, e.g. iCloud.com.example.notes (default: $UBIQUITY_CLOUDKIT_CONTAINER).")
    var container: String?

    @Option(help: "development or production.")
    var environment: String = "development"

    @Option(help: "public, private or shared (default: private with a web-auth token, public otherwise).")
    var database: String?

    @Option(help: "The record zone (default: the default zone).")
    var zone: String?

    @Option(name: .customLong("api-token"), help: "The container's API token (default: $UBIQUITY_API_TOKEN).")
    var apiToken: String?

    @Option(name: .customLong("web-auth-token"), help: "The signed-in user's web-auth token (default: $UBIQUITY_WEB_AUTH_TOKEN).")
    var webAuthToken: String?

    @Option(name: .customLong("key-id"), help: "A server-to-server key ID (use with --private-key).")
    var keyID: String?

    @Option(name: .customLong("private-key"), help: "The server-to-server key's PEM file (P-256).")
    var privateKey: String?

    @OptionGroup var logging: LoggingOptions

    private static var environmentVariables: [String: String] { ProcessInfo.processInfo.environment }

    private static func value(_ option: String?, _ variable: String) -> String? {
        if let option, !option.isEmpty { return option }
        if let value = environmentVariables[variable], !value.isEmpty { return value }
        return nil
    }

    var resolvedServer: String? { Self.value(server, "UBIQUITY_SERVER") }
    var resolvedContainer: String? { Self.value(container, "UBIQUITY_CLOUDKIT_CONTAINER") }
    var resolvedAPIToken: String? { Self.value(apiToken, "UBIQUITY_API_TOKEN") }
    var resolvedWebAuthToken: String? { Self.value(webAuthToken, "UBIQUITY_WEB_AUTH_TOKEN") }

    func validate() throws {
        guard let server = resolvedServer else {
            throw ValidationError("no server: give --server URL or set UBIQUITY_SERVER (the address `ubiq serve` listens on)")
        }
        guard let url = URL(string: server), let scheme = url.scheme, ["http", "https"].contains(scheme.lowercased()), url.host != nil else {
            throw ValidationError("--server '\(server)': expected an http:// or https:// URL such as http://localhost:8080")
        }
        guard resolvedContainer != nil else {
            throw ValidationError("no container: give --container ID or set UBIQUITY_CLOUDKIT_CONTAINER (e.g. iCloud.com.example.notes)")
        }
        guard CloudKitEnvironment(rawValue: environment) != nil else {
            throw ValidationError("--environment '\(environment)': expected development or production")
        }
        if let database, CloudDatabase.Scope(rawValue: database) == nil {
            throw ValidationError("--database '\(database)': expected public, private or shared")
        }
        if (keyID == nil) != (privateKey == nil) {
            throw ValidationError("a server-to-server key needs both --key-id and --private-key FILE")
        }
        if keyID == nil, resolvedAPIToken == nil {
            throw ValidationError("no credentials: give --api-token (or set UBIQUITY_API_TOKEN), or --key-id and --private-key FILE")
        }
        if keyID != nil, resolvedAPIToken != nil, apiToken != nil {
            throw ValidationError("give either --api-token or --key-id/--private-key, not both")
        }
        if let zone, zone.isEmpty { throw ValidationError("--zone: expected a zone name") }
    }

    /// The database scope asked for, or the default.
    var scope: CloudDatabase.Scope {
        if let database, let scope = CloudDatabase.Scope(rawValue: database) { return scope }
        return keyID == nil && resolvedWebAuthToken != nil ? .private : .public
    }

    /// The zone asked for.
    var zoneID: RecordZone.ID { RecordZone.ID(zoneName: zone ?? RecordZone.ID.defaultZoneName) }

    /// The container, after ``validate()``.
    func makeContainer() throws -> CloudContainer {
        let credentials: CloudContainer.Credentials
        if let keyID, let privateKey {
            let path = privateKey.hasPrefix("/") ? privateKey : FileManager.default.currentDirectoryPath + "/" + privateKey
            guard let pem = FileManager.default.contents(atPath: path) else {
                throw ValidationError("--private-key '\(privateKey)': cannot read the file")
            }
            credentials = .serverToServer(keyID: keyID, privateKeyPEM: String(decoding: pem, as: UTF8.self))
        } else {
            credentials = .apiToken(resolvedAPIToken ?? "", webAuthToken: resolvedWebAuthToken)
        }
        var logger = Logger(label: "ubiq.records")
        logger.logLevel = logging.level
        return CloudContainer(identifier: resolvedContainer ?? "", serverURL: URL(string: resolvedServer ?? "")!,
                              environment: CloudKitEnvironment(rawValue: environment) ?? .development,
                              credentials: credentials, logger: logger)
    }

    /// The database, after ``validate()``.
    func makeDatabase() throws -> CloudDatabase {
        CLI.bootstrapLogging(level: logging.level)
        return try makeContainer().database(with: scope)
    }
}

/// Output, error messages and exit codes shared by the `ubiq records` subcommands.
enum RecordsCLI {
    /// Exit code for "not signed in or not allowed" (sysexits EX_NOPERM).
    static let notPermitted: Int32 = 77

    /// Prints `error` as `ubiq records SUB: message` with a hint of what to fix, and returns
    /// the exit code.
    static func fail(_ error: any Error, command: String) -> ExitCode {
        if let exit = error as? ExitCode { return exit }
        guard let error = error as? CloudKitError else { return CLI.report(error, command: "records \(command)") }
        FileHandle.standardError.write(Data("ubiq records \(command): \(message(for: error))\n".utf8))
        return exitCode(for: error)
    }

    /// The error's description and a hint.
    static func message(for error: CloudKitError) -> String {
        var text = error.description
        switch error.code {
        case .notAuthenticated:
            text += error.redirectURL.map { "; sign in at \($0) and pass the token with --web-auth-token" }
                ?? "; check the credentials: --api-token, with a signed-in user's --web-auth-token for the private and shared databases, or --key-id with its --private-key"
        case .permissionFailure:
            text += "; the credentials may not do this here (server-to-server keys and API tokens alone reach only the public database)"
        case .serverRecordChanged:
            text += "; the server's record changed since it was fetched: fetch it again (`ubiq records fetch`), or save with --policy changed-keys"
        case .changeTokenExpired:
            text += "; fetch again without --token to start over"
        case .zoneNotFound:
            text += "; create it with `ubiq records zones create NAME`, or check --zone and --database"
        case .badContainer:
            text += "; check --server and --container"
        default: break
        }
        return text
    }

    /// The exit code for a CloudKit error.
    static func exitCode(for error: CloudKitError) -> ExitCode {
        switch error.code {
        case .invalidArguments where error.serverErrorCode == nil: return ExitCode(64)
        case .networkUnavailable, .serviceUnavailable, .badContainer: return ExitCode(CLI.unavailable)
        case .networkFailure, .requestRateLimited, .zoneBusy, .serverResponseLost: return ExitCode(CLI.timedOut)
        case .notAuthenticated, .permissionFailure: return ExitCode(notPermitted)
        default: return .failure
        }
    }

    /// A readable summary of a record: its type, name, tag and fields, one per line.
    static func summary(_ record: Record) -> String {
        var head = "\(record.recordType) \(record.recordID.recordName)"
        var notes: [String] = []
        if !record.recordID.zoneID.isDefault { notes.append("zone \(record.recordID.zoneID.zoneName)") }
        if let tag = record.recordChangeTag { notes.append("tag \(tag)") }
        if let modified = record.modificationDate { notes.append("modified \(modified.formatted(.iso8601))") }
        if !notes.isEmpty { head += " (" + notes.joined(separator: ", ") + ")" }
        let keys = record.allKeys()
        let width = keys.map(\.count).max() ?? 0
        let lines = keys.map { key in
            "  " + key.padding(toLength: width, withPad: " ", startingAt: 0) + "  " + (record[key]?.description ?? "")
        }
        return ([head] + lines).joined(separator: "\n")
    }

    /// Prints a record as JSON or as a summary.
    static func print(_ record: Record, json: Bool) {
        CLI.printLine(json ? record.cloudKitJSON() : summary(record))
    }

    /// Record IDs for names in `zone`.
    static func ids(_ names: [String], zone: RecordZone.ID) -> [Record.ID] {
        names.map { Record.ID(recordName: $0, zoneID: zone) }
    }

    /// A comma-separated key list (`--keys a,b`); `--keys ''` asks for no fields.
    static func keys(_ text: String?) -> [String]? {
        text.map { $0.split(separator: ",").map { $0.trimmingCharacters(in: .whitespaces) }.filter { !$0.isEmpty } }
    }
}
