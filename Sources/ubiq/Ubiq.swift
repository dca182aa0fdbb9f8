// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity

/// `ubiq`: Ubiquity's one executable. Subcommands are thin wiring over the libraries.
@main
struct Ubiq: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "ubiq",
        abstract: "Ubiquity: iCloud-style document storage and file coordination for Linux.",
        discussion: """
            Exit codes: 0 success; 1 failure (message on stderr); 64 bad usage; 69 a needed \
            service is unavailable; 75 timed out. `ubiq coordinate` exits with its command's status.

            Examples:
              ubiq daemon &                                   # the coordination service
              ubiq present notes.txt --auto-ack               # watch coordination messages
              ubiq coordinate write notes.txt -- sh -c 'date > notes.txt'
              ubiq exclude cache.db && ubiq status cache.db --json
            """,
        subcommands: [
            Daemon.self, Present.self, Coordinate.self,
            ContainerCommand.self,
            Versions.self, Resolve.self, Exclude.self, Include.self, Status.self, Evict.self, Download.self,
            Query.self, IndexCommand.self,
            Serve.self, Admin.self,
            RecordsCommand.self, KeyValueCommand.self, AccountCommand.self, HooksCommand.self, DoctorCommand.self,
        ]
    )
}
