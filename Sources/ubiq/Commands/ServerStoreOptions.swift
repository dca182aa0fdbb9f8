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

    @Option(help: "Where asset content is kept: a folder, or s3://BUCKET/PREFIX (required with --database, shared by every server on it; default with --data: DATA/blobs; default $UBIQUITY_SERVER_BLOBS).")
    var blobs: String?

    @Option(name: .customLong("s3-endpoint"), help: "With --blobs s3://…: the S3-compatible server's URL (MinIO, Garage, SeaweedFS, Ceph RGW; default AWS's for the region).")
    var s3Endpoint: String?

    @Option(name: .customLong("s3-region"), help: "With --blobs s3://…: the region requests are signed for (default us-east-1).")
    var s3Region: String?

    @Option(name: .customLong("s3-addressing"), help: "With --blobs s3://…: path (endpoint/BUCKET/KEY, the default with --s3-endpoint) or virtual-host (BUCKET.endpoint/KEY, the default for AWS).")
    var s3Addressing: String?

    @Option(name: .customLong("s3-credentials"), help: "With --blobs s3://…: an AWS shared credentials file (profile $AWS_PROFILE or default); default $AWS_ACCESS_KEY_ID / $AWS_SECRET_ACCESS_KEY / $AWS_SESSION_TOKEN, else ~/.aws/credentials.")
    var s3Credentials: String?

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
    /// the data folder's `blobs`; a bucket for `s3://…`, with the `--s3-*` options.
    /// - Throws: `invalidArgument` with PostgreSQL and no `--blobs`, or naming the option that is wrong.
    func blobLocation() throws -> BlobLocation {
        let given = blobs ?? ProcessInfo.processInfo.environment["UBIQUITY_SERVER_BLOBS"].flatMap { $0.isEmpty ? nil : $0 }
        if let given {
            return try Self.blobLocation(given, endpoint: s3Endpoint, region: s3Region, addressing: s3Addressing, credentials: s3Credentials, option: "--s3")
        }
        if s3Endpoint != nil || s3Region != nil || s3Addressing != nil || s3Credentials != nil {
            throw UbiquityError(.invalidArgument, "the --s3-* options need --blobs s3://BUCKET/PREFIX")
        }
        if postgresURL != nil {
            throw UbiquityError(.invalidArgument, "--database needs --blobs DIR or --blobs s3://BUCKET/PREFIX: where asset content is kept (every server on the database must use the same)")
        }
        return .folder(URL(fileURLWithPath: try dataDirectory()).appendingPathComponent("blobs").path)
    }

    /// A folder, or a bucket (`s3://BUCKET/PREFIX`) with its options (named `OPTION-endpoint`…
    /// in errors), credentials as AWS's tools find them.
    /// - Throws: `invalidArgument` naming what is wrong.
    static func blobLocation(_ text: String, endpoint: String?, region: String?, addressing: String?, credentials: String?,
                             option: String) throws -> BlobLocation {
        guard S3Location.isBucketURL(text) else {
            if endpoint != nil || region != nil || addressing != nil || credentials != nil {
                throw UbiquityError(.invalidArgument, "the \(option)-* options need a bucket (s3://BUCKET/PREFIX), not the folder \(text)")
            }
            return .folder(try CLI.absolutePath(text))
        }
        let style = try addressing.map { value in
            guard let style = S3Location.Addressing(rawValue: value) else {
                throw UbiquityError(.invalidArgument, "\(option)-addressing \(value): expected path or virtual-host")
            }
            return style
        }
        let location = try S3Location(url: text, endpoint: endpoint, region: region, addressing: style)
        return .bucket(location, try .resolve(file: try credentials.map(CLI.absolutePath), environment: ProcessInfo.processInfo.environment))
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
