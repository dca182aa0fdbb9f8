// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import UbiquityWire
import UbiquityCore

extension CloudContainer {
    /// The container `identifier` on the signed-in account's server, with its device token
    /// (what `ubiq account login` wrote). Throws ``CloudKitError/Code/notAuthenticated``
    /// when nobody is signed in or the account file has no device token.
    public static func signedIn(identifier: String, accountFile: UbiquityAccountFile = UbiquityAccountFile(),
                                environment: CloudKitEnvironment = .development,
                                logger: Logger = Logger(label: "ubiquity.cloudkit")) throws -> CloudContainer {
        let account: UbiquityAccountFile.Account?
        do {
            account = try accountFile.read()
        } catch {
            throw CloudKitError(.notAuthenticated, "the account file cannot be read: \(error); sign in again", underlying: error)
        }
        guard let account, let token = account.deviceToken, !token.isEmpty else {
            throw CloudKitError(.notAuthenticated, "not signed in: the account file (\(accountFile.url.path)) is missing or holds no device token")
        }
        guard let url = URL(string: account.server), url.scheme == "http" || url.scheme == "https" else {
            throw CloudKitError(.notAuthenticated, "the account's server \(account.server.debugDescription) is not an http(s) URL; sign in again")
        }
        return CloudContainer(identifier: identifier, serverURL: url, environment: environment, credentials: .device(token: token), logger: logger)
    }
}
