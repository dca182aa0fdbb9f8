// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquityServer

/// Where `ubiq serve` and `ubiq admin` keep the server's data: an embedded SQLite store in
/// `--data DIR` (the default), or PostgreSQL with `--database postgres://…`.
struct ServerStoreOptions: ParsableArguments {
    @Option(help: "The server's data folder (embedded SQLite; default $UBIQUITY_SERVER_DATA or $XDG_DATA_HOME/ubiquity/server).")
    var data: String?

    @Option(help: "A PostgreSQL URL (postgres://user:password@host:port/db, or ?host=/socket/dir) instead of --data; default $UBIQUITY_SERVER_DATABASE.")
    var database: String?

    @Option(help: "With --database: the PostgreSQL schema to use (created when missing; default $UBIQUITY_SERVER_DATABASE_SCHEMA, else the server's search_path).")
    var schema: String?

    func validate() throws {
        if data != nil, database != nil {
            throw ValidationError("give --data (SQLite) or --database (PostgreSQL), not both")
        }
    }

    /// Opens the store.
    func open(logger: Logger) async throws -> any RecordStore {
        let environment = ProcessInfo.processInfo.environment
        if let url = database ?? (data == nil ? environment["UBIQUITY_SERVER_DATABASE"].flatMap { $0.isEmpty ? nil : $0 } : nil) {
            let schema = self.schema ?? environment["UBIQUITY_SERVER_DATABASE_SCHEMA"].flatMap { $0.isEmpty ? nil : $0 }
            return try await PostgresRecordStore(url: url, schema: schema, logger: logger)
        }
        let directory = try data.map(CLI.absolutePath) ?? environment["UBIQUITY_SERVER_DATA"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? UbiquityPaths().dataDirectory.appendingPathComponent("server").path
        return try SQLiteRecordStore(directory: URL(fileURLWithPath: directory), logger: logger)
    }
}
