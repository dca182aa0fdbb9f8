// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq cat PATH…`: coordinated reads of files of the folder, streamed to stdout.
struct Cat: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "cat",
        abstract: "Print files of the folder, each read under a coordinated read (presenters save first).",
        discussion: """
            Each PATH is read under `coordinate(readingItemAt:)`: presenters of it (in any process, \
            through the daemon) save their unsaved changes first. Without a daemon the read is \
            coordinated within this process only (--verbose says so). Relative paths are taken \
            from the current directory when it is inside the folder, else from the folder's root.

            An evicted file (a placeholder, `ubiq evict`) is downloaded first through `ubiq daemon`, \
            as `ubiq download` does; without a daemon, or when the server cannot be reached, that \
            file fails with an error saying so (its zeros are never printed).

            Exit codes: 0 every file printed; 1 one could not be read (the others are still \
            printed); 64 bad usage (a path outside the folder); 75 the coordination timed out.

            Examples:
              ubiq cat notes.txt
              ubiq cat docs/a.md docs/b.md | wc -l
              ubiq cat --folder /srv/shared report.csv
            """
    )

    @Argument(help: "The files (inside the folder).")
    var paths: [String]

    @OptionGroup var folder: FolderOptions

    func validate() throws {
        if paths.isEmpty { throw ValidationError("missing PATH: give at least one file, e.g. ubiq cat notes.txt") }
    }

    func run() throws {
        var failed: (any Error)?
        try CLI.run("cat") {
            let root = try folder.root()
            let files = try paths.map { try folder.resolve($0, name: "PATH", root: root) }
            let coordinator = FileCoordinator()
            for file in files {
                do {
                    try PlaceholderDownload.ensureContent(file, argument: "PATH")  // an evicted file: its content, never zeros
                    try coordinator.coordinate(readingItemAt: URL(fileURLWithPath: file), options: []) { url in
                        _ = try FileTransfer.copyToStandardOutput(url.path)
                    }
                } catch let error as UbiquityError where error.code == .timedOut {
                    throw error
                } catch {
                    _ = CLI.report(error, command: "cat")
                    failed = error
                }
            }
            folder.noteCoordination("cat")
        }
        if failed != nil { throw ExitCode.failure }
    }
}
