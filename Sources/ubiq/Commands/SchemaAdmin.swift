// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Parses `--environment development|production` for `ubiq admin`.
func adminEnvironment(_ text: String) throws -> CloudKitEnvironment {
    guard let environment = CloudKitEnvironment(rawValue: text) else {
        throw ValidationError("--environment '\(text)': expected development or production")
    }
    return environment
}

/// Parses `on|off` for an index or permission flag.
func adminSwitch(_ text: String?, option: String) throws -> Bool? {
    switch text {
    case nil: return nil
    case "on": return true
    case "off": return false
    case let other?: throw ValidationError("\(option) '\(other)': expected on or off")
    }
}

/// `ubiq admin schema show|export|import|deploy|reset|index|query-indexes`.
struct SchemaAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(
        commandName: "schema",
        abstract: "Show, export, import and deploy record type schemas; reset development; set indexes; query indexes.",
        discussion: """
            Each container has a development and a production schema. Development grows just in \
            time (the first save of a type or field adds it, queryable and sortable, searchable for \
            strings); production is changed only by `schema deploy`, and refuses saves with \
            unknown types or fields. See docs/server.md, "Schema and environments".

            Examples:
              ubiq admin --data srv schema export iCloud.com.example.Notes > notes.ckdb
            """,
        subcommands: [Show.self, Export.self, Import.self, Deploy.self, Reset.self, Index.self, QueryIndexes.self])

    /// `ubiq admin schema show CONTAINER`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print a schema: record types, fields, indexes and permissions (a table, or JSON).",
            discussion: "Examples:\n  ubiq admin --data srv schema show iCloud.com.example.Notes --environment production --json")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Option(help: "development (default) or production.") var environment = "development"
        @Flag(help: "Print JSON instead of a table.") var json = false

        func validate() throws { _ = try adminEnvironment(environment) }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema show") { admin in
                let schema = try await admin.schema(container: container, environment: environment)
                if json {
                    CLI.printLine(String(decoding: schema.json.serialized(), as: UTF8.self))
                } else {
                    CLI.printRaw(SchemaAdmin.table(schema, container: container, environment: environment))
                }
            }
        }
    }

    /// The human form of `schema show`.
    static func table(_ schema: ContainerSchema, container: String, environment: CloudKitEnvironment) -> String {
        var lines = ["\(container) \(environment.rawValue): \(schema.recordTypes.count) record type\(schema.recordTypes.count == 1 ? "" : "s")"]
        if !schema.roles.isEmpty { lines.append("roles: " + schema.roles.sorted().joined(separator: ", ")) }
        for type in schema.recordTypes.values.sorted(by: { $0.name < $1.name }) {
            lines.append("")
            lines.append(type.name)
            let rows = [["FIELD", "TYPE", "QUERYABLE", "SORTABLE", "SEARCHABLE"]] + type.fields.values.sorted(by: { $0.name < $1.name }).map { field in
                [field.name, field.type, field.queryable ? "yes" : "no", field.sortable ? "yes" : "no", field.searchable ? "yes" : "no"]
            }
            let widths = (0..<5).map { column in rows.map { $0[column].count }.max() ?? 0 }
            if type.fields.isEmpty { lines.append("  (no fields)") } else {
                for row in rows {
                    lines.append("  " + row.enumerated().map { $1.padding(toLength: widths[$0], withPad: " ", startingAt: 0) }.joined(separator: "  ")
                        .trimmingCharacters(in: .whitespaces))
                }
            }
            lines.append("  permissions: " + permissionsText(type.permissions))
        }
        return lines.joined(separator: "\n") + "\n"
    }

    /// `_world read; _icloud create; _creator read, write` (built-in roles first).
    static func permissionsText(_ permissions: [String: SchemaPermissions]) -> String {
        let order = SecurityRole.builtIn + permissions.keys.filter { !SecurityRole.builtIn.contains($0) }.sorted()
        let parts = order.compactMap { role in permissions[role].flatMap { $0.isEmpty ? nil : "\(role) \($0.names.joined(separator: ", "))" } }
        return parts.isEmpty ? "none" : parts.joined(separator: "; ")
    }

    /// `ubiq admin schema export CONTAINER`.
    struct Export: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "export",
            abstract: "Print a schema as a schema file (the .ckdb-like language `schema import` reads).",
            discussion: """
                RECORD TYPE Note ( "title" STRING QUERYABLE SORTABLE SEARCHABLE, …, GRANT READ TO "_world" ); \
                see docs/server.md for the grammar.

                Examples:
                  ubiq admin --data srv schema export iCloud.com.example.Notes > notes.ckdb
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Option(help: "development (default) or production.") var environment = "development"

        func validate() throws { _ = try adminEnvironment(environment) }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema export") { admin in
                CLI.printRaw(try await admin.schema(container: container, environment: environment).text)
            }
        }
    }

    /// `ubiq admin schema import CONTAINER FILE`.
    struct Import: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "import",
            abstract: "Import a schema file into development: adds its types, fields and roles, sets its indexes and permissions.",
            discussion: """
                Types and fields the file does not name are kept. A field whose type would change is \
                refused (all refusals are listed and nothing changes). FILE '-' reads stdin.

                Examples:
                  ubiq admin --data srv schema import iCloud.com.example.Notes notes.ckdb
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Argument(help: "The schema file ('-' for stdin).") var file: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            let text: String
            if file == "-" {
                text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self)
            } else {
                guard let contents = try? String(contentsOfFile: try CLI.absolutePath(file), encoding: .utf8) else {
                    FileHandle.standardError.write(Data("ubiq admin schema import: \(file): cannot read the file (UTF-8 text expected)\n".utf8))
                    throw ExitCode(64)
                }
                text = contents
            }
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema import") { admin in
                let schema = try await admin.importSchema(container: container, text: text)
                if json { CLI.printLine(CLI.jsonObject([("environment", "development"), ("recordTypes", schema.recordTypes.count)])); return }
                CLI.printLine("imported into development: \(schema.recordTypes.count) record type\(schema.recordTypes.count == 1 ? "" : "s")")
            }
        }
    }

    /// `ubiq admin schema deploy CONTAINER`.
    struct Deploy: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "deploy",
            abstract: "Deploy development's schema to production: adds types, fields, indexes, roles, permissions.",
            discussion: """
                Refuses what production forbids — removing a record type or field, changing a field's \
                type — listing every refusal and changing nothing.

                Examples:
                  ubiq admin --data srv schema deploy iCloud.com.example.Notes
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema deploy") { admin in
                let deployment = try await admin.deploySchema(container: container)
                if json {
                    try DocumentCommandIO.printJSON([
                        "environment": "production", "recordTypes": deployment.schema.recordTypes.count,
                        "addedTypes": deployment.addedTypes.map { "\($0)" }, "addedFields": deployment.addedFields.map { "\($0)" },
                        "addedQueryIndexes": deployment.addedIndexes,
                    ])
                    return
                }
                for type in deployment.addedTypes { CLI.printLine("added record type \(type)") }
                for field in deployment.addedFields { CLI.printLine("added field \(field)") }
                for index in deployment.addedIndexes { CLI.printLine("added query index \(index)") }
                CLI.printLine("deployed to production: \(deployment.schema.recordTypes.count) record type\(deployment.schema.recordTypes.count == 1 ? "" : "s")")
            }
        }
    }

    /// `ubiq admin schema reset CONTAINER`.
    struct Reset: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "reset",
            abstract: "Reset development to production's schema, deleting all development data.",
            discussion: """
                As CloudKit Console's "Reset Development Environment": every development database, \
                zone, record and subscription of the container is deleted. Production is untouched.

                Examples:
                  ubiq admin --data srv schema reset iCloud.com.example.Notes
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema reset") { admin in
                try await admin.resetDevelopment(container: container)
                if json { CLI.printLine(CLI.jsonObject([("container", container), ("reset", true)])); return }
                CLI.printLine("development of \(container) reset to production's schema; its data is deleted")
            }
        }
    }

    /// `ubiq admin schema index CONTAINER TYPE FIELD`.
    struct Index: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "index",
            abstract: "Turn a field's indexes on or off: queryable (filters), sortable (sorts), searchable (token search).",
            discussion: """
                Searchable is only for STRING and LIST<STRING> fields. Prints the field's indexes.

                Examples:
                  ubiq admin --data srv schema index iCloud.com.example.Notes Note body --searchable off
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: SchemaAdmin
        @Argument(help: "The container identifier.") var container: String
        @Argument(help: "The record type.") var recordType: String
        @Argument(help: "The field.") var field: String
        @Option(help: "on or off.") var queryable: String?
        @Option(help: "on or off.") var sortable: String?
        @Option(help: "on or off (STRING and LIST<STRING> fields only).") var searchable: String?
        @Option(help: "development (default) or production.") var environment = "development"
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            _ = try adminEnvironment(environment)
            let flags = [try adminSwitch(queryable, option: "--queryable"), try adminSwitch(sortable, option: "--sortable"),
                         try adminSwitch(searchable, option: "--searchable")]
            if flags.allSatisfy({ $0 == nil }) { throw ValidationError("nothing to change: give --queryable, --sortable or --searchable (on or off)") }
        }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            let flags = (try adminSwitch(queryable, option: "--queryable"), try adminSwitch(sortable, option: "--sortable"),
                         try adminSwitch(searchable, option: "--searchable"))
            try await Admin.withAdmin(store, parent: group.admin.store, command: "schema index") { admin in
                let result = try await admin.setIndexes(container: container, environment: environment, recordType: recordType, field: field,
                                                        queryable: flags.0, sortable: flags.1, searchable: flags.2)
                if json {
                    CLI.printLine(CLI.jsonObject([("recordType", recordType), ("field", result.name), ("type", "\(result.type)"),
                                                  ("queryable", result.queryable), ("sortable", result.sortable), ("searchable", result.searchable)]))
                    return
                }
                CLI.printLine("\(recordType).\(result.name) \(result.type) queryable \(result.queryable ? "on" : "off") sortable \(result.sortable ? "on" : "off") searchable \(result.searchable ? "on" : "off")")
            }
        }
    }
}
