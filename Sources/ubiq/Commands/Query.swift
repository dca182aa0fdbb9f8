// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import Logging
import UbiquityStore
import UbiquityCloudKit

/// `ubiq query PREDICATE [ARGS…]`: a metadata query (NSMetadataQuery) from the shell.
struct Query: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "query",
        abstract: "Find items by name and attributes with an NSPredicate format string; optionally watch them change.",
        discussion: """
            PREDICATE is an NSPredicate format string over the metadata attributes: kMDItemFSName, \
            kMDItemDisplayName, kMDItemPath, kMDItemFSSize, kMDItemFSCreationDate, \
            kMDItemFSContentChangeDate, kMDItemContentType, kMDItemContentTypeTree, \
            kMDItemIsDirectory and the NSMetadataUbiquitousItem… keys (the NSMetadataItem…Key \
            names work too). ARGS fill %@ (a string), %K (an attribute name), %d (an integer) \
            and %f (a number), in order.

            Where: --root DIR (repeatable) searches folders; otherwise the declared containers \
            ($UBIQUITY_CONTAINERS, or --container ID) in --scope documents (default), data or all. \
            With `ubiq daemon` running, the daemon's index answers; otherwise this process scans \
            (and with --watch, watches) the folders itself. --database FILE reads an index file \
            made by `ubiq index scan` instead (no scan, no watch).

            Output: one path per line (--null: NUL-separated); with --json, one JSON object per \
            item (path, name, size, isDirectory, contentType, creationDate, contentChangeDate and \
            the ubiquitous attributes). --watch prints one JSON line per notification: \
            {"event":"gathering","items":[…]}, {"event":"finishGathering","count":N}, then \
            {"event":"update","added":[…],"changed":[…],"removed":[…]} (a rename is removed + added).

            Exit codes: 0 success (also when nothing matches); 1 failure; 64 bad usage (a \
            malformed predicate names the column); 69 UBIQUITY_INDEX=daemon and no daemon.

            Examples:
              ubiq query "kMDItemFSName == 'test.txt'" --container iCloud.com.example.app
              ubiq query 'kMDItemFSName LIKE[c] "*.txt" AND kMDItemFSSize > %d' 1000 --root ~/Notes --json
              ubiq query '%K BEGINSWITH %@' kMDItemPath /srv/docs/2024 --root /srv/docs --sort kMDItemFSSize:desc
              ubiq query 'kMDItemFSName LIKE "*"' --root ~/Notes --watch
            """
    )

    @Argument(help: "The NSPredicate format string.")
    var predicate: String

    @Argument(help: "Values for the predicate's %@, %K, %d and %f, in order.")
    var arguments: [String] = []

    @Option(help: "A folder to search (repeatable; relative paths are taken from the current folder).")
    var root: [String] = []

    @Option(help: "A ubiquity container identifier to search (repeatable).")
    var container: [String] = []

    @Option(help: "Which part of the containers: documents, data or all.")
    var scope: String = "documents"

    @Option(help: "Sort by an attribute, KEY or KEY:desc (repeatable).")
    var sort: [String] = []

    @Option(help: "Read this index file (from `ubiq index scan`) instead of scanning.")
    var database: String?

    @Option(help: "Print at most this many items.")
    var limit: Int?

    @Flag(help: "Print JSON objects, one per line.")
    var json = false

    @Flag(help: "Keep running and print each notification as a JSON line.")
    var watch = false

    @Flag(help: "Separate paths with NUL instead of a line break (paths may contain line breaks).")
    var null = false

    @OptionGroup var logging: LoggingOptions

    func validate() throws {
        if !root.isEmpty && !container.isEmpty {
            throw ValidationError("give --root or --container, not both")
        }
        if !["documents", "data", "all"].contains(scope) {
            throw ValidationError("--scope '\(scope)': expected documents, data or all")
        }
        if database != nil && watch {
            throw ValidationError("--database reads a saved index: it cannot --watch")
        }
        if let limit, limit < 0 { throw ValidationError("--limit \(limit): expected a number ≥ 0") }
    }

    func run() async throws {
        CLI.bootstrapLogging(level: logging.level)
        let predicate: QueryPredicate
        let sortDescriptors: [MetadataSortDescriptor]
        do {
            predicate = try QueryPredicate(format: self.predicate, argumentArray: try QueryArguments.convert(arguments, for: self.predicate))
            sortDescriptors = try sort.map(QueryArguments.sortDescriptor)
        } catch let error as UbiquityError where error.code == .invalidArgument {
            FileHandle.standardError.write(Data("ubiq query: \(error.message)\n".utf8))
            throw ExitCode(64)
        } catch {
            throw CLI.report(error, command: "query")
        }
        if let database {
            try CLI.run("query") {
                let file = try CLI.absolutePath(database)
                guard FileManager.default.fileExists(atPath: file) else {
                    throw UbiquityError(.notFound, "--database '\(file)' does not exist (make it with `ubiq index scan`)")
                }
                let index = try MetadataIndex(path: file, logger: .init(label: "ubiq.query"))
                let records = try index.query(predicate, under: try root.map(CLI.absolutePath),
                                              sortedBy: sortDescriptors.compactMap(QueryArguments.indexSort), limit: limit)
                for record in records { printItem(record) }
            }
            return
        }
        let scopes: [Any]
        do {
            scopes = try resolveScopes()
        } catch {
            throw CLI.report(error, command: "query")
        }
        let query = MetadataQuery()
        query.predicate = predicate
        query.searchScopes = scopes
        query.sortDescriptors = sortDescriptors
        let steps = query.snapshots()
        guard query.start() else {
            throw CLI.report(query.lastError ?? UbiquityError(.invalidArgument, "the query did not start"), command: "query")
        }
        var printed = 0
        for await step in steps {
            switch step.kind {
            case .didStartGathering:
                continue
            case .gatheringProgress:
                if watch { CLI.printLine(event("gathering", [("items", step.added)])) }
            case .didFinishGathering:
                if watch {
                    CLI.printLine(CLI.jsonObject([("event", "finishGathering"), ("count", step.results.count)]))
                } else {
                    for item in step.results {
                        if let limit, printed >= limit { break }
                        printItem(item.record)
                        printed += 1
                    }
                    query.stop()
                    return
                }
            case .didUpdate:
                CLI.printLine(event("update", [("added", step.added), ("changed", step.changed), ("removed", step.removed)]))
            case .failed(let error):
                throw CLI.report(error, command: "query")
            }
        }
    }

    private func resolveScopes() throws -> [Any] {
        if !root.isEmpty { return try root.map(CLI.absolutePath) }
        if !container.isEmpty { try UbiquityContainers.declare(container) }
        switch scope {
        case "data": return [NSMetadataQueryUbiquitousDataScope]
        case "all": return [UbiquityMetadataQueryAllUbiquitousScope]
        default: return [NSMetadataQueryUbiquitousDocumentsScope]
        }
    }

    private func event(_ name: String, _ lists: [(String, [MetadataItem])]) -> String {
        var body = "{\"event\":\"\(name)\""
        for (key, items) in lists {
            body += ",\"\(key)\":[" + items.map { ItemJSON.object($0.record) }.joined(separator: ",") + "]"
        }
        return body + "}"
    }

    private func printItem(_ record: IndexRecord) {
        if json {
            CLI.printLine(ItemJSON.object(record))
        } else if null {
            CLI.printRaw(record.path + "\0")
        } else {
            CLI.printLine(record.path)
        }
    }
}
