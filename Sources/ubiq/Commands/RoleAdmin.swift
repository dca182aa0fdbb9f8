// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import UbiquityCore
import UbiquityServer

/// `ubiq admin role add|grant|revoke|set|show`: security roles of the public database.
struct RoleAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(
        commandName: "role",
        abstract: "Security roles of the public database: named roles, their members, and each record type's permissions.",
        discussion: """
            Built-in roles: _world (anyone with the API token; read only), _icloud (any signed-in \
            user), _creator (a record's creator). A new record type lets _world read, _icloud \
            create and _creator read and write, as CloudKit. Roles and permissions are part of the \
            schema and deploy with it; members are per container.

            Examples:
              ubiq admin --data srv role set iCloud.com.example.Notes Note Moderator --read --write
            """,
        subcommands: [Add.self, Grant.self, Revoke.self, SetRole.self, Show.self])

    /// `ubiq admin role add CONTAINER ROLE`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a named role to a schema (development unless --environment).",
            discussion: "Examples:\n  ubiq admin --data srv role add iCloud.com.example.Notes Moderator")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: RoleAdmin
        @Argument(help: "The container identifier.") var container: String
        @Argument(help: "The role: letters, digits and '_', starting with a letter.") var role: String
        @Option(help: "development (default) or production.") var environment = "development"
        @Flag(help: "Print JSON.") var json = false

        func validate() throws { _ = try adminEnvironment(environment) }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            try await Admin.withAdmin(store, parent: group.admin.store, command: "role add") { admin in
                try await admin.addRole(container: container, role: role, environment: environment)
                CLI.printLine(json ? CLI.jsonObject([("role", role), ("environment", environment.rawValue)]) : "role \(role) in \(environment.rawValue)")
            }
        }
    }

    /// `ubiq admin role grant CONTAINER ROLE USER`.
    struct Grant: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "grant",
            abstract: "Make a user a member of a named role; prints the user's record name.",
            discussion: "Examples:\n  ubiq admin --data srv role grant iCloud.com.example.Notes Moderator mei")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: RoleAdmin
        @Argument(help: "The container identifier.") var container: String
        @Argument(help: "The named role.") var role: String
        @Argument(help: "An account name, or a user record name (_ and 32 hex digits).") var user: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "role grant") { admin in
                let recordName = try await admin.setRoleMember(true, container: container, role: role, user: user)
                CLI.printLine(json ? CLI.jsonObject([("role", role), ("userRecordName", recordName), ("member", true)]) : recordName)
            }
        }
    }

    /// `ubiq admin role revoke CONTAINER ROLE USER`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Remove a user from a named role; prints the user's record name.",
            discussion: "Examples:\n  ubiq admin --data srv role revoke iCloud.com.example.Notes Moderator mei")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: RoleAdmin
        @Argument(help: "The container identifier.") var container: String
        @Argument(help: "The named role.") var role: String
        @Argument(help: "An account name, or a user record name (_ and 32 hex digits).") var user: String
        @Flag(help: "Print JSON.") var json = false

        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "role revoke") { admin in
                let recordName = try await admin.setRoleMember(false, container: container, role: role, user: user)
                CLI.printLine(json ? CLI.jsonObject([("role", role), ("userRecordName", recordName), ("member", false)]) : recordName)
            }
        }
    }

    /// `ubiq admin role set CONTAINER TYPE ROLE`.
    struct SetRole: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Set what a role may do with a record type's records: --create, --read, --write (which includes read), or --none.",
            discussion: """
                Replaces the role's permissions on the type. _world may only read.

                Examples:
                  ubiq admin --data srv role set iCloud.com.example.Notes Note _world --none
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: RoleAdmin
        @Argument(help: "The container identifier.") var container: String
        @Argument(help: "The record type.") var recordType: String
        @Argument(help: "_world, _icloud, _creator or a named role.") var role: String
        @Flag(help: "May save new records.") var create = false
        @Flag(help: "May fetch and query records.") var read = false
        @Flag(help: "May change and delete records (and read them).") var write = false
        @Flag(help: "May do nothing.") var none = false
        @Option(help: "development (default) or production.") var environment = "development"
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            _ = try adminEnvironment(environment)
            if none, create || read || write { throw ValidationError("--none cannot be given with --create, --read or --write") }
            if !none, !create, !read, !write { throw ValidationError("give --create, --read, --write, or --none") }
        }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            var permissions: SchemaPermissions = []
            if create { permissions.insert(.create) }
            if read { permissions.insert(.read) }
            if write { permissions.insert(.write) }
            let granted = permissions
            try await Admin.withAdmin(store, parent: group.admin.store, command: "role set") { admin in
                try await admin.setPermissions(granted, container: container, environment: environment, recordType: recordType, role: role)
                let summary = try await admin.roles(container: container, environment: environment)
                let text = SchemaAdmin.permissionsText(summary.permissions[recordType] ?? [:])
                CLI.printLine(json ? CLI.jsonObject([("recordType", recordType), ("permissions", text)]) : "\(recordType): " + text)
            }
        }
    }

    /// `ubiq admin role show CONTAINER`.
    struct Show: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "show",
            abstract: "Print the named roles with their members, and each record type's permissions.",
            discussion: "Examples:\n  ubiq admin --data srv role show iCloud.com.example.Notes")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: RoleAdmin
        @Argument(help: "The container identifier.") var container: String
        @Option(help: "development (default) or production.") var environment = "development"
        @Flag(help: "Print JSON.") var json = false

        func validate() throws { _ = try adminEnvironment(environment) }

        func run() async throws {
            let environment = try adminEnvironment(self.environment)
            try await Admin.withAdmin(store, parent: group.admin.store, command: "role show") { admin in
                let summary = try await admin.roles(container: container, environment: environment)
                if json {
                    var permissions: [String: String] = [:]
                    for (type, value) in summary.permissions { permissions[type] = SchemaAdmin.permissionsText(value) }
                    try DocumentCommandIO.printJSON([
                        "container": container, "environment": environment.rawValue,
                        "roles": summary.members, "permissions": permissions,
                    ])
                    return
                }
                var lines = ["\(container) \(environment.rawValue)"]
                for role in summary.members.keys.sorted() {
                    let members = summary.members[role] ?? []
                    lines.append("role \(role): " + (members.isEmpty ? "no members" : members.joined(separator: ", ")))
                }
                for type in summary.permissions.keys.sorted() {
                    lines.append("\(type): " + SchemaAdmin.permissionsText(summary.permissions[type] ?? [:]))
                }
                CLI.printRaw(lines.joined(separator: "\n") + "\n")
            }
        }
    }
}
