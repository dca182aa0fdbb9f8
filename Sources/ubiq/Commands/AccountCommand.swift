// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityServer
import UbiquityCloudKit

/// `ubiq account login|logout|status`: the account this device is signed in to.
struct AccountCommand: AsyncParsableCommand {
    static let configuration = CommandConfiguration(
        commandName: "account",
        abstract: "Sign this device in to a Ubiquity server, out of it, or show who is signed in.",
        discussion: """
            The account lives in $XDG_CONFIG_HOME/ubiquity/account.json (mode 0600): the server, \
            the user, this device's name and its device token. `ubiq daemon` syncs for it; apps \
            see it as FileManager.ubiquityIdentityToken, which changes (with \
            NSUbiquityIdentityDidChange) when you sign out or switch accounts.

            Exit codes: 0 done; 64 usage; 69 the server cannot be reached; 77 wrong name, \
            password or token; 1 anything else.

            Examples:
              ubiq account login --server http://127.0.0.1:8080 --user mei
              printf '%s\\n' "$PASSWORD" | ubiq account login --server https://u.example.org --user mei --password-stdin
              ubiq account login --server https://u.example.org --token "$(ubiq admin user token mei --device)"
              ubiq account status --json
              ubiq account logout
            """,
        subcommands: [Login.self, Logout.self, Status.self]
    )

    /// The exit code for "not allowed" (sysexits EX_NOPERM).
    static let notPermitted: Int32 = 77

    /// Prints `error` and returns its exit code.
    static func report(_ error: any Error, command: String) -> ExitCode {
        if let error = error as? CloudKitError {
            FileHandle.standardError.write(Data("ubiq account \(command): \(error.reason)\n".utf8))
            switch error.code {
            case .notAuthenticated, .permissionFailure: return ExitCode(notPermitted)
            case .networkFailure, .networkUnavailable, .serviceUnavailable, .badContainer: return ExitCode(CLI.unavailable)
            default: return .failure
            }
        }
        return CLI.report(error, command: "account \(command)")
    }

    struct Login: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "login",
            abstract: "Sign in (or switch accounts) with a password or a device token.",
            discussion: """
                Without --password-stdin or --token, asks for the password on the terminal. \
                Signing in as someone else signs the previous account out first.

                Examples:
                  ubiq account login --server http://127.0.0.1:8080 --user mei
                  printf '%s\\n' "$PASSWORD" | ubiq account login --server https://u.example.org --user mei --password-stdin
                  ubiq account login --server https://u.example.org --token "$(ubiq admin user token mei --device)" --json
                """)

        @Option(help: "The server's URL (default $UBIQUITY_SERVER).")
        var server: String?

        @Option(help: "The user name (default $USER).")
        var user: String?

        @Flag(help: "Read the password from the first line of standard input.")
        var passwordStdin = false

        @Option(help: "A device token issued by the administrator (`ubiq admin user token NAME --device`) instead of a password.")
        var token: String?

        @Option(help: "This device's name (default the host name).")
        var deviceName: String?

        @Flag(help: "Print the result as JSON.")
        var json = false

        func validate() throws {
            if passwordStdin && token != nil { throw ValidationError("--password-stdin and --token exclude each other") }
            if resolvedServer == nil { throw ValidationError("--server: expected the server's URL (or set $UBIQUITY_SERVER)") }
            if let token, token.isEmpty { throw ValidationError("--token: expected a token, got an empty string") }
            if let token, !SecretToken.isDeviceToken(token) {
                throw ValidationError("""
                    --token: expected a device token (it starts with \(SecretToken.devicePrefix)), from \
                    `ubiq admin user token NAME --device`. The token `ubiq admin user add` prints is a web-auth \
                    token: it signs a web app in to one container, together with that container's API token, and \
                    cannot sync a device. Or sign in with --user NAME and a password.
                    """)
            }
            if let deviceName, deviceName.isEmpty || deviceName.contains(where: \.isNewline) || deviceName.utf8.count > 255 {
                throw ValidationError("--device-name: expected one line of 1 to 255 bytes")
            }
        }

        var resolvedServer: String? { server ?? ProcessInfo.processInfo.environment["UBIQUITY_SERVER"] }

        func run() async throws {
            let device = deviceName ?? AccountCommand.hostName()
            let signIn: AccountSignIn
            do {
                guard let text = resolvedServer, let url = URL(string: text) else { throw ValidationError("--server: expected a URL") }
                signIn = try AccountSignIn(serverURL: url)
            } catch let error as UbiquityError {
                throw ValidationError(error.message)
            }
            let file = UbiquityAccountFile()
            let account: UbiquityAccountFile.Account
            do {
                if let token {
                    account = try await signIn.signIn(token: token, deviceName: device)
                } else {
                    let name = user ?? ProcessInfo.processInfo.environment["USER"] ?? ""
                    guard !name.isEmpty else { throw ValidationError("--user: expected a user name (and $USER is not set)") }
                    account = try await signIn.signIn(user: name, password: try readPassword(), deviceName: device)
                }
            } catch let error as ValidationError {
                throw error
            } catch let error as ExitCode {
                throw error
            } catch {
                throw AccountCommand.report(error, command: "login")
            }
            do {
                // Switching accounts: the previous device token is revoked (best effort).
                if let previous = try? file.read(), previous.server != account.server || previous.user != account.user,
                   let url = URL(string: previous.server), let old = try? AccountSignIn(serverURL: url) {
                    try? await old.signOut(previous)
                }
                try file.write(account)
            } catch {
                throw AccountCommand.report(error, command: "login")
            }
            if json {
                CLI.printLine(CLI.jsonObject([("server", account.server), ("user", account.user), ("deviceName", account.deviceName)]))
            } else {
                CLI.printLine("signed in as \(account.user) on \(account.server) (device \(device))")
            }
        }

        /// The password: the first line of stdin with --password-stdin, else asked on the terminal.
        func readPassword() throws -> String {
            if passwordStdin {
                guard let line = readLine(strippingNewline: true), !line.isEmpty else {
                    throw ValidationError("--password-stdin: standard input had no password line")
                }
                return line
            }
            guard isatty(STDIN_FILENO) == 1, let typed = getpass("Password for \(user ?? ProcessInfo.processInfo.environment["USER"] ?? "you"): ") else {
                throw ValidationError("no password: give --password-stdin (and the password on standard input) or --token")
            }
            let password = String(cString: typed)
            guard !password.isEmpty else { throw ValidationError("no password was typed") }
            return password
        }
    }

    struct Logout: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "logout",
            abstract: "Sign this device out: the device token is revoked and the account file removed.",
            discussion: """
                Signed out locally even when the server cannot be reached (then it says so). JSON \
                keys (--json): signedOut (false when no account was signed in), user, server, \
                revoked (whether the server revoked the device token).

                Examples:
                  ubiq account logout
                  ubiq account logout --json
                """)

        @Flag(help: "Print JSON.")
        var json = false

        func run() async throws {
            let file = UbiquityAccountFile()
            let account: UbiquityAccountFile.Account?
            do {
                account = try file.read()
            } catch {
                // An unreadable file is removed all the same: signing out must always work.
                try? file.remove()
                throw AccountCommand.report(error, command: "logout")
            }
            guard let account else {
                CLI.printLine(json ? CLI.jsonObject([("signedOut", false)]) : "not signed in")
                return
            }
            var revoked = true
            if let url = URL(string: account.server), let signIn = try? AccountSignIn(serverURL: url) {
                do { try await signIn.signOut(account) } catch { revoked = false }
            }
            do {
                try file.remove()
            } catch {
                throw AccountCommand.report(error, command: "logout")
            }
            if json {
                CLI.printLine(CLI.jsonObject([("signedOut", true), ("user", account.user), ("server", account.server), ("revoked", revoked)]))
                return
            }
            CLI.printLine("signed out \(account.user) on \(account.server)"
                          + (revoked ? "" : " (the server could not be reached: its device token stays valid until it expires)"))
        }
    }

    struct Status: AsyncParsableCommand {
        static let configuration = CommandConfiguration(
            commandName: "status",
            abstract: "Show the signed-in account and whether the server accepts its token.",
            discussion: """
                Exit codes: 0 signed in and accepted (or --offline); 1 not signed in; 77 token \
                refused; 69 server unreachable.

                Examples:
                  ubiq account status
                  ubiq account status --offline --json
                """)

        @Flag(help: "Print JSON.")
        var json = false

        @Flag(help: "Do not ask the server.")
        var offline = false

        func run() async throws {
            let account: UbiquityAccountFile.Account?
            do {
                account = try UbiquityAccountFile().read()
            } catch {
                throw AccountCommand.report(error, command: "status")
            }
            guard let account else {
                if json { CLI.printLine(CLI.jsonObject([("signedIn", false)])) } else { CLI.printLine("not signed in; run `ubiq account login --server URL`") }
                throw ExitCode.failure
            }
            var state = "not checked"
            var failure: ExitCode?
            if !offline {
                do {
                    guard let token = account.deviceToken, let url = URL(string: account.server) else {
                        throw CloudKitError(.notAuthenticated, "the account file has no device token; sign in again")
                    }
                    _ = try await AccountSignIn(serverURL: url).signIn(token: token, deviceName: account.deviceName ?? "")
                    state = "accepted"
                } catch let error as CloudKitError {
                    state = error.code == .notAuthenticated ? "refused" : "unreachable"
                    failure = ExitCode(error.code == .notAuthenticated ? AccountCommand.notPermitted : CLI.unavailable)
                }
            }
            let since = account.signedInAt.map { ISO8601DateFormatter().string(from: Date(timeIntervalSince1970: Double($0) / 1000)) }
            if json {
                CLI.printLine(CLI.jsonObject([("signedIn", true), ("server", account.server), ("user", account.user),
                                              ("deviceName", account.deviceName), ("signedInAt", since), ("token", state)]))
            } else {
                CLI.printLine("signed in as \(account.user) on \(account.server)")
                if let name = account.deviceName { CLI.printLine("device: \(name)") }
                if let since { CLI.printLine("since: \(since)") }
                CLI.printLine("token: \(state)")
            }
            if let failure { throw failure }
        }
    }

    /// The host name (the default device name).
    static func hostName() -> String {
        var buffer = [CChar](repeating: 0, count: 256)
        guard gethostname(&buffer, buffer.count) == 0 else { return "linux" }
        let name = String(decoding: buffer.prefix { $0 != 0 }.map { UInt8(bitPattern: $0) }, as: UTF8.self)
        return name.isEmpty ? "linux" : name
    }
}
