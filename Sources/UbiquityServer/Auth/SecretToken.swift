// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// Random bearer secrets (API tokens, web-auth tokens, session IDs) and what the store keeps of
/// them.
///
/// A token is 32 random bytes as unpadded base64url (43 characters of `A–Z a–z 0–9 - _`), so it
/// survives query strings, headers and cookies without escaping; an API token is the same 32
/// bytes as 64 lowercase hex digits, Apple's shape (``generateAPIToken()``). The store never
/// keeps the token itself, only ``digest(_:)``; looking a presented token up by its digest is
/// then an equality match on a value an attacker cannot choose, and a leaked table does not leak
/// usable tokens.
package enum SecretToken {
    /// The number of random bytes in a token (256 bits).
    package static let byteCount = 32
    /// The length of a generated token in characters.
    package static let characterCount = 43

    /// A fresh token: 32 bytes from the system's secure random generator, unpadded base64url.
    package static func generate() -> String {
        Base64URL.encode(AuthEncoding.randomBytes(count: byteCount))
    }

    /// A fresh API token (`ckAPIToken`) in Apple's shape: 64 lowercase hex digits (32 random
    /// bytes). Clients of CloudKit Web Services check that shape before they send anything
    /// (MistKit does). API tokens made before, 43 base64url characters, keep working: a token is
    /// looked up by its digest, whatever its shape.
    package static func generateAPIToken() -> String { randomHex() }

    /// ``byteCount`` random bytes as lowercase hex (64 digits).
    private static func randomHex() -> String {
        Hex.encode(AuthEncoding.randomBytes(count: byteCount))
    }

    /// The lowercase hex SHA-256 of the token's UTF-8: what the store keeps and looks tokens up by.
    package static func digest(_ token: String) -> String {
        Hex.encode(SHA256.hash(data: Array(token.utf8)))
    }

    /// What starts a device token (``generateDeviceToken()``).
    package static let devicePrefix = "ubqdev_"

    /// A fresh device token: ``devicePrefix`` and a generated token. Only device sign-in
    /// (`POST /auth/device`, `ubiq admin user token --device`) makes them; they are web-auth
    /// tokens that also stand in for the API token (any container, created on first use), and
    /// are not rotated.
    package static func generateDeviceToken() -> String {
        devicePrefix + generate()
    }

    /// Whether `token` is shaped like a device token.
    package static func isDeviceToken(_ token: String) -> Bool {
        token.hasPrefix(devicePrefix) && isWellFormed(String(token.dropFirst(devicePrefix.count)))
    }

    /// A fresh key ID shaped like Apple's server-to-server key IDs: 64 lowercase hex digits
    /// (32 random bytes).
    package static func keyID() -> String {
        randomHex()
    }

    /// Whether `token` has the shape of a generated token (43 base64url characters). A cheap
    /// check to refuse garbage before hashing and looking it up.
    package static func isWellFormed(_ token: String) -> Bool {
        token.utf8.count == characterCount && token.utf8.allSatisfy(isBase64URLCharacter)
    }

    /// Whether the two strings have the same UTF-8 bytes, in time that depends only on their
    /// lengths (not on where they first differ). Use it to compare secrets and digests.
    package static func constantTimeEquals(_ a: String, _ b: String) -> Bool {
        AuthEncoding.constantTimeEquals(a.utf8, b.utf8)
    }

    /// Whether the two byte sequences are equal, in time that depends only on their lengths.
    package static func constantTimeEquals<A: Collection, B: Collection>(_ a: A, _ b: B) -> Bool
    where A.Element == UInt8, B.Element == UInt8 {
        AuthEncoding.constantTimeEquals(a, b)
    }

    private static func isBase64URLCharacter(_ char: UInt8) -> Bool {
        switch char {
        case UInt8(ascii: "A")...UInt8(ascii: "Z"), UInt8(ascii: "a")...UInt8(ascii: "z"),
             UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "-"), UInt8(ascii: "_"):
            true
        default:
            false
        }
    }
}
