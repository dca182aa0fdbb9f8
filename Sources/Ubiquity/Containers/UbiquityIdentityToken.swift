// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// An opaque token for the signed-in Ubiquity account, the counterpart of Apple's
/// `FileManager.ubiquityIdentityToken`: equal tokens mean the same account, a different token
/// means the user switched accounts, and no token means nobody is signed in.
///
/// It is a SHA-256 digest of the account's server and user name, so it reveals neither. Archive
/// it (it is `Codable`) to notice an account switch between launches.
public struct UbiquityIdentityToken: Hashable, Sendable, Codable, CustomStringConvertible {
    private let digest: String

    /// The token of `user` on `server`.
    package init(server: String, user: String) {
        // Length-prefixed so that no two (server, user) pairs hash the same input.
        let input = "ubiquity-identity-v1:\(server.utf8.count):\(server):\(user.utf8.count):\(user)"
        digest = SHA256.hexHash(input.utf8)
    }

    /// The token of `account`.
    package init(account: UbiquityAccountFile.Account) {
        self.init(server: account.server, user: account.user)
    }

    /// Decodes a token encoded by ``encode(to:)``; refuses anything that is not one.
    public init(from decoder: any Decoder) throws {
        let container = try decoder.singleValueContainer()
        let value = try container.decode(String.self)
        guard value.utf8.count == 64, value.utf8.allSatisfy({ (48...57).contains($0) || (97...102).contains($0) }) else {
            throw DecodingError.dataCorruptedError(in: container, debugDescription: "not a ubiquity identity token")
        }
        digest = value
    }

    /// Encodes the token as an opaque string.
    public func encode(to encoder: any Encoder) throws {
        var container = encoder.singleValueContainer()
        try container.encode(digest)
    }

    /// A short, opaque rendering for logs.
    public var description: String { "UbiquityIdentityToken(\(digest.prefix(12)))" }
}

extension UbiquityAccountFile {
    /// The identity token of the account in the file; nil when nobody is signed in or the file
    /// is unreadable.
    public var identityToken: UbiquityIdentityToken? {
        (try? read())?.map(UbiquityIdentityToken.init(account:))
    }
}
