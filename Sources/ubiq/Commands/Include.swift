// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq include PATH`: clears the skip-backup attribute set by `ubiq exclude`.
struct Include: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "include",
        abstract: "Include an item in backup and sync again (clears the skip-backup attribute).",
        discussion: """
            Removes the attribute `ubiq exclude` sets, under a coordinated metadata-only write. Including an item that is not excluded does nothing.

            JSON keys (--json): path, excluded (false).

            Examples:
              ubiq include build/cache.db
              ubiq include build/cache.db --json
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        try DocumentCommandIO.run("include") {
            let url = try DocumentCommandIO.absoluteURL(path)
            try Exclude.setExcluded(false, url)
            if json {
                CLI.printLine(CLI.jsonObject([("path", url.path), ("excluded", false)]))
            } else {
                print("'\(url.path)' is included in backup and sync")
            }
        }
    }
}
