// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// Who is making a request, after authentication.
package struct RecordsCaller: Sendable, Hashable {
    /// How the caller authenticated.
    package enum Identity: Sendable, Hashable {
        /// An API token only: read-only access to the public database.
        case anonymous
        /// A signed-in account (API token + web-auth token); `userRecordName` is per container.
        case user(accountID: Int64, userRecordName: String)
        /// A server-to-server key: the public database, as the container's developer.
        case serverKey(keyID: String)
    }
    package var identity: Identity
    /// The device named in the request, stamped into `created`/`modified`.
    package var deviceID: String?

    /// Makes a caller.
    package init(identity: Identity, deviceID: String? = nil) {
        self.identity = identity
        self.deviceID = deviceID
    }

    /// The user record name recorded as creator/modifier: the user's, or the key's developer
    /// identity (`_` + the key ID's first 32 hex digits).
    package var userRecordName: String? {
        switch identity {
        case .anonymous: return nil
        case .user(_, let name): return name
        case .serverKey(let keyID): return "_" + String(SHA256.hash(data: Array(("key\n" + keyID).utf8)).hex.prefix(32))
        }
    }

    /// Whether the caller is signed in (or a server key).
    package var isAuthenticated: Bool { if case .anonymous = identity { return false } else { return true } }

    /// A user's record name in a container: `_` and 32 hex digits, different in every container,
    /// stable for the account.
    package static func userRecordName(accountID: Int64, container: String) -> String {
        "_" + String(SHA256.hash(data: Array("user\n\(container)\n\(accountID)".utf8)).hex.prefix(32))
    }
}
