// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq coordinate KIND PATH [DEST] -- COMMAND…`: runs a command under a coordinated access.
struct Coordinate: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "coordinate",
        abstract: "Run COMMAND under a coordinated read, write, delete, move or replace of PATH.",
        discussion: """
            Presenters of PATH (in any process, through the daemon) relinquish and save first, and \
            hear of the change afterwards. Exits with COMMAND's status; 75 if the coordination \
            timed out, 1 if it failed. COMMAND sees UBIQ_COORDINATED_PATH (the URL the accessor \
            got: a snapshot copy for --options forUploading) and, for move, UBIQ_COORDINATED_DEST.

            Options (comma-separated, as Apple names them): reading — withoutChanges, \
            resolvesSymbolicLink, immediatelyAvailableMetadataOnly, forUploading; writing — \
            forDeleting, forMoving, forMerging, forReplacing, contentIndependentMetadataOnly.

            Examples:
              ubiq coordinate read notes.txt -- cat notes.txt
              ubiq coordinate write notes.txt --options forMerging -- sh -c 'echo more >> notes.txt'
              ubiq coordinate move a.txt b.txt -- mv a.txt b.txt
              ubiq coordinate delete old/ -- rm -r old
            """
    )

    enum Kind: String, ExpressibleByArgument, CaseIterable {
        case read, write, delete, move, replace
    }

    @Argument(help: "read, write, delete, move or replace.")
    var kind: Kind

    @Argument(help: "The item.")
    var path: String

    @Argument(help: "For move: the destination.")
    var destination: String?

    @Argument(parsing: .postTerminator, help: "After --: the command to run and its arguments.")
    var command: [String] = []

    @Option(help: "Coordination options, comma-separated (see above).")
    var options: String = ""

    @Option(help: "Seconds to wait for other claims and presenters before failing (default 30).")
    var timeout: Double?

    func split() throws -> (dest: String?, command: [String]) {
        let dest = destination
        let items = command
        guard !items.isEmpty else {
            throw ValidationError("expected -- and a command after the path, e.g. ubiq coordinate read FILE -- cat FILE")
        }
        if kind == .move, dest == nil { throw ValidationError("move needs a destination: ubiq coordinate move SRC DEST -- COMMAND") }
        if kind != .move, let dest { throw ValidationError("unexpected argument '\(dest)' before --; only move takes a destination") }
        return (dest, items)
    }

    func parsedOptions() throws -> (FileCoordinator.ReadingOptions, FileCoordinator.WritingOptions) {
        var reading: FileCoordinator.ReadingOptions = []
        var writing: FileCoordinator.WritingOptions = []
        for name in options.split(separator: ",").map({ $0.trimmingCharacters(in: .whitespaces) }) where !name.isEmpty {
            switch name {
            case "withoutChanges": reading.insert(.withoutChanges)
            case "resolvesSymbolicLink": reading.insert(.resolvesSymbolicLink)
            case "immediatelyAvailableMetadataOnly": reading.insert(.immediatelyAvailableMetadataOnly)
            case "forUploading": reading.insert(.forUploading)
            case "forDeleting": writing.insert(.forDeleting)
            case "forMoving": writing.insert(.forMoving)
            case "forMerging": writing.insert(.forMerging)
            case "forReplacing": writing.insert(.forReplacing)
            case "contentIndependentMetadataOnly": writing.insert(.contentIndependentMetadataOnly)
            default:
                throw ValidationError("unknown coordination option '\(name)'; see ubiq coordinate --help")
            }
        }
        if kind == .read, !writing.isEmpty { throw ValidationError("writing options given to a read: \(options)") }
        if kind != .read, !reading.isEmpty { throw ValidationError("reading options given to a \(kind.rawValue): \(options)") }
        return (reading, writing)
    }

    func validate() throws {
        _ = try split()
        _ = try parsedOptions()
        if let timeout, !(timeout > 0) { throw ValidationError("--timeout must be a positive number of seconds") }
    }

    func run() async throws {
        let status: Int32
        do {
            status = try perform()
        } catch let error as ValidationError {
            throw error
        } catch {
            throw CLI.report(error, command: "coordinate")
        }
        if status != 0 { throw ExitCode(status) }
    }

    /// Takes the coordinated access (blocking this thread, as Apple's synchronous API does) and
    /// runs the command inside it.
    func perform() throws -> Int32 {
        let (dest, command) = try split()
        let (reading, writing) = try parsedOptions()
        let source = URL(fileURLWithPath: try CLI.absolutePath(path))
        let coordinator = FileCoordinator()
        if let timeout { coordinator.timeout = .milliseconds(Int64(timeout * 1000)) }
        var status: Int32 = 0
        do {
            switch kind {
            case .read:
                status = try coordinator.coordinate(readingItemAt: source, options: reading) { try Self.execute(command, path: $0, dest: nil) }
            case .write:
                status = try coordinator.coordinate(writingItemAt: source, options: writing) { try Self.execute(command, path: $0, dest: nil) }
            case .delete:
                status = try coordinator.coordinate(writingItemAt: source, options: writing.union(.forDeleting)) {
                    try Self.execute(command, path: $0, dest: nil)
                }
            case .replace:
                status = try coordinator.coordinate(writingItemAt: source, options: writing.union(.forReplacing)) {
                    try Self.execute(command, path: $0, dest: nil)
                }
            case .move:
                let destination = URL(fileURLWithPath: try CLI.absolutePath(dest!))
                status = try coordinator.coordinate(writingItemAt: source, options: writing.union(.forMoving),
                                                    writingItemAt: destination, options: .forReplacing) { from, to in
                    let status = try Self.execute(command, path: from, dest: to)
                    if status == 0 { coordinator.item(at: from, didMoveTo: to) }
                    return status
                }
            }
        }
        return status
    }

    /// Runs the command and returns its exit status (128 + signal when killed).
    static func execute(_ command: [String], path: URL, dest: URL?) throws -> Int32 {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = command
        var environment = ProcessInfo.processInfo.environment
        environment["UBIQ_COORDINATED_PATH"] = path.path
        if let dest { environment["UBIQ_COORDINATED_DEST"] = dest.path }
        process.environment = environment
        do {
            try process.run()
        } catch {
            throw UbiquityError(.notFound, "cannot run '\(command[0])'", underlying: error)
        }
        process.waitUntilExit()
        return process.terminationReason == .uncaughtSignal ? 128 + process.terminationStatus : process.terminationStatus
    }
}
