// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation

/// CloudKit's server-to-server request signing: verification for the server, signing for tests
/// and tools.
///
/// A client signs `"<date>:<base64(SHA-256(body))>:<path>"` with its ECDSA P-256 key (SHA-256)
/// and sends the key ID, the date and the base64 signature in the three
/// `X-Apple-CloudKit-Request-*` headers (``CloudKitAuthHeaders``).
///
/// Verification accepts every variant real clients send:
/// - the signature DER-encoded (MistKit, requests-cloudkit, OpenCloudKit) or raw 64-byte `r‖s`,
///   in standard or URL-safe base64, with or without padding;
/// - for an empty body, the hash component empty (MistKit) or base64 of SHA-256 of nothing
///   (requests-cloudkit);
/// - the path alone (MistKit, OpenCloudKit) or the path with its query (requests-cloudkit);
/// - the date with `Z`, `+00:00` (or any other offset) and with or without fractional seconds.
///
/// The date must be within the allowed clock skew of the server's clock (10 minutes by default).
/// A captured request can be replayed within that window; that is CloudKit's design too.
package enum ServerToServerSignature {
    /// The default allowed difference between the request date and the server clock, 600 s.
    package static let defaultAllowedClockSkew: TimeInterval = 600

    /// The outcome of a verification.
    package enum Verdict: Sendable, Equatable, CustomStringConvertible {
        /// The signature is valid for the request, the key and the time.
        case valid
        /// The request must be refused (HTTP 401 `AUTHENTICATION_FAILED`).
        case invalid(Failure)

        /// Whether the verdict is ``valid``.
        package var isValid: Bool { self == .valid }
        /// The failure, when invalid.
        package var failure: Failure? {
            if case .invalid(let failure) = self { return failure }
            return nil
        }
        /// "valid" or the failure's description.
        package var description: String { failure?.description ?? "valid" }
    }

    /// Why a signed request was refused.
    ///
    /// The reason is written for the server's log and the key's owner. Apple answers every
    /// failure with the same `"Authentication failed"`; a server may do the same on the wire.
    package struct Failure: Error, Sendable, Equatable, CustomStringConvertible {
        /// The kind of failure, to match on.
        package enum Kind: String, Sendable, CaseIterable {
            /// One of the three headers is missing or empty.
            case missingHeader
            /// No key is registered under the key ID (or it was revoked).
            case unknownKey
            /// The registered key cannot be parsed as a P-256 public key.
            case malformedKey
            /// The date header is not an ISO 8601 date-time with a time zone.
            case badDate
            /// The date is further from the server clock than the allowed skew.
            case dateOutsideWindow
            /// The signature header is not base64 of a DER or raw P-256 ECDSA signature.
            case badSignatureEncoding
            /// The signature does not verify for this request with this key.
            case signatureMismatch
        }

        /// The kind of failure.
        package var kind: Kind
        /// What went wrong, in words.
        package var reason: String

        /// Makes a failure.
        package init(_ kind: Kind, _ reason: String) {
            self.kind = kind
            self.reason = reason
        }

        /// `"kind: reason"`.
        package var description: String { "\(kind.rawValue): \(reason)" }
    }

    /// Verifies a signed request against a registered key given as text (PEM, or base64 / hex
    /// bytes: see ``ServerToServerPublicKey/init(parsing:)``).
    ///
    /// - Parameters:
    ///   - keyID: the `X-Apple-CloudKit-Request-KeyID` header value.
    ///   - date: the `X-Apple-CloudKit-Request-ISO8601Date` header value.
    ///   - signature: the `X-Apple-CloudKit-Request-SignatureV1` header value.
    ///   - body: the raw request body bytes, exactly as received.
    ///   - path: the request path as sent on the request line (`/database/1/…/records/query`).
    ///   - pathWithQuery: the path with `?` and its query, when the request has one.
    ///   - publicKeyPEM: the key registered under `keyID`, or nil when there is none.
    ///   - now: the server's current time.
    ///   - allowedClockSkew: the largest accepted difference between `date` and `now`.
    package static func verify<Body: DataProtocol>(
        keyID: String?, date: String?, signature: String?, body: Body, path: String, pathWithQuery: String? = nil,
        publicKeyPEM: String?, now: Date, allowedClockSkew: TimeInterval = defaultAllowedClockSkew
    ) -> Verdict {
        var publicKey: ServerToServerPublicKey?
        if let publicKeyPEM {
            do {
                publicKey = try ServerToServerPublicKey(parsing: publicKeyPEM)
            } catch {
                if let failure = missingHeaders(keyID: keyID, date: date, signature: signature) {
                    return .invalid(failure)
                }
                let message = (error as? UbiquityError)?.message ?? "\(error)"
                return .invalid(Failure(.malformedKey, "The key registered as \(quoted(keyID ?? "")) is unusable: \(message)"))
            }
        }
        return verify(keyID: keyID, date: date, signature: signature, body: body, path: path,
                      pathWithQuery: pathWithQuery, publicKey: publicKey, now: now, allowedClockSkew: allowedClockSkew)
    }

    /// Verifies a signed request against a registered key.
    ///
    /// The parameters are those of ``verify(keyID:date:signature:body:path:pathWithQuery:publicKeyPEM:now:allowedClockSkew:)``;
    /// `publicKey` is nil when no key is registered under `keyID`.
    package static func verify<Body: DataProtocol>(
        keyID: String?, date: String?, signature: String?, body: Body, path: String, pathWithQuery: String? = nil,
        publicKey: ServerToServerPublicKey?, now: Date, allowedClockSkew: TimeInterval = defaultAllowedClockSkew
    ) -> Verdict {
        if let failure = missingHeaders(keyID: keyID, date: date, signature: signature) {
            return .invalid(failure)
        }
        guard let keyID, let date, let signature else { return .invalid(Failure(.missingHeader, "unreachable")) }
        guard let publicKey else {
            return .invalid(Failure(.unknownKey, "No server-to-server key is registered with ID \(quoted(keyID))."))
        }

        guard let signedAt = parseDate(date) else {
            return .invalid(Failure(.badDate, "The request date \(quoted(date)) is not an ISO 8601 date-time "
                + "with a time zone, like 2016-01-25T22:15:43Z."))
        }
        let offset = now.timeIntervalSince(signedAt)
        guard abs(offset) <= allowedClockSkew else {
            let direction = offset > 0 ? "in the past" : "in the future"
            return .invalid(Failure(.dateOutsideWindow, "The request date \(quoted(date)) is "
                + "\(seconds(abs(offset))) \(direction), more than the allowed clock skew of "
                + "\(seconds(allowedClockSkew)); sign each request with the current time and check the client's clock."))
        }

        let candidates: [P256.Signing.ECDSASignature]
        switch decodeSignature(signature) {
        case .success(let decoded): candidates = decoded
        case .failure(let failure): return .invalid(failure)
        }

        let hashes = bodyHashCandidates(body)
        var paths = [path]
        if let pathWithQuery, pathWithQuery != path { paths.append(pathWithQuery) }
        for path in paths {
            for hash in hashes {
                let message = Array("\(date):\(hash):\(path)".utf8)
                for candidate in candidates where publicKey.key.isValidSignature(candidate, for: message) {
                    return .valid
                }
            }
        }
        var checked = "date:bodyHash:path"
        if paths.count > 1 { checked += " and date:bodyHash:path?query" }
        return .invalid(Failure(.signatureMismatch, "The signature does not match the request for key "
            + "\(quoted(keyID)) (checked \(checked)); the body, path or date differs from what was signed, "
            + "or the request was signed with another key."))
    }

    /// The message a client signs: `"<date>:<base64(SHA-256(body))>:<path>"`.
    package static func message<Body: DataProtocol>(date: String, body: Body, path: String) -> String {
        "\(date):\(bodyHash(body)):\(path)"
    }

    /// Standard base64 (with padding) of the SHA-256 of `body`'s raw bytes.
    package static func bodyHash<Body: DataProtocol>(_ body: Body) -> String {
        Data(SHA256.hash(data: body)).base64EncodedString()
    }

    /// The date as clients sign it: UTC, whole seconds, `Z` (`2016-01-25T22:15:43Z`).
    package static func formatDate(_ date: Date) -> String {
        Date(timeIntervalSince1970: date.timeIntervalSince1970.rounded(.down)).formatted(.iso8601)
    }

    /// Parses a signing date: ISO 8601 with `Z` or an offset, optional fractional seconds;
    /// nothing else (``ISO8601Timestamp``).
    package static func parseDate(_ text: String) -> Date? {
        ISO8601Timestamp.parse(text)
    }

    /// Signs a request as CloudKit clients do, with a DER signature in standard base64.
    ///
    /// - Parameters:
    ///   - privateKeyPEM: an `EC PRIVATE KEY` (as `openssl ecparam -genkey` writes it, with or
    ///     without its `EC PARAMETERS` block) or `PRIVATE KEY` PEM of a P-256 key.
    ///   - date: the signing time; the header value is it in whole seconds.
    ///   - body: the raw request body.
    ///   - path: the request path (without the query, as most clients sign).
    /// - Returns: the values of the `X-Apple-CloudKit-Request-ISO8601Date` and
    ///   `X-Apple-CloudKit-Request-SignatureV1` headers.
    /// - Throws: `UbiquityError(.invalidArgument)` when the PEM holds no P-256 private key.
    package static func sign<Body: DataProtocol>(privateKeyPEM: String, date: Date, body: Body, path: String) throws
        -> (date: String, signature: String) {
        try sign(privateKey: privateKey(pem: privateKeyPEM), date: date, body: body, path: path)
    }

    /// Signs a request with a P-256 private key (DER signature, standard base64).
    package static func sign<Body: DataProtocol>(privateKey: P256.Signing.PrivateKey, date: Date, body: Body,
                                                path: String) throws -> (date: String, signature: String) {
        let dateText = formatDate(date)
        let signature = try privateKey.signature(for: Array(message(date: dateText, body: body, path: path).utf8))
        return (dateText, signature.derRepresentation.base64EncodedString())
    }

    /// Parses a P-256 private key PEM (`EC PRIVATE KEY` or `PRIVATE KEY`, other blocks skipped).
    package static func privateKey(pem: String) throws -> P256.Signing.PrivateKey {
        for block in try PEMBlock.all(in: pem) where block.label == "EC PRIVATE KEY" || block.label == "PRIVATE KEY" {
            guard let key = try? P256.Signing.PrivateKey(derRepresentation: block.der) else {
                throw UbiquityError(.invalidArgument, "The \(block.label) is not an EC P-256 (prime256v1) key.")
            }
            return key
        }
        throw UbiquityError(.invalidArgument, "The PEM holds no EC PRIVATE KEY or PRIVATE KEY block.")
    }
}

extension ServerToServerSignature {
    /// The longest signature header accepted (a DER P-256 signature is at most 72 bytes, 96 in base64).
    static let maximumSignatureHeaderLength = 256

    static func missingHeaders(keyID: String?, date: String?, signature: String?) -> Failure? {
        let missing = [
            (CloudKitAuthHeaders.keyID, keyID), (CloudKitAuthHeaders.iso8601Date, date),
            (CloudKitAuthHeaders.signatureV1, signature),
        ].filter { $0.1?.trimmingCharacters(in: .whitespaces).isEmpty ?? true }.map(\.0)
        guard !missing.isEmpty else { return nil }
        let list = missing.joined(separator: ", ")
        return Failure(.missingHeader, missing.count == 1 ? "The \(list) header is missing."
                                                          : "The headers \(list) are missing.")
    }

    /// The signature header decoded into every P-256 signature it can be read as.
    static func decodeSignature(_ text: String) -> Result<[P256.Signing.ECDSASignature], Failure> {
        guard text.utf8.count <= maximumSignatureHeaderLength, let bytes = AuthEncoding.decodeBase64(lenient: text) else {
            return .failure(Failure(.badSignatureEncoding, "The signature header is not base64."))
        }
        var candidates: [P256.Signing.ECDSASignature] = []
        if bytes.first == 0x30, let der = try? P256.Signing.ECDSASignature(derRepresentation: bytes) {
            candidates.append(der)
        }
        if bytes.count == 64, let raw = try? P256.Signing.ECDSASignature(rawRepresentation: bytes) {
            candidates.append(raw)
        }
        guard !candidates.isEmpty else {
            return .failure(Failure(.badSignatureEncoding, "The signature is \(bytes.count) bytes, neither a DER "
                + "ECDSA signature nor a raw 64-byte r‖s P-256 signature."))
        }
        return .success(candidates)
    }

    /// The body hash components clients use: for an empty body both "" and base64(SHA-256("")).
    static func bodyHashCandidates<Body: DataProtocol>(_ body: Body) -> [String] {
        body.isEmpty ? ["", bodyHash(body)] : [bodyHash(body)]
    }

    /// `text` in quotes, shortened and with control characters replaced, safe for a log line.
    static func quoted(_ text: String) -> String {
        var cleaned = String(String.UnicodeScalarView(text.unicodeScalars.prefix(80).map {
            $0.properties.generalCategory == .control ? "\u{FFFD}" : $0
        }))
        if text.unicodeScalars.count > 80 { cleaned += "…" }
        return "\"\(cleaned)\""
    }

    private static func seconds(_ interval: TimeInterval) -> String {
        guard interval.isFinite, abs(interval) < 1e15 else { return "\(interval) s" }
        return "\(Int(interval.rounded())) s"
    }
}
