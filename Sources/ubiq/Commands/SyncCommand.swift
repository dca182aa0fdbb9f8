// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityIndex

/// `ubiq sync confirm-deletes`: the document sync of the running daemon.
struct SyncCommand: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "sync",
        abstract: "Control the daemon's document sync.",
        discussion: """
            Examples:
              ubiq sync confirm-deletes
            """,
        subcommands: [SyncConfirmDeletes.self]
    )
}

/// `ubiq sync confirm-deletes`: sends the local deletes the mass-delete guard paused.
struct SyncConfirmDeletes: ParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "confirm-deletes",
        abstract: "Send the deletes the daemon paused because many items were deleted at once.",
        discussion: """
            When one pass would delete more than --mass-delete-share of the synced items (and \
            more than --mass-delete-minimum), the daemon keeps the deletes back, logs an error and \
            runs the mass-delete-paused hook; everything else keeps syncing. This confirms them: \
            the daemon deletes the items from the server (and so from the other devices). To keep \
            the items instead, put them back (or stop the daemon and restore them). The \
            confirmation survives a daemon restart.

            Exit codes: 0 confirmed (or nothing waited: the message says so); 69 no daemon runs.

            Examples:
              ubiq sync confirm-deletes
            """
    )

    func run() throws {
        try CLI.run("sync confirm-deletes") {
            let reply = try MetadataQueryControl.request(ControlWire.Request(op: .confirmDeletes))
            CLI.printLine(reply.message ?? "confirmed")
        }
    }
}
