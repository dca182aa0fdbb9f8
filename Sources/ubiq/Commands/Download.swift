// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq download PATH`: brings an evicted file back (`docs/sync.md`).
struct Download: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "download",
        abstract: "Download an evicted file (or every evicted file in a folder) again.",
        discussion: """
            Asks `ubiq daemon` (its control socket) to fetch the current version of each evicted \
            file and put it at its name in place of its stub .NAME.icloud (a temporary file, \
            checked against the content hash, renamed in under a coordinated write). Waits until \
            done, showing each file's progress on a terminal (bytes, rate, time left; JSON lines \
            {"path":…,"percent":…} with --json); --no-wait returns once the download started. An \
            item that is here already is left alone.

            --only-evicted (for editor plugins opening a file): when PATH is not an evicted file \
            (something is at its name, or no stub is beside it), exit 0 at once without asking the \
            daemon — so a file outside the synced folders, or with no daemon running, is no error.

            Examples:
              ubiq download ~/Ubiquity/videos/holiday.mp4
              ubiq download ~/Ubiquity/archive --no-wait
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    @Flag(name: .customLong("wait"), inversion: .prefixedNo, help: "Wait until the content is here.")
    var wait = true

    @Flag(help: "Print progress and the result as JSON lines.")
    var json = false

    @Flag(help: "Do nothing (exit 0) unless PATH is an evicted file (only its stub is there).")
    var onlyEvicted = false

    func run() throws {
        try DocumentCommandIO.run("download") {
            let url = try DocumentCommandIO.absoluteURL(path)
            if onlyEvicted && !PlaceholderDownload.isPlaceholder(url.path) {
                if json { CLI.printLine(#"{"done":true,"paths":[]}"#) }
                return
            }
            let paths: [String]
            if json {
                paths = try UbiquitousItemControl.download(at: url, wait: wait) { path, percent in
                    CLI.printLine(CLI.jsonObject([("path", path), ("percent", Int(percent.rounded(.down)))]))
                }
            } else if wait {
                // a bar per file on a terminal: bytes, rate, time left
                paths = try PlaceholderDownload.download(url.path, display: ProgressDisplay())
            } else {
                paths = try UbiquitousItemControl.download(at: url, wait: false)
            }
            if json {
                let data = try JSONSerialization.data(withJSONObject: ["done": wait, "paths": paths], options: [.sortedKeys, .withoutEscapingSlashes])
                CLI.printLine(String(decoding: data, as: UTF8.self))
                return
            }
            if paths.isEmpty { CLI.printLine("nothing to download in '\(url.path)'") }
            for path in paths { CLI.printLine((wait ? "downloaded " : "downloading ") + path) }
        }
    }
}
