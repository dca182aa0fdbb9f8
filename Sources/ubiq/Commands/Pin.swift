// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq pin PATH`: Apple's "Keep Downloaded" (`docs/sync.md`, "Eviction").
struct Pin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "pin",
        abstract: "Keep a synced file or folder downloaded (Apple's \"Keep Downloaded\").",
        discussion: """
            Asks `ubiq daemon` to download what in PATH is evicted and to keep it: a pinned item \
            (a folder: everything in it, also what arrives later) is never evicted, by `ubiq \
            evict` or by `ubiq daemon --evict-budget`. The pin follows renames. `ubiq status PATH \
            --json` shows "pinned": true. `ubiq unpin PATH` undoes it. Refused for an item not \
            uploaded yet, excluded from sync, or not in the sync folder. Prints the paths \
            downloaded.

            Examples:
              ubiq pin ~/Ubiquity/taxes
              ubiq pin ~/Ubiquity/notes.txt
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    func run() throws {
        try DocumentCommandIO.run("pin") {
            let url = try DocumentCommandIO.absoluteURL(path)
            let downloaded = try UbiquitousItemControl.pin(at: url)
            for path in downloaded { CLI.printLine("downloaded \(path)") }
            CLI.printLine("pinned \(url.path)")
        }
    }
}

/// `ubiq unpin PATH`: the item may be evicted again.
struct Unpin: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "unpin",
        abstract: "Let a pinned file or folder be evicted again.",
        discussion: """
            Undoes `ubiq pin PATH`: the item stays downloaded for now, and `ubiq evict` or the \
            daemon's --evict-budget may evict it again. An item kept downloaded by a pinned folder \
            above it is unpinned with that folder.

            Examples:
              ubiq unpin ~/Ubiquity/taxes
              ubiq unpin ~/Ubiquity/notes.txt
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    func run() throws {
        try DocumentCommandIO.run("unpin") {
            let url = try DocumentCommandIO.absoluteURL(path)
            try UbiquitousItemControl.unpin(at: url)
            CLI.printLine("unpinned \(url.path)")
        }
    }
}
