// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Logging
import Ubiquity
import UbiquityServer

/// `ubiq admin`: scriptable administration of a records server's data (SQLite or PostgreSQL).
/// Secrets are printed once, alone on stdout.
struct Admin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        abstract: "Administer a records server: containers, users, server-to-server keys.",
        discussion: """
            Works on the server's data directly (--data DIR or --database URL, as `ubiq serve`), \
            whether or not the server runs. Tokens and key IDs are printed alone on stdout, for \
            scripts; they are stored only as digests, so keep them.

            Examples:
              TOKEN=$(ubiq admin --data srv container add iCloud.com.example.Notes)
              WEB=$(ubiq admin --data srv user add mei --email mei@example.org)
              printf '%s' "$PASSWORD" | ubiq admin --data srv user add mei --password-stdin
              ubiq admin --data srv user token mei
              ubiq admin --data srv key add iCloud.com.example.Notes --public-key eckey.pub
            """,
        subcommands: [ContainerAdmin.self, UserAdmin.self, KeyAdmin.self]
    )

    /// `--data`/`--database` given before the subcommand (`ubiq admin --data DIR container add …`).
    @OptionGroup var store: ServerStoreOptions

    /// Runs `body` with an admin over the store, reporting errors as `ubiq admin`.
    static func withAdmin(_ options: ServerStoreOptions, parent: ServerStoreOptions, command: String,
                          _ body: (RecordsAdmin) async throws -> Void) async throws {
        let logger = Logger(label: "ubiq.admin")
        do {
            var merged = options
            if merged.data == nil, merged.database == nil {
                merged.data = parent.data
                merged.database = parent.database
                merged.schema = merged.schema ?? parent.schema
            }
            let store = try await merged.open(logger: logger)
            do {
                try await body(RecordsAdmin(store: store))
            } catch {
                try? await store.close()
                throw error
            }
            try await store.close()
        } catch let error as ExitCode {
            throw error
        } catch let error as UbiquityError where error.code == .invalidArgument {
            FileHandle.standardError.write(Data("ubiq admin \(command): \(error.message)\n".utf8))
            throw ExitCode(64)
        } catch {
            throw CLI.report(error, command: "admin \(command)")
        }
    }
}

/// `ubiq admin container add|list`.
struct ContainerAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(commandName: "container", abstract: "Add containers and API tokens.",
                                                    discussion: "Example: ubiq admin --data srv container add iCloud.com.example.Notes",
                                                    subcommands: [Add.self, List.self])

    /// `ubiq admin container add ID`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Add a container (or another API token for it); prints the API token (ckAPIToken).",
            discussion: "Example: ubiq admin --data srv container add iCloud.com.example.Notes")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: ContainerAdmin
        @Argument(help: "The container identifier, e.g. iCloud.com.example.Notes.") var identifier: String
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "container add") { admin in
                CLI.printLine(try await admin.addContainer(identifier))
            }
        }
    }

    /// `ubiq admin container list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(abstract: "List containers.", discussion: "Example: ubiq admin --data srv container list")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: ContainerAdmin
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "container list") { admin in
                for container in try await admin.containers() { CLI.printLine(container) }
            }
        }
    }
}

/// `ubiq admin user add|token`.
struct UserAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(commandName: "user", abstract: "Add accounts and issue web-auth tokens.",
                                                    discussion: "Example: ubiq admin --data srv user add mei --email mei@example.org",
                                                    subcommands: [Add.self, Token.self])

    /// `ubiq admin user add NAME`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Create an account; prints a web-auth token (ckWebAuthToken) for it.",
            discussion: "Example: printf '%s' \"$PW\" | ubiq admin --data srv user add mei --email mei@example.org --password-stdin")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name (letters, digits, '.', '_', '-', '@').") var name: String
        @Option(help: "The account's e-mail address.") var email: String?
        @Flag(help: "Read a password from stdin (for the sign-in page), without a trailing newline.") var passwordStdin = false
        func run() async throws {
            var password: String?
            if passwordStdin {
                let data = FileHandle.standardInput.readDataToEndOfFile()
                guard var text = String(data: data, encoding: .utf8) else {
                    throw ValidationError("--password-stdin: the password is not UTF-8")
                }
                if text.hasSuffix("\n") { text.removeLast() }
                guard !text.isEmpty else { throw ValidationError("--password-stdin: the password is empty") }
                password = text
            }
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user add") { admin in
                CLI.printLine(try await admin.addUser(name, email: email, password: password))
            }
        }
    }

    /// `ubiq admin user token NAME`.
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Issue another web-auth token for an account (valid two weeks).",
            discussion: "Example: ubiq admin --data srv user token mei")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user token") { admin in
                CLI.printLine(try await admin.issueToken(forUser: name))
            }
        }
    }
}

/// `ubiq admin key add CONTAINER --public-key PEM`.
struct KeyAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(commandName: "key", abstract: "Register server-to-server keys.",
                                                    discussion: "Example: ubiq admin --data srv key add iCloud.com.example.Notes --public-key eckey.pub",
                                                    subcommands: [Add.self])

    /// `ubiq admin key add`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            abstract: "Register a P-256 public key for server-to-server requests; prints its key ID.",
            discussion: """
                Make a key with `openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem` and \
                its public half with `openssl ec -in eckey.pem -pubout -out eckey.pub`.
                Example: ubiq admin --data srv key add iCloud.com.example.Notes --public-key eckey.pub
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: KeyAdmin
        @Argument(help: "The container identifier.") var container: String
        @Option(help: "The public key: a PEM file, or the PEM text itself.") var publicKey: String
        func run() async throws {
            let pem: String
            if publicKey.contains("-----BEGIN") {
                pem = publicKey
            } else {
                guard let text = try? String(contentsOfFile: try CLI.absolutePath(publicKey), encoding: .utf8) else {
                    FileHandle.standardError.write(Data("ubiq admin key add: --public-key \(publicKey): cannot read the file\n".utf8))
                    throw ExitCode(64)
                }
                pem = text
            }
            try await Admin.withAdmin(store, parent: group.admin.store, command: "key add") { admin in
                CLI.printLine(try await admin.addKey(container: container, publicKeyPEM: pem))
            }
        }
    }
}
