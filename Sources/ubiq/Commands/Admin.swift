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
        commandName: "admin",
        abstract: "Administer a records server: containers, users, server-to-server keys, schemas, security roles.",
        discussion: """
            Works on the server's data directly (--data DIR or --database URL, as `ubiq serve`), \
            whether or not the server runs. Tokens and key IDs are printed alone on stdout, for \
            scripts; they are stored only as digests, so keep them.

            Examples:
              TOKEN=$(ubiq admin --data srv container add iCloud.com.example.Notes)
              WEB=$(ubiq admin --data srv user add mei --email mei@example.org)
              printf '%s' "$PASSWORD" | ubiq admin --data srv user add mei --password-stdin
              ubiq admin --data srv user token mei
              ubiq admin --data srv user tokens mei
              ubiq admin --data srv user revoke mei --all
              printf '%s' "$NEW" | ubiq admin --data srv user password mei --password-stdin
              ubiq admin --data srv user disable mei
              ubiq admin --data srv user set mei --given-name Mei --family-name Chen --discoverable iCloud.com.example.Notes
              ubiq admin --data srv key add iCloud.com.example.Notes --public-key eckey.pub
              ubiq admin --data srv schema deploy iCloud.com.example.Notes
              ubiq admin --data srv role set iCloud.com.example.Notes Note _world --none
              ubiq admin --database postgres://… --blobs /srv/blobs gc --older-than 48
              ubiq admin --data srv blobs migrate --to s3://ubiquity/blobs --to-s3-endpoint http://127.0.0.1:9000
              ubiq admin --data srv blobs verify
            """,
        subcommands: [ContainerAdmin.self, UserAdmin.self, KeyAdmin.self, SchemaAdmin.self, RoleAdmin.self, GarbageCollectAdmin.self, BlobsAdmin.self]
    )

    /// `--data`/`--database` given before the subcommand (`ubiq admin --data DIR container add …`).
    @OptionGroup var store: ServerStoreOptions

    /// Runs `body` with an admin over the store, reporting errors as `ubiq admin`.
    static func withAdmin(_ options: ServerStoreOptions, parent: ServerStoreOptions, command: String,
                          _ body: (RecordsAdmin) async throws -> Void) async throws {
        try await withStore(options, parent: parent, command: command) { store, _, _ in try await body(RecordsAdmin(store: store)) }
    }

    /// Runs `body` with the store (and the options merged with the parent's), reporting errors
    /// as `ubiq admin`.
    static func withStore(_ options: ServerStoreOptions, parent: ServerStoreOptions, command: String,
                          _ body: (any RecordStore, ServerStoreOptions, Logger) async throws -> Void) async throws {
        let logger = Logger(label: "ubiq.admin")
        do {
            var merged = options
            if merged.data == nil, merged.database == nil {
                merged.data = parent.data
                merged.database = parent.database
                merged.schema = merged.schema ?? parent.schema
            }
            merged.blobs = merged.blobs ?? parent.blobs
            merged.s3Endpoint = merged.s3Endpoint ?? parent.s3Endpoint
            merged.s3Region = merged.s3Region ?? parent.s3Region
            merged.s3Addressing = merged.s3Addressing ?? parent.s3Addressing
            merged.s3Credentials = merged.s3Credentials ?? parent.s3Credentials
            let store = try await merged.open(logger: logger)
            do {
                try await body(store, merged, logger)
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

/// `ubiq admin container add|list|origins|developers`.
struct ContainerAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(commandName: "container", abstract: "Add containers and API tokens, the web origins they serve, and their developers.",
                                                    discussion: "Examples:\n  ubiq admin --data srv container add iCloud.com.example.Notes",
                                                    subcommands: [Add.self, List.self, Origins.self, Developers.self])

    /// `ubiq admin container add ID`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Add a container (or another API token for it); prints the API token (ckAPIToken).",
            discussion: "Examples:\n  ubiq admin --data srv container add iCloud.com.example.Notes")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: ContainerAdmin
        @Argument(help: "The container identifier, e.g. iCloud.com.example.Notes.") var identifier: String
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "container add") { admin in
                let token = try await admin.addContainer(identifier)
                CLI.printLine(json ? CLI.jsonObject([("container", identifier), ("apiToken", token)]) : token)
            }
        }
    }

    /// `ubiq admin container origins ID [--add ORIGIN]… [--remove ORIGIN]…`.
    struct Origins: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "origins",
            abstract: "Show or change the web origins the container's sign-in page hands tokens to (CloudKit's Allowed Origins).",
            discussion: """
                A CloudKit JS app served from another origin than the server's receives the token of a sign-in only when \
                its origin is allowed here. Prints the allowed origins after the change, one per line.
                Examples:
                  ubiq admin --data srv container origins iCloud.com.example.Notes --add https://notes.example.org
                  ubiq admin --data srv container origins iCloud.com.example.Notes --remove http://localhost:8080
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: ContainerAdmin
        @Argument(help: "The container identifier, e.g. iCloud.com.example.Notes.") var identifier: String
        @Option(name: .customLong("add"), help: "Allow this origin (scheme and host, like https://app.example.org); repeatable.")
        var added: [String] = []
        @Option(name: .customLong("remove"), help: "No longer allow this origin; repeatable.") var removed: [String] = []
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "container origins") { admin in
                let origins = try await admin.allowedOrigins(container: identifier, add: added, remove: removed)
                if json {
                    CLI.printLine(CLI.jsonObject([("container", identifier), ("origins", origins)]))
                } else {
                    for origin in origins { CLI.printLine(origin) }
                }
            }
        }
    }

    /// `ubiq admin container developers ID [--add USER]… [--remove USER]…`.
    struct Developers: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "developers",
            abstract: "Show or change who may open the container in the web's Console (/console).",
            discussion: """
                A developer of a container signs in on the server's web page with their account's password and opens \
                /console: the container's records, schema (and its deployment to production), users, subscriptions, \
                request log and telemetry. Prints the developers after the change, one account name per line.
                Examples:
                  ubiq admin --data srv container developers iCloud.com.example.Notes --add alice
                  ubiq admin --data srv container developers iCloud.com.example.Notes --remove bob
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: ContainerAdmin
        @Argument(help: "The container identifier, e.g. iCloud.com.example.Notes.") var identifier: String
        @Option(name: .customLong("add"), help: "Make this account a developer of the container; repeatable.") var added: [String] = []
        @Option(name: .customLong("remove"), help: "No longer let this account open the container in the Console; repeatable.")
        var removed: [String] = []
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "container developers") { admin in
                let developers = try await admin.developers(container: identifier, add: added, remove: removed)
                if json {
                    CLI.printLine(CLI.jsonObject([("container", identifier), ("developers", developers)]))
                } else {
                    for name in developers { CLI.printLine(name) }
                }
            }
        }
    }

    /// `ubiq admin container list`.
    struct List: AsyncParsableCommand {
        static let configuration = CommandConfiguration(commandName: "list", abstract: "List containers.", discussion: "Examples:\n  ubiq admin --data srv container list")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: ContainerAdmin
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "container list") { admin in
                for container in try await admin.containers() { CLI.printLine(json ? CLI.jsonObject([("container", container)]) : container) }
            }
        }
    }
}

/// `ubiq admin user add|token`.
struct UserAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(commandName: "user", abstract: "Add and change accounts, issue and revoke tokens, disable accounts.",
                                                    discussion: "Examples:\n  ubiq admin --data srv user add mei --email mei@example.org",
                                                    subcommands: [Add.self, SetUser.self, Token.self, Tokens.self, Revoke.self, Password.self,
                                                                  Disable.self, Enable.self])

    /// A password read whole from stdin (`--password-stdin`), without one trailing newline.
    static func passwordFromStdin() throws -> String {
        let data = FileHandle.standardInput.readDataToEndOfFile()
        guard var text = String(data: data, encoding: .utf8) else {
            throw ValidationError("--password-stdin: the password is not UTF-8")
        }
        if text.hasSuffix("\n") { text.removeLast() }
        guard !text.isEmpty else { throw ValidationError("--password-stdin: the password is empty") }
        return text
    }

    /// `ubiq admin user add NAME`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Create an account; prints a web-auth token (ckWebAuthToken) for it.",
            discussion: "Examples:\n  printf '%s' \"$PW\" | ubiq admin --data srv user add mei --email mei@example.org --password-stdin")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name (letters, digits, '.', '_', '-', '@').") var name: String
        @Option(help: "The account's e-mail address.") var email: String?
        @Flag(help: "Read a password from stdin (for the sign-in page), without a trailing newline.") var passwordStdin = false
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            let password = passwordStdin ? try UserAdmin.passwordFromStdin() : nil
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user add") { admin in
                let token = try await admin.addUser(name, email: email, password: password)
                CLI.printLine(json ? CLI.jsonObject([("user", name), ("webAuthToken", token)]) : token)
            }
        }
    }

    /// `ubiq admin user set NAME`.
    struct SetUser: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "set",
            abstract: "Change an account: its name, e-mail, and whether others may discover it in a container.",
            discussion: """
                An empty value clears a name or the e-mail. Users are found by users/discover and \
                users/lookup/* only in the containers they are discoverable in (off by default; they \
                may opt in themselves with users/discoverability). Prints, for each container named, \
                the user's record name there and the setting.

                Examples:
                  ubiq admin --data srv user set mei --given-name Mei --family-name Chen --discoverable iCloud.com.example.Notes
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Option(help: "The given (first) name.") var givenName: String?
        @Option(help: "The family (last) name.") var familyName: String?
        @Option(help: "The middle name.") var middleName: String?
        @Option(help: "The nickname.") var nickname: String?
        @Option(help: "The name prefix (Dr.).") var namePrefix: String?
        @Option(help: "The name suffix (Jr.).") var nameSuffix: String?
        @Option(help: "The e-mail address (others find the user by it when discoverable).") var email: String?
        @Option(help: "A container to make the user discoverable in (repeatable).") var discoverable: [String] = []
        @Option(help: "A container to make the user undiscoverable in (repeatable).") var undiscoverable: [String] = []
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            if let both = discoverable.first(where: { undiscoverable.contains($0) }) {
                throw ValidationError("--discoverable and --undiscoverable both name \(both)")
            }
            let nothing = [givenName, familyName, middleName, nickname, namePrefix, nameSuffix, email].allSatisfy { $0 == nil }
            if nothing, discoverable.isEmpty, undiscoverable.isEmpty {
                throw ValidationError("nothing to change: give --given-name, --family-name, --nickname, --email, --discoverable CONTAINER, …")
            }
        }

        func run() async throws {
            var flags: [String: Bool] = [:]
            for container in discoverable { flags[container] = true }
            for container in undiscoverable { flags[container] = false }
            let update = RecordsAdmin.UserUpdate(givenName: givenName, familyName: familyName, middleName: middleName, nickname: nickname,
                                                 namePrefix: namePrefix, nameSuffix: nameSuffix, email: email, discoverable: flags)
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user set") { admin in
                for identity in try await admin.setUser(name, update) {
                    if json {
                        CLI.printLine(CLI.jsonObject([("container", identity.container), ("userRecordName", identity.userRecordName),
                                                      ("discoverable", identity.discoverable)]))
                    } else {
                        CLI.printLine("\(identity.container) \(identity.userRecordName) \(identity.discoverable ? "discoverable" : "undiscoverable")")
                    }
                }
            }
        }
    }

    /// `ubiq admin user token NAME`.
    struct Token: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "token",
            abstract: "Issue another web-auth token for an account (valid two weeks), or a device token (--device, valid a year).",
            discussion: """
                A device token signs a device in without a password: \
                `ubiq account login --server URL --token TOKEN`. A web-auth token is valid in \
                every container unless --container names the one it is for (tokens from the \
                sign-in page are always bound to the app's container).
                Examples:
                  ubiq admin --data srv user token mei
                  ubiq admin --data srv user token mei --container iCloud.com.example.Notes
                  ubiq admin --data srv user token mei --device
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Flag(help: "Issue a device token (for `ubiq account login --token`).") var device = false
        @Option(help: "The only container the web-auth token is valid in.") var container: String?
        @Flag(help: "Print JSON.") var json = false
        func validate() throws {
            if device, container != nil { throw ValidationError("--container: a device token is valid in every container; leave out --device or --container") }
        }
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user token") { admin in
                let token = try await admin.issueToken(forUser: name, device: device, container: container)
                CLI.printLine(json ? CLI.jsonObject([("user", name), ("kind", device ? "device" : "webAuth"), ("token", token)]) : token)
            }
        }
    }
}

/// `ubiq admin key add CONTAINER --public-key PEM`.
struct KeyAdmin: AsyncParsableCommand {
    @ParentCommand var admin: Admin

    static let configuration = CommandConfiguration(commandName: "key", abstract: "Register server-to-server keys.",
                                                    discussion: "Examples:\n  ubiq admin --data srv key add iCloud.com.example.Notes --public-key eckey.pub",
                                                    subcommands: [Add.self])

    /// `ubiq admin key add`.
    struct Add: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "add",
            abstract: "Register a P-256 public key for server-to-server requests; prints its key ID.",
            discussion: """
                Make a key with `openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem` and \
                its public half with `openssl ec -in eckey.pem -pubout -out eckey.pub`.

                Examples:
                  ubiq admin --data srv key add iCloud.com.example.Notes --public-key eckey.pub
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: KeyAdmin
        @Argument(help: "The container identifier.") var container: String
        @Option(help: "The public key: a PEM file, or the PEM text itself.") var publicKey: String
        @Flag(help: "Print JSON.") var json = false
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
                let keyID = try await admin.addKey(container: container, publicKeyPEM: pem)
                CLI.printLine(json ? CLI.jsonObject([("container", container), ("keyID", keyID)]) : keyID)
            }
        }
    }
}

/// `ubiq admin gc`: deletes asset content no record refers to.
struct GarbageCollectAdmin: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "gc", abstract: "Delete asset content that no record refers to.",
        discussion: """
            Deletes stored asset content (and its chunks) that no live record refers to and that \
            is older than --older-than hours; younger content is kept, so files uploaded but not \
            yet saved in a record survive (keep it at least 24, the receipts' lifetime). Safe while \
            servers run. `ubiq serve` does the same every 6 hours (--gc-interval).



            Examples:

              ubiq admin --data srv gc --older-than 48
            """)
    @OptionGroup var store: ServerStoreOptions
    @ParentCommand var admin: Admin
    @Option(help: "Keep unreferenced content younger than this many hours.") var olderThan: Double = 48
    @Flag(help: "Print JSON.") var json = false

    func validate() throws {
        guard olderThan >= 0, olderThan.isFinite else { throw ValidationError("--older-than \(olderThan): expected a number of hours, 0 or more") }
    }

    func run() async throws {
        try await Admin.withStore(store, parent: admin.store, command: "gc") { store, options, logger in
            let assets = try await AssetService.open(recordStore: store, blobs: try options.blobLocation(), logger: logger)
            let engine = RecordsEngine(store: store, logger: logger, assets: assets)
            guard let report = try await engine.collectAssetGarbage(olderThan: Date().addingTimeInterval(-olderThan * 3600)) else { return }
            if json {
                CLI.printLine(CLI.jsonObject([("assetsDeleted", report.manifestsDeleted), ("chunksDeleted", report.chunksDeleted),
                                              ("bytesFreed", Int(report.bytesFreed)), ("uploadsDeleted", report.sessionsDeleted),
                                              ("packsCompacted", report.packsCompacted)]))
                return
            }
            CLI.printLine("deleted \(report.manifestsDeleted) assets, \(report.chunksDeleted) chunks, \(report.sessionsDeleted) stale uploads; "
                          + "compacted \(report.packsCompacted) packs; \(report.bytesFreed) bytes freed")
        }
    }
}
