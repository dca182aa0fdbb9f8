// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquityIndex
import UbiquityStore

/// `ubiq index status|scan|rescan`: the metadata index.
struct IndexCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "index",
        abstract: "Inspect and maintain the metadata index.",
        discussion: """
            Examples:
              ubiq index status
              ubiq index status --json
              ubiq index rescan ~/.local/share/ubiquity/containers
              ubiq index scan ~/Notes --database /tmp/notes.index --json
            """,
        subcommands: [IndexStatus.self, IndexScan.self, IndexRescan.self]
    )
}

/// `ubiq index status`: what the daemon has indexed and whether a rescan is pending.
struct IndexStatus: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Tell what is indexed and whether a rescan is pending.",
        discussion: """
            Asks the running daemon. JSON keys: database, items, folders, watches, rebuilt (the \
            index file was missing or corrupt and was rebuilt), messages (overflow and watch-limit \
            warnings with the sysctl to raise) and roots (path, lastScan, rescanPending, message).

            Exit codes: 0 success; 69 no daemon runs.

            Examples:
              ubiq index status
              ubiq index status --json
            """
    )

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        try CLI.run("index status") {
            let reply: ControlWire.Reply
            do {
                reply = try MetadataQueryControl.request(ControlWire.Request(op: .status))
            } catch let error as UbiquityError where error.code == .serviceUnavailable || error.code == .io {
                throw UbiquityError(.serviceUnavailable,
                                    "no daemon answers on '\(ControlWire.socketPath())': start 'ubiq daemon' (queries without it scan on their own)",
                                    underlying: error)
            }
            guard let status = reply.status else { throw UbiquityError(.protocolError, "the daemon sent no status") }
            if json {
                let encoder = JSONEncoder()
                encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
                encoder.dateEncodingStrategy = .iso8601
                CLI.printLine(String(decoding: try encoder.encode(status), as: UTF8.self))
                return
            }
            print("index:    \(status.database ?? "in memory")\(status.rebuilt ? " (rebuilt: the file was missing or corrupt)" : "")")
            print("items:    \(status.items) (\(status.folders) folders)")
            print("watches:  \(status.watches)")
            for root in status.roots {
                let scanned = root.lastScan.map { "scanned \($0.formatted(.iso8601))" } ?? "never scanned"
                print("root:     \(root.path) — \(scanned)\(root.rescanPending ? ", rescan pending" : "")\(root.message.map { ": " + $0 } ?? "")")
            }
            for message in status.messages { print("warning:  \(message)") }
        }
    }
}

/// `ubiq index scan ROOT --database FILE`: builds an index file from a full scan.
struct IndexScan: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "scan",
        abstract: "Scan a folder into an index file (no daemon needed).",
        discussion: """
            Scans ROOT (not following symbolic links, skipping editor and temporary files) into \
            the SQLite index FILE, creating it or bringing it up to date (unchanged items are not \
            rewritten). `ubiq query --database FILE` then searches it. Prints the item count and \
            the time taken; JSON keys: items, added, changed, removed, seconds, warnings.

            Examples:
              ubiq index scan ~/Notes --database /tmp/notes.index
              ubiq index scan /srv/docs --database docs.index --json
            """
    )

    @Argument(help: "The folder to scan.")
    var root: String

    @Option(help: "The index file to create or update.")
    var database: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() async throws {
        do {
            let root = try CLI.absolutePath(root)
            let start = ContinuousClock.now
            let index = try MetadataIndex(path: try CLI.absolutePath(database), logger: Logger(label: "ubiq.index"))
            let indexer = Indexer(index: index, logger: Logger(label: "ubiq.index"))
            let counts = try await indexer.scanRoot(root, ignoring: IgnoreRules.load(root: root))
            let warnings = await indexer.scanWarnings[root] ?? []
            let elapsed = ContinuousClock.now - start
            let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
            let items = try index.count(under: root)
            if json {
                CLI.printLine(CLI.jsonObject([
                    ("items", items), ("added", counts.added), ("changed", counts.changed),
                    ("removed", counts.removed), ("seconds", seconds), ("warnings", warnings.count),
                ]))
            } else {
                print("\(items) items indexed in \(String(format: "%.3f", seconds)) s")
            }
            for warning in warnings.prefix(20) {
                FileHandle.standardError.write(Data("ubiq index scan: warning: \(warning)\n".utf8))
            }
        } catch {
            throw CLI.report(error, command: "index scan")
        }
    }
}

/// `ubiq index rescan PATH`: asks the daemon to scan a folder again now.
struct IndexRescan: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rescan",
        abstract: "Ask the daemon to scan a folder again now (the correctness backstop).",
        discussion: """
            Exit codes: 0 success; 1 the folder is not indexed; 69 no daemon runs.

            Examples:
              ubiq index rescan ~/.local/share/ubiquity/containers
            """
    )

    @Argument(help: "The folder to rescan.")
    var path: String

    func run() throws {
        try CLI.run("index rescan") {
            _ = try MetadataQueryControl.request(ControlWire.Request(op: .rescan, path: try CLI.absolutePath(path)))
        }
    }
}
