// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// Signs requests with a server-to-server key (CKWS §2.3): ECDSA P-256 with SHA-256 over
/// `"<date>:<base64(sha256(body))>:<path>"`, sent as the base64 DER signature in
/// `X-Apple-CloudKit-Request-SignatureV1` with the key ID and the date.
struct ServerToServerSigner: Sendable {
    let keyID: String
    let key: P256.Signing.PrivateKey

    /// Reads the private key from PEM (`openssl ecparam -name prime256v1 -genkey` output: an
    /// `EC PRIVATE KEY`, possibly after `EC PARAMETERS`; or a PKCS #8 `PRIVATE KEY`).
    init(keyID: String, privateKeyPEM: String) throws {
        self.keyID = keyID
        let block = Self.privateKeyBlock(in: privateKeyPEM)
        do {
            key = try P256.Signing.PrivateKey(pemRepresentation: block)
        } catch {
            throw CloudKitError(.notAuthenticated,
                                "the server-to-server private key is not a P-256 key in PEM form (make one with `openssl ecparam -name prime256v1 -genkey -noout -out eckey.pem`): \(error)",
                                underlying: error)
        }
    }

    /// The `-----BEGIN … PRIVATE KEY-----` block of a PEM file (skipping `EC PARAMETERS`).
    static func privateKeyBlock(in pem: String) -> String {
        let lines = pem.split(whereSeparator: \.isNewline).map { $0.trimmingCharacters(in: .whitespaces) }
        guard let start = lines.firstIndex(where: { $0.hasPrefix("-----BEGIN") && $0.contains("PRIVATE KEY") }),
              let end = lines[start...].firstIndex(where: { $0.hasPrefix("-----END") && $0.contains("PRIVATE KEY") }) else {
            return pem
        }
        return lines[start...end].joined(separator: "\n") + "\n"
    }

    /// The signed message.
    static func message(date: String, body: Data, path: String) -> String {
        let digest = Data(SHA256.hash(data: body)).base64EncodedString()
        return "\(date):\(digest):\(path)"
    }

    /// ISO 8601 in UTC without fractions (`2016-01-25T22:15:43Z`).
    static func dateString(_ date: Date) -> String {
        date.formatted(Date.ISO8601FormatStyle())
    }

    /// The three signature headers.
    func headers(body: Data, path: String, date: Date) throws -> [String: String] {
        let dateText = Self.dateString(date)
        let signature = try key.signature(for: Data(Self.message(date: dateText, body: body, path: path).utf8))
        return [
            "X-Apple-CloudKit-Request-KeyID": keyID,
            "X-Apple-CloudKit-Request-ISO8601Date": dateText,
            "X-Apple-CloudKit-Request-SignatureV1": signature.derRepresentation.base64EncodedString(),
        ]
    }
}
