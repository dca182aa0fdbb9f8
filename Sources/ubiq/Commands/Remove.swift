// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Glibc
import Ubiquity

/// `ubiq rm [-r] PATH…`: coordinated deletes in the folder.
struct Remove: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "rm",
        abstract: "Delete items of the folder under coordinated deletes (folders need -r).",
        discussion: """
            Each PATH is deleted under `coordinate(writingItemAt:options: .forDeleting)`: presenters \
            of it and of items inside it are asked to accommodate the deletion first (an open \
            document closes), presenters of its folder hear of it. A folder needs -r. Deleted \
            items are not kept anywhere on this device; sync deletes them on the other devices. \
            Without a daemon the delete is coordinated within this process only (--verbose says so).

            JSON (--json): one object per PATH: path, deleted (true or false), error (null or \
            the message).

            Exit codes: 0 every PATH deleted; 1 one could not be (the others are still deleted); \
            64 bad usage (a path outside the folder, the folder itself); 75 the coordination \
            timed out.

            Examples:
              ubiq rm old.txt
              ubiq rm -r drafts/ notes/tmp.md
              ubiq rm -r build --json
            """
    )

    @Argument(help: "The items to delete (inside the folder).")
    var paths: [String]

    @Flag(name: [.customShort("r"), .customLong("recursive")], help: "Delete folders and everything in them.")
    var recursive = false

    @Flag(name: [.customShort("f"), .customLong("force")], help: "A missing PATH is not an error.")
    var force = false

    @Flag(help: "Print one JSON object per PATH.")
    var json = false

    @OptionGroup var folder: FolderOptions

    func run() throws {
        var failed = false
        try CLI.run("rm") {
            let root = try folder.root()
            let items = try paths.map { argument -> String in
                let path = try folder.resolve(argument, name: "PATH", root: root)
                if path == root { throw ValidationError("PATH '\(argument)' is the folder itself; delete what is inside it instead") }
                return path
            }
            let coordinator = FileCoordinator()
            for (argument, path) in zip(paths, items) {
                var failure: String?
                do {
                    try delete(path, argument: argument, coordinator: coordinator)
                } catch let error as UbiquityError where error.code == .timedOut {
                    throw error
                } catch let error as UbiquityError where error.code == .notFound && force {
                    failure = nil
                } catch {
                    failed = true
                    failure = (error as? UbiquityError)?.description ?? "\(error)"
                    if !json { _ = CLI.report(error, command: "rm") }
                }
                if json {
                    CLI.printLine(CLI.jsonObject([("path", path), ("deleted", failure == nil && FileStamp.of(path) == nil), ("error", failure)]))
                }
            }
            folder.noteCoordination("rm")
        }
        if failed { throw ExitCode.failure }
    }

    func delete(_ path: String, argument: String, coordinator: FileCoordinator) throws {
        guard let stamp = FileStamp.of(path) else { throw UbiquityError(.notFound, "PATH '\(argument)' does not exist (\(path))") }
        if stamp.isDirectory, !recursive {
            throw UbiquityError(.invalidArgument, "PATH '\(argument)' is a folder; use rm -r to delete it and everything in it")
        }
        try coordinator.coordinate(writingItemAt: URL(fileURLWithPath: path), options: .forDeleting) { url in
            if stamp.isDirectory {
                do {
                    try FileManager.default.removeItem(atPath: url.path)
                } catch {
                    throw UbiquityError(.io, "cannot delete '\(url.path)'", underlying: error)
                }
            } else {
                guard unlink(url.path) == 0 else { throw UbiquityError.posix("unlink", path: url.path) }
            }
        }
    }
}
