// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq exclude PATH`: sets the skip-backup attribute (the item is neither backed up nor synced).
struct Exclude: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "exclude",
        abstract: "Exclude an item from backup and sync (sets the skip-backup attribute).",
        discussion: """
            Sets the extended attribute user.com.apple.metadata:com_apple_backup_excludeItem, as \
            Apple's isExcludedFromBackup does on macOS, under a coordinated metadata-only write. \
            `ubiq include` undoes it.

            JSON keys (--json): path, excluded (true).

            Examples:
              ubiq exclude build/cache.db
              ubiq exclude build/cache.db --json
              ubiq exclude ~/Ubiquity/scratch
            """
    )

    @Argument(help: "The file or folder (relative paths are taken from the current folder).")
    var path: String

    @Flag(help: "Print JSON.")
    var json = false

    func run() throws {
        try DocumentCommandIO.run("exclude") {
            let url = try DocumentCommandIO.absoluteURL(path)
            try Self.setExcluded(true, url)
            if json {
                CLI.printLine(CLI.jsonObject([("path", url.path), ("excluded", true)]))
            } else {
                print("'\(url.path)' is excluded from backup and sync")
            }
        }
    }

    /// Sets or clears the attribute under a coordinated `.contentIndependentMetadataOnly` write.
    static func setExcluded(_ excluded: Bool, _ url: URL) throws {
        try FileCoordinator().coordinate(writingItemAt: url, options: .contentIndependentMetadataOnly) { url in
            try url.setUbiquityExcludedFromBackup(excluded)
        }
    }
}
