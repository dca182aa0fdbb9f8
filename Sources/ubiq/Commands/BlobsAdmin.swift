// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import UbiquityServer

/// `ubiq admin blobs`: moving asset content between a folder and a bucket, and checking it.
struct BlobsAdmin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "blobs", abstract: "Move asset content to another store (a folder or an S3 bucket), or check it.",
        subcommands: [BlobsMigrate.self, BlobsVerify.self])
}

/// `ubiq admin blobs migrate --to DIR|s3://…`.
struct BlobsMigrate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "migrate", abstract: "Copy every asset from --blobs to --to, verified by checksum.",
        discussion: """
            Copies each asset the target lacks, checking it by its checksum as it is written, \
            with a progress bar. Assets already in the target are skipped, so an interrupted \
            migration continues where it stopped when run again; the source is only read.

            Servers may keep running while it copies. Then stop them, run it once more (it \
            copies only what arrived meanwhile), and start them with the new --blobs. Exits 1 \
            when an asset could not be copied (missing or damaged in the source; see \
            `ubiq admin blobs verify`).

            Examples:
              ubiq admin --data srv blobs migrate --to s3://ubiquity/blobs --to-s3-endpoint http://127.0.0.1:9000
              ubiq admin --database postgres://… --blobs s3://ubiquity/blobs --s3-endpoint http://minio:9000 \\
                  blobs migrate --to /srv/ubiquity/blobs
            """)
    @OptionGroup var store: ServerStoreOptions
    @ParentCommand var admin: Admin
    @Option(help: "Where to copy the content: a folder, or s3://BUCKET/PREFIX.") var to: String
    @Option(name: .customLong("to-s3-endpoint"), help: "With --to s3://…: the server's URL (as --s3-endpoint).") var toS3Endpoint: String?
    @Option(name: .customLong("to-s3-region"), help: "With --to s3://…: the region (as --s3-region).") var toS3Region: String?
    @Option(name: .customLong("to-s3-addressing"), help: "With --to s3://…: path or virtual-host (as --s3-addressing).") var toS3Addressing: String?
    @Option(name: .customLong("to-s3-credentials"), help: "With --to s3://…: a credentials file (as --s3-credentials).") var toS3Credentials: String?
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await Admin.withStore(store, parent: admin.store, command: "blobs migrate") { _, options, logger in
            let sourceLocation = try options.blobLocation()
            let targetLocation = try ServerStoreOptions.blobLocation(to, endpoint: toS3Endpoint, region: toS3Region, addressing: toS3Addressing,
                                                                     credentials: toS3Credentials, option: "--to-s3")
            guard sourceLocation != targetLocation else { throw UbiquityError(.invalidArgument, "--to \(to) is where the content is already") }
            let migration = BlobMigration(source: try await sourceLocation.open(logger: logger), target: try await targetLocation.open(logger: logger))
            let display = ProgressDisplay(quiet: json)
            let report = try await migration.run { progress in
                display.update("\(progress.assets)/\(progress.totalAssets) assets", done: progress.bytes, total: progress.totalBytes)
            }
            display.finish()
            if json {
                CLI.printLine(CLI.jsonObject([("copied", report.copied), ("skipped", report.skipped), ("bytesCopied", Int(report.bytesCopied)),
                                              ("failed", report.failed.count)]))
            } else {
                CLI.printLine("copied \(report.copied) assets (\(TransferProgress.bytes(report.bytesCopied))) to \(targetLocation.description); "
                              + "\(report.skipped) were there already")
                for (checksum, why) in report.failed.sorted(by: { $0.key < $1.key }) { CLI.printLine("not copied: \(checksum): \(why)") }
            }
            if !report.failed.isEmpty { throw ExitCode(1) }
        }
    }
}

/// `ubiq admin blobs verify`.
struct BlobsVerify: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "verify", abstract: "Read every asset of --blobs whole and report missing or damaged content.",
        discussion: """
            Reads each stored asset, checking every chunk against its hash and the asset \
            against its checksum. Prints the assets whose content is missing or damaged, and \
            exits 1 when there are any. Safe while servers run.

            Examples:
              ubiq admin --data srv blobs verify
              ubiq admin --database postgres://… --blobs s3://ubiquity/blobs --s3-endpoint http://minio:9000 blobs verify --json
            """)
    @OptionGroup var store: ServerStoreOptions
    @ParentCommand var admin: Admin
    @Flag(help: "Print JSON.") var json = false

    func run() async throws {
        try await Admin.withStore(store, parent: admin.store, command: "blobs verify") { _, options, logger in
            let blobs = try await options.blobLocation().open(logger: logger)
            let display = ProgressDisplay(quiet: json)
            let result = try await BlobMigration.verify(blobs) { progress in
                display.update("\(progress.assets)/\(progress.totalAssets) assets", done: Int64(progress.assets), total: Int64(progress.totalAssets))
            }
            display.finish()
            if json {
                CLI.printLine(CLI.jsonObject([("good", result.good), ("bytes", Int(result.bytes)), ("missing", result.missing.count),
                                              ("corrupt", result.corrupt.count)]))
            } else {
                CLI.printLine("\(result.good) assets whole (\(TransferProgress.bytes(result.bytes))), \(result.missing.count) missing content, \(result.corrupt.count) damaged")
                for (checksum, why) in result.missing.sorted(by: { $0.key < $1.key }) { CLI.printLine("missing: \(checksum): \(why)") }
                for (checksum, why) in result.corrupt.sorted(by: { $0.key < $1.key }) { CLI.printLine("damaged: \(checksum): \(why)") }
            }
            if !result.missing.isEmpty || !result.corrupt.isEmpty { throw ExitCode(1) }
        }
    }
}
