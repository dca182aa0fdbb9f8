// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCloudKit

/// `ubiq trash list|restore|delete|empty`: Recently Deleted, kept by the server.
struct Trash: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "trash",
        abstract: "Recently Deleted: list, restore or delete for good what was deleted from the synced folder.",
        discussion: """
            The server keeps what any device deleted from the synced folder for 30 days \
            (`ubiq serve --trash-days`). Restoring puts an item back under its old path on every \
            device, with what was deleted with it. The same list is on the web (Drive).

            Examples:
              ubiq trash list
              ubiq trash restore 42
              ubiq trash restore notes/todo.txt
              ubiq trash delete 42
              ubiq trash empty --yes
            """,
        subcommands: [List.self, Restore.self, Delete.self, Empty.self],
        defaultSubcommand: List.self
    )

    /// `ubiq trash list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "list",
            abstract: "List Recently Deleted, newest first.",
            discussion: """
                JSON (--json): {"items": [{"id", "path", "kind", "deletedAt", "deletedBy", "size", \
                "expiresAt", "contains"}]}; times in ISO 8601; contains: items deleted with a folder.
                """)

        @OptionGroup var server: DocumentsServerOptions

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let items: [DeletedDocument]
            do {
                items = try await server.database().recentlyDeletedDocuments()
            } catch {
                throw CLI.report(error, command: "trash list")
            }
            if json {
                try DocumentCommandIO.printJSON(["items": items.map(Trash.row)])
                return
            }
            guard !items.isEmpty else {
                CLI.printLine("Recently Deleted is empty")
                return
            }
            let rows = items.map { item -> [String] in
                let contains = item.containedItemCount > 0 ? " (+\(item.containedItemCount) inside)" : ""
                return [String(item.id), item.kind, DocumentCommandIO.timestamp(item.deletedAt) ?? "-", item.deletedBy,
                        DocumentCommandIO.timestamp(item.expiresAt) ?? "-", item.path + contains]
            }
            CLI.printLine(DocumentCommandIO.table(header: ["ID", "KIND", "DELETED", "BY", "EXPIRES", "PATH"], rows: rows))
        }
    }

    /// `ubiq trash restore ID|PATH…`.
    struct Restore: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "restore",
            abstract: "Put items back from Recently Deleted, on every device.",
            discussion: "Each ITEM is an ID from `ubiq trash list` or the path an item had (relative to the synced folder; the newest such item).")

        @OptionGroup var chosen: Items

        @OptionGroup var server: DocumentsServerOptions

        func run() async throws {
            do {
                let database = try server.database()
                let ids = try await Trash.ids(chosen.items, in: database)
                for path in try await database.restoreDeletedDocuments(ids) { CLI.printLine("restored \(path)") }
            } catch {
                throw CLI.report(error, command: "trash restore")
            }
        }
    }

    /// `ubiq trash delete ID|PATH…`.
    struct Delete: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "delete",
            abstract: "Delete items from Recently Deleted for good (with their versions).")

        @OptionGroup var chosen: Items

        @OptionGroup var server: DocumentsServerOptions

        func run() async throws {
            do {
                let database = try server.database()
                let count = try await database.permanentlyDeleteDocuments(try await Trash.ids(chosen.items, in: database))
                CLI.printLine("deleted \(count) item\(count == 1 ? "" : "s") for good")
            } catch {
                throw CLI.report(error, command: "trash delete")
            }
        }
    }

    /// `ubiq trash empty --yes`.
    struct Empty: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "empty",
            abstract: "Empty Recently Deleted for good.")

        @Flag(help: "Really empty it (nothing can be restored afterwards).")
        var yes = false

        @OptionGroup var server: DocumentsServerOptions

        func validate() throws {
            guard yes else { throw ValidationError("emptying Recently Deleted cannot be undone: add --yes") }
        }

        func run() async throws {
            do {
                let count = try await server.database().emptyRecentlyDeleted()
                CLI.printLine("deleted \(count) item\(count == 1 ? "" : "s") for good")
            } catch {
                throw CLI.report(error, command: "trash empty")
            }
        }
    }

    /// The items `restore` and `delete` act on.
    struct Items: ParsableArguments {
        @Argument(help: "IDs or paths (relative to the synced folder) of items in Recently Deleted.")
        var items: [String]

        func validate() throws {
            guard !items.isEmpty else { throw ValidationError("give the ID or path of at least one item (`ubiq trash list` shows them)") }
        }
    }

    /// The IDs of `items`: numbers as they are, paths looked up in Recently Deleted.
    static func ids(_ items: [String], in database: CloudDatabase) async throws -> [Int64] {
        var listed: [DeletedDocument]?
        var ids: [Int64] = []
        for item in items {
            if let id = Int64(item), id > 0 {
                ids.append(id)
                continue
            }
            let path = item.split(separator: "/").joined(separator: "/")
            if listed == nil { listed = try await database.recentlyDeletedDocuments() }
            guard let found = listed?.first(where: { $0.path == path }) else {
                throw UbiquityError(.notFound, "'\(item)' is not in Recently Deleted (`ubiq trash list` shows what is)")
            }
            ids.append(found.id)
        }
        return ids
    }

    static func row(_ item: DeletedDocument) -> [String: Any] {
        ["id": item.id, "path": item.path, "kind": item.kind, "deletedAt": DocumentCommandIO.timestamp(item.deletedAt) ?? NSNull(),
         "deletedBy": item.deletedBy, "size": item.size, "expiresAt": DocumentCommandIO.timestamp(item.expiresAt) ?? NSNull(),
         "contains": item.containedItemCount, "recordName": item.recordName]
    }
}
