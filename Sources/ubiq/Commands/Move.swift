// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Glibc
import Ubiquity

/// `ubiq mv SRC DEST`: a coordinated move within the folder.
struct Move: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "mv",
        abstract: "Move or rename an item of the folder under a coordinated move.",
        discussion: """
            Both paths are inside the folder. When DEST is an existing folder, SRC moves into it. \
            The move runs under `coordinate(writingItemAt: SRC, options: .forMoving, writingItemAt: \
            DEST, options: .forReplacing)`: presenters of SRC (and of items inside it) relinquish \
            first and hear `didMove` with the new path (`item(at:didMoveTo:)`); a presenter of a \
            file DEST replaces is told to accommodate its deletion. An existing file DEST is \
            replaced; a non-empty folder DEST is not. Without a daemon the move is coordinated \
            within this process only (--verbose says so).

            JSON keys (--json): from, to (absolute paths).

            Exit codes: 0 moved; 1 failed (nothing moved); 64 bad usage (a path outside the \
            folder); 75 the coordination timed out.

            Examples:
              ubiq mv draft.txt final.txt
              ubiq mv photos/2024 archive/
              ubiq mv notes.txt old/notes.txt --json
            """
    )

    @Argument(help: "The item to move (inside the folder).")
    var source: String

    @Argument(help: "Its new path, or an existing folder to move it into.")
    var destination: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var folder: FolderOptions

    func run() throws {
        try CLI.run("mv") {
            let root = try folder.root()
            let source = try folder.resolve(self.source, name: "SRC", root: root)
            if source == root { throw ValidationError("SRC '\(self.source)' is the folder itself; it cannot be moved") }
            guard let stamp = FileStamp.of(source) else { throw UbiquityError(.notFound, "SRC '\(self.source)' does not exist (\(source))") }
            let resolved = try folder.resolve(destination, name: "DEST", root: root)
            var target = resolved
            if let existing = FileStamp.of(resolved), existing.isDirectory, resolved != source {
                target = resolved + "/" + CanonicalPath.lastComponent(of: source)
            }
            if target == source { throw UbiquityError(.invalidArgument, "SRC and DEST are the same item: '\(source)'") }
            if stamp.isDirectory, CanonicalPath.isSameOrDescendant(target, of: source) {
                throw UbiquityError(.invalidArgument, "cannot move the folder '\(source)' into itself ('\(target)')")
            }
            if let existing = FileStamp.of(target), existing.isDirectory, !stamp.isDirectory {
                throw UbiquityError(.invalidArgument, "DEST '\(target)' is a folder; a file cannot replace it")
            }
            guard FileStamp.of(CanonicalPath.parentPath(of: target))?.isDirectory == true else {
                throw UbiquityError(.notFound, "DEST's folder '\(CanonicalPath.parentPath(of: target))' does not exist (ubiq mkdir -p it first)")
            }
            let coordinator = FileCoordinator()
            try coordinator.coordinate(writingItemAt: URL(fileURLWithPath: source), options: .forMoving,
                                       writingItemAt: URL(fileURLWithPath: target), options: .forReplacing) { from, to in
                guard rename(from.path, to.path) == 0 else { throw UbiquityError.posix("rename", path: from.path) }
                coordinator.item(at: from, didMoveTo: to)
            }
            folder.noteCoordination("mv")
            if json { CLI.printLine(CLI.jsonObject([("from", source), ("to", target)])) }
        }
    }
}
