// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq evict PATH`: replaces a synced, uploaded file by a placeholder (`docs/sync.md`).
struct Evict: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "evict",
        abstract: "Remove the local copy of a synced file, keeping a placeholder of its name and size.",
        discussion: """
            Asks `ubiq daemon` (its control socket) to evict the file: it is replaced, under a \
            coordinated write, by a sparse file of the same name and size carrying the attribute \
            user.org.ubiquity.evicted; the server and other devices keep it. A folder has every \
            uploaded file in it evicted. `ubiq download` brings it back. Refused for an item not \
            uploaded yet, with unsaved conflict versions, excluded from sync, or not in the sync \
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
            let paths = try UbiquitousItemControl.evict(at: url)
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
