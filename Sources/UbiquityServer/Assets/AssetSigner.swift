// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore
import UbiquityWire

/// Where an asset goes: the record field an upload URL is for, and that its receipt is bound to.
package struct AssetBinding: Sendable, Hashable {
    /// The container identifier.
    package var container: String
    /// Development or production.
    package var environment: CloudKitEnvironment
    /// The database.
    package var scope: CloudKitDatabaseScope
    /// The database owner's user record name (`""` for the public database).
    package var owner: String
    /// The zone's name.
    package var zoneName: String
    /// The record type.
    package var recordType: String
    /// The asset field's name.
    package var fieldName: String
    /// The record's name, when the upload was requested for a particular record.
    package var recordName: String?

    /// Makes a binding.
    package init(container: String, environment: CloudKitEnvironment, scope: CloudKitDatabaseScope, owner: String,
                zoneName: String, recordType: String, fieldName: String, recordName: String? = nil) {
        self.container = container
        self.environment = environment
        self.scope = scope
        self.owner = owner
        self.zoneName = zoneName
        self.recordType = recordType
        self.fieldName = fieldName
        self.recordName = recordName
    }
}

/// A verified upload token: the field it is for and when it expires.
package struct AssetUploadToken: Sendable, Hashable {
    /// The field the upload is for.
    package var binding: AssetBinding
    /// When the token was made.
    package var issuedAt: Date
    /// When it stops being accepted (``AssetSigner/uploadTokenLifetime`` after issue).
    package var expiresAt: Date
}

/// A verified receipt: proof that the server stored `fileChecksum` (`size` bytes) for a field.
package struct AssetReceipt: Sendable, Hashable {
    /// The field the upload was for.
    package var binding: AssetBinding
    /// The stored content's checksum.
    package var fileChecksum: String
    /// The stored content's size.
    package var size: Int64
    /// When the receipt was issued; it is valid for ``AssetSigner/receiptLifetime``.
    package var issuedAt: Date
}

/// A verified download token.
package struct AssetDownloadToken: Sendable, Hashable {
    /// The content to serve.
    package var fileChecksum: String
    /// Its size.
    package var size: Int64
    /// The container it belongs to.
    package var container: String
    /// When the token stops being accepted.
    package var expiresAt: Date
}

/// Why a token or receipt was refused.
package struct AssetSignatureError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The reason, precise enough to tell the client which part is wrong.
    package enum Reason: Sendable, Hashable {
        /// Not a token this server makes (bad encoding, unknown version, truncated).
        case malformed
        /// The signature does not match: made with another key, or altered.
        case forged
        /// A token of another kind (an upload token offered as a receipt, …).
        case wrongKind
        /// Past its expiry.
        case expired(at: Date)
        /// Valid, but for something else: the named binding part (`container`, `environment`,
        /// `scope`, `owner`, `zoneName`, `recordType`, `fieldName`, `recordName`, `fileChecksum`,
        /// `size`) differs from what was expected.
        case mismatch(field: String)
    }

    /// The reason.
    package var reason: Reason
    /// A sentence for the client.
    package var message: String

    /// `message`.
    package var description: String { message }
}

/// Makes and verifies upload tokens, receipts and download tokens: opaque base64url strings,
/// HMAC-SHA256-signed with a key the caller keeps (and persists, so they survive restarts).
///
/// Format: `version (1) | kind (1) | fields… | HMAC-SHA256 (32)`, strings length-prefixed,
/// times in whole seconds; the MAC covers everything before it and is compared in constant time.
package struct AssetSigner: Sendable {
    /// How long an upload URL is accepted: 15 minutes, as CloudKit documents.
    package static let uploadTokenLifetime: TimeInterval = 15 * 60
    /// How long a receipt is accepted when saving a record: 24 hours.
    package static let receiptLifetime: TimeInterval = 24 * 60 * 60

    private enum Kind: UInt8 {
        case upload = 1
        case receipt = 2
        case download = 3
    }

    private static let version: UInt8 = 1
    private let key: SymmetricKey

    /// A signer with `key` (at least 128 bits; 256 recommended).
    package init(key: SymmetricKey) {
        self.key = key
    }

    // MARK: Upload tokens

    /// An upload token for `binding`, valid for ``uploadTokenLifetime`` from `now`.
    package func makeUploadToken(for binding: AssetBinding, now: Date = Date()) -> String {
        var writer = TokenWriter(kind: Kind.upload.rawValue, version: Self.version)
        writer.binding(binding)
        writer.time(now)
        writer.time(now.addingTimeInterval(Self.uploadTokenLifetime))
        var nonce = SystemRandomNumberGenerator()
        writer.bytes((0..<12).map { _ in UInt8.random(in: 0...255, using: &nonce) })
        return sign(writer.data)
    }

    /// Checks an upload token's signature, kind and expiry.
    /// - Parameter allowExpired: accept it past its expiry (a resumable upload session begun in
    ///   time may continue); the signature is still checked.
    package func verifyUploadToken(_ token: String, now: Date = Date(), allowExpired: Bool = false) throws(AssetSignatureError) -> AssetUploadToken {
        var reader = try open(token, kind: .upload)
        do {
            let binding = try reader.binding()
            let issued = try reader.time()
            let expires = try reader.time()
            _ = try reader.bytes()
            try reader.end()
            if !allowExpired, now >= expires {
                throw AssetSignatureError(reason: .expired(at: expires), message: "the upload URL expired at \(Self.format(expires)); ask for a new one (assets/upload)")
            }
            return AssetUploadToken(binding: binding, issuedAt: issued, expiresAt: expires)
        } catch let error as AssetSignatureError {
            throw error
        } catch {
            throw Self.malformed("upload URL")
        }
    }

    // MARK: Receipts

    /// A receipt for `fileChecksum` (`size` bytes) stored for `binding`.
    package func makeReceipt(for binding: AssetBinding, fileChecksum: String, size: Int64, now: Date = Date()) -> String {
        var writer = TokenWriter(kind: Kind.receipt.rawValue, version: Self.version)
        writer.binding(binding)
        writer.string(fileChecksum)
        writer.integer(size)
        writer.time(now)
        return sign(writer.data)
    }

    /// Reads a receipt, checking its signature and kind only (not the binding or the age).
    package func openReceipt(_ receipt: String) throws(AssetSignatureError) -> AssetReceipt {
        var reader = try open(receipt, kind: .receipt)
        do {
            let binding = try reader.binding()
            let checksum = try reader.string()
            let size = try reader.integer()
            let issued = try reader.time()
            try reader.end()
            return AssetReceipt(binding: binding, fileChecksum: checksum, size: size, issuedAt: issued)
        } catch {
            throw Self.malformed("receipt")
        }
    }

    /// Verifies a receipt for saving `fileChecksum` (`size` bytes) into the field `expected`:
    /// signature, kind, age (``receiptLifetime``), and every part of the binding. A receipt
    /// whose upload named no record is accepted for any record name.
    package func verifyReceipt(_ receipt: String, expected: AssetBinding, fileChecksum: String, size: Int64,
                              now: Date = Date()) throws(AssetSignatureError) -> AssetReceipt {
        let opened = try openReceipt(receipt)
        let expires = opened.issuedAt.addingTimeInterval(Self.receiptLifetime)
        if now >= expires {
            throw AssetSignatureError(reason: .expired(at: expires), message: "the asset receipt expired at \(Self.format(expires)); upload the file again")
        }
        let actual = opened.binding
        let parts: [(String, Bool)] = [
            ("container", actual.container == expected.container),
            ("environment", actual.environment == expected.environment),
            ("scope", actual.scope == expected.scope),
            ("owner", actual.owner == expected.owner),
            ("zoneName", actual.zoneName == expected.zoneName),
            ("recordType", actual.recordType == expected.recordType),
            ("fieldName", actual.fieldName == expected.fieldName),
            ("recordName", actual.recordName == nil || actual.recordName == expected.recordName),
            ("fileChecksum", opened.fileChecksum == fileChecksum),
            ("size", opened.size == size),
        ]
        if let (name, _) = parts.first(where: { !$0.1 }) {
            throw AssetSignatureError(reason: .mismatch(field: name), message: Self.mismatchMessage(name, actual: opened))
        }
        return opened
    }

    private static func mismatchMessage(_ part: String, actual: AssetReceipt) -> String {
        switch part {
        case "fileChecksum": return "the asset receipt is for another file (checksum \(actual.fileChecksum))"
        case "size": return "the asset receipt is for a file of \(actual.size) bytes, not the size given"
        case "fieldName": return "the asset receipt was issued for field \(actual.binding.fieldName), not this one"
        case "recordType": return "the asset receipt was issued for record type \(actual.binding.recordType)"
        case "recordName": return "the asset receipt was issued for record \(actual.binding.recordName ?? "")"
        case "zoneName": return "the asset receipt was issued for zone \(actual.binding.zoneName)"
        default: return "the asset receipt was issued for another \(part)"
        }
    }

    // MARK: Download tokens

    /// A download token for `fileChecksum`, valid until `expiresAt`.
    package func makeDownloadToken(fileChecksum: String, size: Int64, container: String, expiresAt: Date) -> String {
        var writer = TokenWriter(kind: Kind.download.rawValue, version: Self.version)
        writer.string(fileChecksum)
        writer.integer(size)
        writer.string(container)
        writer.time(expiresAt)
        return sign(writer.data)
    }

    /// Checks a download token's signature, kind and expiry.
    package func verifyDownloadToken(_ token: String, now: Date = Date()) throws(AssetSignatureError) -> AssetDownloadToken {
        var reader = try open(token, kind: .download)
        do {
            let checksum = try reader.string()
            let size = try reader.integer()
            let container = try reader.string()
            let expires = try reader.time()
            try reader.end()
            if now >= expires {
                throw AssetSignatureError(reason: .expired(at: expires), message: "the download URL expired at \(Self.format(expires)); fetch the record again for a new one")
            }
            return AssetDownloadToken(fileChecksum: checksum, size: size, container: container, expiresAt: expires)
        } catch let error as AssetSignatureError {
            throw error
        } catch {
            throw Self.malformed("download URL")
        }
    }

    // MARK: Signing

    private func sign(_ payload: [UInt8]) -> String {
        let mac = HMAC<SHA256>.authenticationCode(for: payload, using: key)
        return Base64URL.encode(payload + Array(mac))
    }

    /// Decodes, checks the MAC, version and kind, and returns a reader after the header.
    private func open(_ token: String, kind: Kind) throws(AssetSignatureError) -> TokenReader {
        let what: String
        switch kind {
        case .upload: what = "upload URL"
        case .receipt: what = "receipt"
        case .download: what = "download URL"
        }
        guard let bytes = Base64URL.decode(token), bytes.count > 34 else { throw Self.malformed(what) }
        let payload = Array(bytes[..<(bytes.count - 32)])
        let mac = Array(bytes[(bytes.count - 32)...])
        let expected = Array(HMAC<SHA256>.authenticationCode(for: payload, using: key))
        guard AuthEncoding.constantTimeEquals(mac, expected) else {
            throw AssetSignatureError(reason: .forged, message: "the \(what) was not issued by this server or was altered")
        }
        guard payload[0] == Self.version else { throw Self.malformed(what) }
        guard payload[1] == kind.rawValue else {
            throw AssetSignatureError(reason: .wrongKind, message: "this is not a \(what)")
        }
        return TokenReader(data: payload, offset: 2)
    }

    private static func malformed(_ what: String) -> AssetSignatureError {
        AssetSignatureError(reason: .malformed, message: "the \(what) is malformed")
    }

    private static func format(_ date: Date) -> String { date.formatted(.iso8601) }
}

/// Appends token fields.
private struct TokenWriter {
    var data: [UInt8]

    init(kind: UInt8, version: UInt8) { data = [version, kind] }

    mutating func bytes(_ value: [UInt8]) {
        var length = value.count
        repeat {
            var byte = UInt8(length & 0x7F)
            length >>= 7
            if length > 0 { byte |= 0x80 }
            data.append(byte)
        } while length > 0
        data.append(contentsOf: value)
    }

    mutating func string(_ value: String) { bytes(Array(value.utf8)) }

    mutating func optionalString(_ value: String?) {
        if let value {
            data.append(1)
            string(value)
        } else {
            data.append(0)
        }
    }

    mutating func integer(_ value: Int64) {
        for shift in stride(from: 56, through: 0, by: -8) { data.append(UInt8(truncatingIfNeeded: value >> Int64(shift))) }
    }

    mutating func time(_ date: Date) { integer(Int64(date.timeIntervalSince1970.rounded(.down))) }

    mutating func binding(_ binding: AssetBinding) {
        string(binding.container)
        string(binding.environment.rawValue)
        string(binding.scope.rawValue)
        string(binding.owner)
        string(binding.zoneName)
        string(binding.recordType)
        string(binding.fieldName)
        optionalString(binding.recordName)
    }
}

/// Reads token fields; any inconsistency throws.
private struct TokenReader {
    struct Truncated: Error {}

    let data: [UInt8]
    var offset: Int

    mutating func byte() throws -> UInt8 {
        guard offset < data.count else { throw Truncated() }
        defer { offset += 1 }
        return data[offset]
    }

    mutating func bytes() throws -> [UInt8] {
        var length = 0
        var shift = 0
        while true {
            let byte = try byte()
            length |= Int(byte & 0x7F) << shift
            if byte & 0x80 == 0 { break }
            shift += 7
            guard shift < 28 else { throw Truncated() }
        }
        guard length <= data.count - offset else { throw Truncated() }
        defer { offset += length }
        return Array(data[offset..<offset + length])
    }

    mutating func string() throws -> String {
        guard let text = String(validating: try bytes(), as: UTF8.self) else { throw Truncated() }
        return text
    }

    mutating func optionalString() throws -> String? { try byte() == 0 ? nil : try string() }

    mutating func integer() throws -> Int64 {
        var value: Int64 = 0
        for _ in 0..<8 { value = value << 8 | Int64(try byte()) }
        return value
    }

    mutating func time() throws -> Date { Date(timeIntervalSince1970: TimeInterval(try integer())) }

    mutating func binding() throws -> AssetBinding {
        let container = try string()
        guard let environment = CloudKitEnvironment(rawValue: try string()), let scope = CloudKitDatabaseScope(rawValue: try string()) else {
            throw Truncated()
        }
        return AssetBinding(container: container, environment: environment, scope: scope, owner: try string(), zoneName: try string(),
                            recordType: try string(), fieldName: try string(), recordName: try optionalString())
    }

    func end() throws { guard offset == data.count else { throw Truncated() } }
}
