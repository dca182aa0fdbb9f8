// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq evict PATH`: replaces a synced, uploaded file by its hidden stub (`docs/sync.md`).
struct Evict: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Remove the local copy of a synced file, keeping a stub of its name and size.",
        discussion: """
            Asks `ubiq daemon` (its control socket) to evict the file: under a coordinated write \
            it is replaced by its hidden stub .NAME.icloud (as on iOS: its name, size and record, \
            its mode, time and user attributes), and its own name is free; the server and other \
            devices keep it. `ubiq ls`, `ubiq status` and metadata queries still list it under its \
            name, not downloaded. Anything written at that name never replaces the server's copy: \
            the server's version comes back and what was written is kept as a conflict version. A \
            folder has every uploaded file in it evicted (progress on a terminal). `ubiq download` \
            brings it back. Refused for an item not uploaded yet, with unsaved conflict versions, \
            pinned (ubiq pin), open in another program, excluded from sync, or not in the sync \
            folder. Prints the paths evicted.

            Examples:
              ubiq evict ~/Ubiquity/videos/holiday.mp4
              ubiq evict ~/Ubiquity/archive
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    @Flag(help: "Print the evicted paths as a JSON array.")
    var json = false

    func run() throws {
        try DocumentCommandIO.run("evict") {
            let url = try DocumentCommandIO.absoluteURL(path)
            let display = ProgressDisplay(quiet: json)
            let name = url.lastPathComponent
            let paths = try UbiquitousItemControl.evict(at: url) { done, total in display.update(name, done: done, total: total) }
            display.finish()
            if json {
                let data = try JSONSerialization.data(withJSONObject: paths, options: [.withoutEscapingSlashes])
                CLI.printLine(String(decoding: data, as: UTF8.self))
                return
            }
            if paths.isEmpty { CLI.printLine("nothing to evict in '\(url.path)'") }
            for path in paths { CLI.printLine("evicted \(path)") }
        }
    }
}
