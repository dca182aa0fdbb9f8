// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq put SRC DEST`: copies a local file (or stdin) into the folder under a coordinated write.
struct Put: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "put",
        abstract: "Copy a local file (or stdin) into the folder, safely and under a coordinated write.",
        discussion: """
            SRC is a local path (relative to the current directory) or - for stdin. DEST is inside \
            the folder; when it is an existing folder the file keeps SRC's name there. The copy \
            goes to a temporary file next to DEST, is fsynced and renamed over DEST (a crash leaves \
            the old or the new content, never a mix; DEST's permissions and user attributes are \
            kept). It is done under a coordinated read and write of DEST: presenters of DEST (in \
            any process, through the daemon) save their unsaved changes first and hear of the new \
            content afterwards. Without a daemon the write is coordinated within this process only \
            (--verbose says so).

            JSON keys (--json): path (DEST's absolute path), size (bytes written).

            Exit codes: 0 written; 1 failed (nothing changed at DEST); 64 bad usage (DEST outside \
            the folder); 75 the coordination timed out.

            An evicted SRC (when it is an evicted file of a synced folder) (a placeholder) is downloaded first through `ubiq daemon`, as `ubiq \
            download` does; without a daemon, or when the server cannot be reached, the command \
            fails saying so (the placeholder's zeros are never copied).

            Examples:
              ubiq put ~/Downloads/report.pdf docs/
              ubiq put notes.txt notes.txt --json
              date | ubiq put - log/today.txt
            """
    )

    @Argument(help: "The local file to copy, or - for stdin.")
    var source: String

    @Argument(help: "Where to put it in the folder (a file, or an existing folder).")
    var destination: String

    @Flag(help: "Print JSON.")
    var json = false

    @OptionGroup var folder: FolderOptions

    func run() throws {
        try CLI.run("put") {
            let root = try folder.root()
            let resolved = try folder.resolve(destination, name: "DEST", root: root)
            let source = self.source == "-" ? nil : try folder.local(self.source, name: "SRC")
            let display = ProgressDisplay(quiet: json)
            if let source {
                guard let stamp = Placeholder.stamp(ofItemAt: source) else { throw UbiquityError(.notFound, "SRC '\(self.source)' does not exist (\(source))") }
                if stamp.isDirectory { throw UbiquityError(.invalidArgument, "SRC '\(self.source)' is a folder; put copies one file") }
                try PlaceholderDownload.ensureContent(source, argument: "SRC", display: display)  // an evicted file: downloaded first
            }
            let target = try FileTransfer.target(resolved, name: source.map(CanonicalPath.lastComponent), argument: "DEST")
            if target == root { throw ValidationError("DEST '\(destination)' is the folder itself; give a file name") }
            if FileStamp.of(target)?.isDirectory == true {
                throw UbiquityError(.invalidArgument, "DEST '\(target)' is a folder; it cannot be replaced by a file")
            }
            try FileTransfer.requireParent(of: target, argument: "DEST")
            let url = URL(fileURLWithPath: target)
            // A read and a write of DEST: presenters save first (the read), then relinquish to the
            // writer and hear of the change (the write).
            let written = try FileCoordinator().coordinate(readingItemAt: url, options: [], writingItemAt: url, options: []) { _, to in
                try FileTransfer.save(from: source, to: to.path, display: display)
            }
            folder.noteCoordination("put")
            if json {
                CLI.printLine(CLI.jsonObject([("path", target), ("size", Int(written.bytes))]))
            } else {
                folder.note("put", "wrote \(written.bytes) bytes to \(target)")
            }
        }
    }
}
