// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// A registered server-to-server key: the ECDSA P-256 public key that verifies a client's
/// signed requests.
///
/// Apple's instructions make the key with `openssl ecparam -name prime256v1 -genkey -noout -out
/// eckey.pem` and register `openssl ec -in eckey.pem -pubout` (an SPKI `BEGIN PUBLIC KEY` PEM).
/// People also paste the private key file itself, so this type accepts:
///
/// - PEM: `PUBLIC KEY` (SPKI), `EC PRIVATE KEY` (SEC 1) or `PRIVATE KEY` (PKCS #8), whose public
///   key is derived (an `EC PARAMETERS` block before it is skipped);
/// - bytes, or their base64 or hex as text: DER SPKI, DER SEC 1 / PKCS #8 private keys, ANSI X9.63
///   (65 bytes, `04‖x‖y`), compressed (33 bytes) or raw `x‖y` (64 bytes).
///
/// Store ``pemRepresentation`` (never a private key) and parse it again when verifying.
package struct ServerToServerPublicKey: Sendable, Equatable, CustomStringConvertible {
    /// The P-256 public key.
    package let key: P256.Signing.PublicKey

    /// Wraps a P-256 public key.
    package init(_ key: P256.Signing.PublicKey) {
        self.key = key
    }

    /// Parses a key from text: PEM, or base64 / hex of any of the byte forms.
    ///
    /// - Throws: `UbiquityError(.invalidArgument)` saying what is wrong (not PEM or base64, an
    ///   unsupported or encrypted PEM block, not a P-256 key).
    package init(parsing text: String) throws {
        let trimmed = text.trimmingCharacters(in: .whitespacesAndNewlines)
        guard !trimmed.isEmpty else {
            throw UbiquityError(.invalidArgument, "The public key is empty.")
        }
        guard trimmed.utf8.count <= 16_384 else {
            throw UbiquityError(.invalidArgument, "The public key text is too long to be a P-256 key.")
        }
        if trimmed.contains("-----BEGIN ") {
            self = try Self.parsePEM(trimmed)
        } else if let bytes = Hex.decode(trimmed), let key = try? Self(bytes: bytes) {
            self = key
        } else if let bytes = AuthEncoding.decodeBase64(lenient: trimmed) {
            self = try Self(bytes: bytes)
        } else {
            throw UbiquityError(.invalidArgument,
                                "The public key is neither PEM (-----BEGIN PUBLIC KEY-----) nor base64 or hex.")
        }
    }

    /// Parses a key from its bytes: DER SPKI, X9.63 (uncompressed or compressed), raw `x‖y`,
    /// or a DER private key whose public key is derived.
    ///
    /// - Throws: `UbiquityError(.invalidArgument)` when the bytes are none of these for P-256.
    package init<Bytes: DataProtocol>(bytes: Bytes) throws {
        let bytes = Array(bytes)
        if bytes.count == 65, bytes.first == 0x04, let key = try? P256.Signing.PublicKey(x963Representation: bytes) {
            self.init(key)
        } else if bytes.count == 33, bytes.first == 0x02 || bytes.first == 0x03,
                  let key = try? P256.Signing.PublicKey(compressedRepresentation: bytes) {
            self.init(key)
        } else if bytes.count == 64, let key = try? P256.Signing.PublicKey(rawRepresentation: bytes) {
            self.init(key)
        } else if let key = try? P256.Signing.PublicKey(derRepresentation: bytes) {
            self.init(key)
        } else if let privateKey = try? P256.Signing.PrivateKey(derRepresentation: bytes) {
            self.init(privateKey.publicKey)
        } else {
            throw UbiquityError(.invalidArgument,
                                "The \(bytes.count) bytes are not a P-256 public key (DER SPKI, X9.63 or raw x‖y).")
        }
    }

    /// The key as an SPKI `BEGIN PUBLIC KEY` PEM (what `openssl ec -pubout` prints).
    package var pemRepresentation: String { key.pemRepresentation }

    /// The key as DER SPKI.
    package var derRepresentation: Data { key.derRepresentation }

    /// Lowercase hex SHA-256 of the DER SPKI: 64 hex digits that identify the key (usable as a
    /// key ID that is derived rather than random).
    package var fingerprint: String { Hex.encode(SHA256.hash(data: key.derRepresentation)) }

    /// "P-256 key <fingerprint prefix>…".
    package var description: String { "P-256 key \(fingerprint.prefix(16))…" }

    /// Whether the two wrap the same point.
    package static func == (lhs: Self, rhs: Self) -> Bool {
        lhs.key.x963Representation == rhs.key.x963Representation
    }

    private static func parsePEM(_ text: String) throws -> Self {
        let blocks = try PEMBlock.all(in: text)
        var skipped: [String] = []
        for block in blocks {
            switch block.label {
            case "PUBLIC KEY":
                guard let key = try? P256.Signing.PublicKey(derRepresentation: block.der) else {
                    throw UbiquityError(.invalidArgument,
                                        "The PUBLIC KEY is not an EC P-256 key (prime256v1); other curves and RSA are not supported.")
                }
                return Self(key)
            case "EC PRIVATE KEY", "PRIVATE KEY":
                guard let key = try? P256.Signing.PrivateKey(derRepresentation: block.der) else {
                    throw UbiquityError(.invalidArgument,
                                        "The \(block.label) is not an EC P-256 key (prime256v1).")
                }
                return Self(key.publicKey)
            case "ENCRYPTED PRIVATE KEY":
                throw UbiquityError(.invalidArgument,
                                    "The private key is encrypted; register the public key (openssl ec -in eckey.pem -pubout).")
            case "EC PARAMETERS":
                continue
            default:
                skipped.append(block.label)
            }
        }
        let found = skipped.isEmpty ? "" : " (found \(skipped.joined(separator: ", ")))"
        throw UbiquityError(.invalidArgument, "The PEM holds no PUBLIC KEY, EC PRIVATE KEY or PRIVATE KEY block\(found).")
    }
}

/// One `-----BEGIN label-----` … `-----END label-----` block of a PEM file.
struct PEMBlock: Equatable {
    var label: String
    var der: [UInt8]

    /// Every block in `text`, in order; text between blocks is ignored.
    static func all(in text: String) throws -> [PEMBlock] {
        var blocks: [PEMBlock] = []
        var rest = Substring(text)
        while let begin = rest.range(of: "-----BEGIN ") {
            guard let labelEnd = rest[begin.upperBound...].range(of: "-----") else {
                throw UbiquityError(.invalidArgument, "Malformed PEM: unterminated BEGIN line.")
            }
            let label = String(rest[begin.upperBound..<labelEnd.lowerBound])
            let endMarker = "-----END \(label)-----"
            guard let end = rest[labelEnd.upperBound...].range(of: endMarker) else {
                throw UbiquityError(.invalidArgument, "Malformed PEM: no \(endMarker) line.")
            }
            let body = rest[labelEnd.upperBound..<end.lowerBound]
            guard !body.contains(":") else {
                throw UbiquityError(.invalidArgument,
                                    "The \(label) PEM has headers (it is probably encrypted); it is not supported.")
            }
            guard let der = AuthEncoding.decodeBase64(lenient: String(body)) else {
                throw UbiquityError(.invalidArgument, "Malformed PEM: the \(label) block is not base64.")
            }
            blocks.append(PEMBlock(label: label, der: der))
            rest = rest[end.upperBound...]
        }
        guard !blocks.isEmpty else {
            throw UbiquityError(.invalidArgument, "Malformed PEM: no -----BEGIN line.")
        }
        return blocks
    }
}
