// SPDX-License-Identifier: Apache-2.0
import ArgumentParser
import Foundation
import Ubiquity
import UbiquityCloudKit
import UbiquitySync

/// How the history commands (`ubiq trash`, `ubiq versions`, `ubiq restore`) reach the server's
/// history of the synced folder: the signed-in account (`ubiq account login`), or `--server`
/// with `--api-token` and `--web-auth-token`, as `ubiq daemon` takes them.
struct DocumentsServerOptions: ParsableArguments {
    @Option(help: "The records server (overrides $UBIQUITY_SERVER; default: the signed-in account's).")
    var server: String?

    @Option(help: "The container's API token, with --server (overrides $UBIQUITY_API_TOKEN).")
    var apiToken: String?

    @Option(help: "The user's web-auth token, with --server (overrides $UBIQUITY_WEB_AUTH_TOKEN).")
    var webAuthToken: String?

    /// The private database of the synced folder's container, for the account or the options.
    /// - Throws: `UbiquityError.invalidArgument` when there is no way to reach a server.
    func database(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> CloudDatabase {
        guard let database = try optionalDatabase(environment: environment) else {
            throw UbiquityError(.invalidArgument, "not signed in: run `ubiq account login --server URL`, or give --server and --api-token")
        }
        return database
    }

    /// ``database(environment:)``, or nil when neither an account nor `--server` names a server.
    func optionalDatabase(environment: [String: String] = ProcessInfo.processInfo.environment) throws -> CloudDatabase? {
        let given = server ?? environment["UBIQUITY_SERVER"].flatMap { $0.isEmpty ? nil : $0 }
        let account = try? UbiquityAccountFile().read()
        let credentials: CloudContainer.Credentials
        let url: URL
        if let given {
            guard let parsed = URL(string: given), ["http", "https"].contains(parsed.scheme ?? ""), parsed.host != nil else {
                throw UbiquityError(.invalidArgument, "--server '\(given)': expected an http or https URL such as http://127.0.0.1:8080")
            }
            url = parsed
            if let api = apiToken ?? environment["UBIQUITY_API_TOKEN"], !api.isEmpty {
                credentials = .apiToken(api, webAuthToken: webAuthToken ?? environment["UBIQUITY_WEB_AUTH_TOKEN"])
            } else if let account, let token = account.deviceToken, AccountSignIn.canonical(parsed) == account.server {
                credentials = .device(token: token)
            } else {
                throw UbiquityError(.invalidArgument, "--server needs --api-token (or UBIQUITY_API_TOKEN), or an account signed in to that server (`ubiq account login --server \(given)`)")
            }
        } else {
            guard let account, let token = account.deviceToken, let parsed = URL(string: account.server) else { return nil }
            url = parsed
            credentials = .device(token: token)
        }
        return CloudContainer(identifier: SyncRecord.defaultContainer, serverURL: url, credentials: credentials).privateCloudDatabase
    }
}
