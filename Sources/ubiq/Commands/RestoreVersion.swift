// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCloudKit

/// `ubiq restore PATH --version ID`: puts a version the server keeps back, on every device.
struct RestoreVersion: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "restore",
        abstract: "Put an earlier version of a synced file back, on every device.",
        discussion: """
            ID is a server version of PATH (`ubiq versions PATH` lists them). The version's \\
            content becomes a new upload, so the content it replaces stays in the history too. \\
            Conflict versions on this device are settled with `ubiq resolve`; deleted files \\
            come back with `ubiq trash restore`.

            Examples:
              ubiq versions notes.txt
              ubiq restore notes.txt --version 17
            """
    )

    @Argument(help: "The file, in the synced folder.")
    var path: String

    @Option(help: "The server version to restore (an ID from `ubiq versions PATH`).")
    var version: Int64

    @Option(help: "The synced folder (overrides $UBIQUITY_FOLDER; default ~/Ubiquity).")
    var folder: String?

    @OptionGroup var server: DocumentsServerOptions

    func validate() throws {
        guard version > 0 else { throw ValidationError("--version \(version): expected an ID from `ubiq versions \(path)`") }
    }

    func run() async throws {
        do {
            let root = try FolderOptions.root(folder: folder)
            let file = try CLI.absolutePath(path)
            guard CanonicalPath.isSameOrDescendant(file, of: root), file != root else {
                throw ValidationError("PATH '\(path)' is not in the synced folder '\(root)'")
            }
            let relative = String(file.dropFirst(root.count + 1))
            let database = try server.database()
            let versions = try await database.documentVersions(atPath: relative)
            guard let chosen = versions.first(where: { $0.id == version }) else {
                throw UbiquityError(.notFound, "--version \(version): not a version of '\(relative)' on the server (`ubiq versions \(path)` lists them)")
            }
            if chosen.isCurrent {
                CLI.printLine("version \(version) is already the current content of \(relative)")
                return
            }
            try await database.restoreDocumentVersion(version)
            CLI.printLine("restored version \(version) of \(relative); every device gets it with the next sync")
        } catch let error as ValidationError {
            throw error
        } catch {
            throw CLI.report(error, command: "restore")
        }
    }
}
