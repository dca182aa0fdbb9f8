// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

/// `ubiq`: Ubiquity's one executable. Subcommands are thin wiring over the libraries.
@main
struct Ubiq: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ubiq",
        abstract: "Ubiquity: iCloud-style document storage and file coordination for Linux.",
        discussion: """
            Exit codes: 0 success; 1 failure (message on stderr, with the fix where there is \
            one); 64 bad usage (the argument is named: a wrong option, a path outside the \
            folder); 69 a needed service is unavailable (the daemon, the server); 75 timed out \
            (coordination). `ubiq coordinate` exits with its command's status. The guide: \
            docs/cli.md.

            The folder commands (ls, cat, put, get, mv, rm, mkdir) work on the synced folder \
            (--folder, $UBIQUITY_FOLDER, default ~/Ubiquity), with or without a running daemon. \
            Commands that print something take --json. Colour and progress only on a terminal, \
            never with NO_COLOR set. Shell completions: `ubiq --generate-completion-script bash` \
            (or zsh, fish).

            Examples:
              ubiq ls -l                                      # the folder with sync status
              ubiq put ~/report.pdf docs/ && ubiq cat docs/notes.txt
              ubiq daemon &                                   # the coordination service
              ubiq present notes.txt --auto-ack               # watch coordination messages
              ubiq coordinate write notes.txt -- sh -c 'date > notes.txt'
              ubiq exclude cache.db && ubiq status cache.db --json
            """,
        version: "ubiq \(UbiquityVersion.current)",
        subcommands: [
            ListItems.self, Cat.self, Put.self, Get.self, Move.self, Remove.self, MakeDirectory.self,
            Daemon.self, Present.self, Coordinate.self,
            ContainerCommand.self,
            Versions.self, RestoreVersion.self, Trash.self, Resolve.self, Exclude.self, Include.self, Status.self, Evict.self, Download.self, Pin.self, Unpin.self,
            Query.self, IndexCommand.self,
            Serve.self, Admin.self,
            RecordsCommand.self, KeyValueCommand.self, AccountCommand.self, SyncCommand.self, HooksCommand.self, DoctorCommand.self, EditorCommand.self,
        ]
    )
}
