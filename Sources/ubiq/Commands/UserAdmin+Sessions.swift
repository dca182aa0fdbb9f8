// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import UbiquityServer

/// `ubiq admin user tokens|revoke|password|disable|enable`: ending what a user is signed in to.
extension UserAdmin {
    /// `ubiq admin user tokens NAME`.
    struct Tokens: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "tokens",
            abstract: "List an account's live tokens: session, kind, container, issued, expires.",
            discussion: """
                A web-auth token is rotated as it is used; its rotations share its session, which \
                `ubiq admin user revoke NAME --session ID` ends. Tokens themselves are never shown \
                (the server keeps only digests). JSON keys (--json): session, kind (webAuth or \
                device), container (absent: every container), createdAt, expiresAt (ISO 8601).

                Examples:
                  ubiq admin --data srv user tokens mei
                  ubiq admin --data srv user tokens mei --json
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Flag(help: "Print JSON, one object per line.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user tokens") { admin in
                let format = Date.ISO8601FormatStyle()
                for token in try await admin.tokens(ofUser: name) {
                    let kind = token.isDevice ? "device" : "webAuth"
                    let created = Date(timeIntervalSince1970: Double(token.createdAt) / 1000).formatted(format)
                    let expires = Date(timeIntervalSince1970: Double(token.expiresAt) / 1000).formatted(format)
                    if json {
                        var fields: [(String, Any?)] = [("session", token.sessionID), ("kind", kind)]
                        if let container = token.container { fields.append(("container", container)) }
                        fields += [("createdAt", created), ("expiresAt", expires)]
                        CLI.printLine(CLI.jsonObject(fields))
                    } else {
                        CLI.printLine("\(token.sessionID) \(kind) \(token.container ?? "*") \(created) \(expires)")
                    }
                }
            }
        }
    }

    /// `ubiq admin user revoke NAME`.
    struct Revoke: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "revoke",
            abstract: "Revoke an account's tokens: all, some sessions, or the session of one token.",
            discussion: """
                A revoked token is refused from the next request on, with its rotations. Prints \
                how many tokens were revoked. `ubiq account logout` on a device revokes that \
                device's token itself.

                Examples:
                  ubiq admin --data srv user revoke mei --all
                  ubiq admin --data srv user revoke mei --session 3f9c2a17d0b4e6a8
                  printf '%s' "$LEAKED" | ubiq admin --data srv user revoke mei --token-stdin
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Flag(help: "Revoke every token of the account.") var all = false
        @Option(help: "A session ID from `ubiq admin user tokens` (repeatable; 8 digits or more).") var session: [String] = []
        @Flag(help: "Read a token from stdin and revoke its session.") var tokenStdin = false
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            let chosen = [all, !session.isEmpty, tokenStdin].filter { $0 }.count
            guard chosen == 1 else { throw ValidationError("give one of --all, --session ID or --token-stdin") }
        }

        func run() async throws {
            let which: RecordsAdmin.Revocation
            if all {
                which = .all
            } else if tokenStdin {
                let text = String(decoding: FileHandle.standardInput.readDataToEndOfFile(), as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines)
                guard !text.isEmpty else { throw ValidationError("--token-stdin: no token on stdin") }
                which = .token(text)
            } else {
                which = .sessions(session)
            }
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user revoke") { admin in
                let count = try await admin.revokeTokens(ofUser: name, which)
                CLI.printLine(json ? CLI.jsonObject([("user", name), ("revoked", count)]) : "revoked \(count) token\(count == 1 ? "" : "s") of \(name)")
            }
        }
    }

    /// `ubiq admin user password NAME`.
    struct Password: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "password",
            abstract: "Set an account's password (or remove it) and revoke its tokens.",
            discussion: """
                Every device and web app of the account signs in again, unless --keep-tokens. \
                Prints how many tokens were revoked.

                Examples:
                  printf '%s' "$NEW" | ubiq admin --data srv user password mei --password-stdin
                  ubiq admin --data srv user password mei --none
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Flag(help: "Read the new password from stdin, without a trailing newline.") var passwordStdin = false
        @Flag(help: "Remove the password (sign-in with tokens an administrator issues only).") var none = false
        @Flag(help: "Keep the account's tokens valid.") var keepTokens = false
        @Flag(help: "Print JSON.") var json = false

        func validate() throws {
            guard passwordStdin != none else { throw ValidationError("give one of --password-stdin or --none") }
        }

        func run() async throws {
            let password = passwordStdin ? try UserAdmin.passwordFromStdin() : nil
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user password") { admin in
                let count = try await admin.setPassword(ofUser: name, to: password, keepTokens: keepTokens)
                CLI.printLine(json ? CLI.jsonObject([("user", name), ("revoked", count)])
                                   : "\(password == nil ? "removed" : "changed") the password of \(name); revoked \(count) token\(count == 1 ? "" : "s")")
            }
        }
    }

    /// `ubiq admin user disable NAME`.
    struct Disable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "disable",
            abstract: "Disable an account: revoke its tokens and refuse its sign-ins until enabled.",
            discussion: """
                Its data stays. Prints how many tokens were revoked.

                Examples:
                  ubiq admin --data srv user disable mei
                """)
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user disable") { admin in
                let count = try await admin.setDisabled(true, user: name)
                CLI.printLine(json ? CLI.jsonObject([("user", name), ("disabled", true), ("revoked", count)])
                                   : "disabled \(name); revoked \(count) token\(count == 1 ? "" : "s")")
            }
        }
    }

    /// `ubiq admin user enable NAME`.
    struct Enable: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "enable",
            abstract: "Enable a disabled account again (it signs in anew: its old tokens stay revoked).",
            discussion: "Examples:\n  ubiq admin --data srv user enable mei")
        @OptionGroup var store: ServerStoreOptions
        @ParentCommand var group: UserAdmin
        @Argument(help: "The account name.") var name: String
        @Flag(help: "Print JSON.") var json = false
        func run() async throws {
            try await Admin.withAdmin(store, parent: group.admin.store, command: "user enable") { admin in
                try await admin.setDisabled(false, user: name)
                CLI.printLine(json ? CLI.jsonObject([("user", name), ("disabled", false)]) : "enabled \(name)")
            }
        }
    }
}
