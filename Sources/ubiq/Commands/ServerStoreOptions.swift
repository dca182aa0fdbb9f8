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

    @Option(help: "The folder of asset content (required with --database, shared by every server on it; default with --data: DATA/blobs; default $UBIQUITY_SERVER_BLOBS).")
    var blobs: String?

    func validate() throws {
        if data != nil, database != nil {
            throw ValidationError("give --data (SQLite) or --database (PostgreSQL), not both")
        }
    }

    /// The PostgreSQL URL, when the store is PostgreSQL.
    private var postgresURL: String? {
        database ?? (data == nil ? ProcessInfo.processInfo.environment["UBIQUITY_SERVER_DATABASE"].flatMap { $0.isEmpty ? nil : $0 } : nil)
    }

    /// The SQLite data folder.
    private func dataDirectory() throws -> String {
        try data.map(CLI.absolutePath) ?? ProcessInfo.processInfo.environment["UBIQUITY_SERVER_DATA"].flatMap { $0.hasPrefix("/") ? $0 : nil }
            ?? UbiquityPaths().dataDirectory.appendingPathComponent("server").path
    }

    /// Where asset content is kept: `--blobs`, else `$UBIQUITY_SERVER_BLOBS`, else (SQLite)
    /// the data folder's `blobs`.
    /// - Throws: `invalidArgument` with PostgreSQL and no `--blobs`.
    func blobsDirectory() throws -> String {
        if let blobs { return try CLI.absolutePath(blobs) }
        if let blobs = ProcessInfo.processInfo.environment["UBIQUITY_SERVER_BLOBS"], !blobs.isEmpty { return try CLI.absolutePath(blobs) }
        if postgresURL != nil {
            throw UbiquityError(.invalidArgument, "--database needs --blobs DIR: the folder where asset content is kept (every server on the database must use the same one)")
        }
        return URL(fileURLWithPath: try dataDirectory()).appendingPathComponent("blobs").path
    }

    /// Opens the store.
    func open(logger: Logger) async throws -> any RecordStore {
        let environment = ProcessInfo.processInfo.environment
        if let url = postgresURL {
            let schema = self.schema ?? environment["UBIQUITY_SERVER_DATABASE_SCHEMA"].flatMap { $0.isEmpty ? nil : $0 }
            return try await PostgresRecordStore(url: url, schema: schema, logger: logger)
        }
        return try SQLiteRecordStore(directory: URL(fileURLWithPath: try dataDirectory()), logger: logger)
    }
}
