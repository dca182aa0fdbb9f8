// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq get SRC DEST`: copies a file of the folder out under a coordinated read.
struct Get: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "get",
        abstract: "Copy a file of the folder to a local path (or stdout) under a coordinated read.",
        discussion: """
            SRC is inside the folder; presenters of it (in any process, through the daemon) save \
            their unsaved changes first. DEST is a local path (relative to the current directory), \
            an existing folder (the file keeps its name there) or - for stdout; it is written \
            safely (a temporary next to it, fsync, rename). Without a daemon the read is \
            coordinated within this process only (--verbose says so).

            JSON keys (--json, not with DEST -): path (DEST's absolute path), size (bytes).

            Exit codes: 0 copied; 1 failed (DEST unchanged); 64 bad usage (SRC outside the \
            folder); 75 the coordination timed out.

            An evicted SRC (a placeholder) is downloaded first through `ubiq daemon`, as `ubiq \
            download` does; without a daemon, or when the server cannot be reached, the command \
            fails saying so (the placeholder's zeros are never copied).

            Examples:
              ubiq get notes.txt ~/backup/
              ubiq get docs/report.pdf /tmp/report.pdf --json
              ubiq get notes.txt - | less
            """
    )

    @Argument(help: "The file in the folder.")
    var source: String

    @Argument(help: "The local destination (a file or folder), or - for stdout.")
    var destination: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var folder: FolderOptions

    func validate() throws {
        if json, destination == "-" { throw ValidationError("--json cannot be used with DEST - (stdout carries the file)") }
    }

    func run() throws {
        try CLI.run("get") {
            let root = try folder.root()
            let source = try folder.resolve(self.source, name: "SRC", root: root)
            guard let stamp = Placeholder.stamp(ofItemAt: source) else { throw UbiquityError(.notFound, "SRC '\(self.source)' does not exist (\(source))") }
            if stamp.isDirectory { throw UbiquityError(.invalidArgument, "SRC '\(self.source)' is a folder; get copies one file") }
            let display = ProgressDisplay(quiet: json || destination == "-")  // stdout carries the file with -
            try PlaceholderDownload.ensureContent(source, argument: "SRC", display: display)  // an evicted file: downloaded first
            let coordinator = FileCoordinator()
            let url = URL(fileURLWithPath: source)
            if destination == "-" {
                try coordinator.coordinate(readingItemAt: url, options: []) { _ = try FileTransfer.copyToStandardOutput($0.path) }
                folder.noteCoordination("get")
                return
            }
            let target = try FileTransfer.target(try folder.local(destination, name: "DEST"), name: CanonicalPath.lastComponent(of: source), argument: "DEST")
            if FileStamp.of(target)?.isDirectory == true {
                throw UbiquityError(.invalidArgument, "DEST '\(target)' is a folder; it cannot be replaced by a file")
            }
            try FileTransfer.requireParent(of: target, argument: "DEST")
            let written: (stamp: FileStamp, bytes: Int64)
            if CanonicalPath.isSameOrDescendant(target, of: root) {
                // A copy within the folder: its presenters hear of the new file too.
                written = try coordinator.coordinate(readingItemAt: url, options: [], writingItemAt: URL(fileURLWithPath: target), options: []) {
                    try FileTransfer.save(from: $0.path, to: $1.path, display: display)
                }
            } else {
                written = try coordinator.coordinate(readingItemAt: url, options: []) { try FileTransfer.save(from: $0.path, to: target, display: display) }
            }
            folder.noteCoordination("get")
            if json { CLI.printLine(CLI.jsonObject([("path", target), ("size", Int(written.bytes))])) }
        }
    }
}
