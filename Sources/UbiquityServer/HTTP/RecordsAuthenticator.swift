// SPDX-License-Identifier: Apache-2.0
import Foundation
import Logging
import Synchronization
import UbiquityCore
import UbiquityWire

/// Authentication as CloudKit Web Services does it: `ckAPIToken` (+ `ckWebAuthToken`) in the
/// query string, or server-to-server signature headers — never both.
final class RecordsAuthenticator: Sendable {
    /// What authentication found.
    struct Outcome: Sendable {
        var caller: RecordsCaller
        /// The token to return in `X-Apple-CloudKit-Web-Auth-Token`.
        var rotatedToken: String?
    }

    struct Rotation: Sendable {
        var token: String
        var issuedAt: Int64
    }

    let store: any RecordStore
    let configuration: RecordsServerConfiguration
    let logger: Logger
    /// Web-auth token digest → the token handed out in its place, reused for five minutes so a
    /// busy client does not cause a write per request.
    let rotations = Mutex<[String: Rotation]>([:])

    init(store: any RecordStore, configuration: RecordsServerConfiguration, logger: Logger) {
        self.store = store
        self.configuration = configuration
        self.logger = logger
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// What can be known of a request's caller before its body is read.
    enum Stage: Sendable {
        /// Token authentication (API, web-auth or device token) is done: the body is not needed.
        case authenticated(Outcome)
        /// A server-to-server request with a registered key and a date within the skew: its
        /// signature covers the body, so it is verified once the body is in (``verify(_:body:rawPath:rawPathWithQuery:)``).
        case signature(PendingSignature)
    }

    /// A server-to-server request waiting for its body to be verified.
    struct PendingSignature: Sendable {
        var keyID: String
        var date: String
        var signature: String
        var publicKeyPEM: String
        var deviceID: String?
    }

    /// Authenticates a request to `path` before its body is read (issue 24, finding 4): a bad
    /// or missing token, an unknown server-to-server key or a date outside the allowed skew is
    /// refused here, so such a request never has its body collected. `query` is the decoded
    /// query string.
    func authenticateBeforeBody(path: DatabasePath, query: [String: String], header: (String) -> String?) async throws -> Stage {
        let keyID = header(CloudKitAuthHeaders.keyID)
        if let keyID {
            guard query["ckAPIToken"] == nil else {
                throw WireError(.badRequest, "a request carries either ckAPIToken or server-to-server signature headers, not both")
            }
            guard let date = header(CloudKitAuthHeaders.iso8601Date), let signature = header(CloudKitAuthHeaders.signatureV1) else {
                throw WireError(.authenticationFailed, "server-to-server requests need the \(CloudKitAuthHeaders.iso8601Date) and \(CloudKitAuthHeaders.signatureV1) headers")
            }
            let container = path.container
            guard let pem = try await store.read({ tx in try await tx.serverKey(container: container, keyID: keyID) }) else {
                throw WireError(.authenticationFailed, "unknown server-to-server key ID for container \(container)")
            }
            guard let signedAt = ServerToServerSignature.parseDate(date) else {
                throw WireError(.authenticationFailed, "Authentication failed: the request date is not an ISO 8601 date-time with a time zone, like 2016-01-25T22:15:43Z")
            }
            guard abs(Date().timeIntervalSince(signedAt)) <= configuration.signatureSkew else {
                throw WireError(.authenticationFailed, "Authentication failed: the request date is further from the server's clock than the allowed \(Int(configuration.signatureSkew)) s; sign each request with the current time")
            }
            return .signature(PendingSignature(keyID: keyID, date: date, signature: signature, publicKeyPEM: pem, deviceID: Self.deviceID(header)))
        }
        return .authenticated(try await authenticateToken(path: path, query: query, header: header))
    }

    /// Verifies a server-to-server signature over the body as received.
    func verify(_ pending: PendingSignature, body: [UInt8], rawPath: String, rawPathWithQuery: String) throws -> Outcome {
        let verdict = ServerToServerSignature.verify(
            keyID: pending.keyID, date: pending.date, signature: pending.signature, body: body, path: rawPath, pathWithQuery: rawPathWithQuery,
            publicKeyPEM: pending.publicKeyPEM, now: Date(), allowedClockSkew: configuration.signatureSkew)
        if let failure = verdict.failure {
            throw WireError(.authenticationFailed, "Authentication failed: \(failure.reason)")
        }
        return Outcome(caller: RecordsCaller(identity: .serverKey(keyID: pending.keyID), deviceID: pending.deviceID))
    }

    /// API-token, web-auth-token and device-token authentication (none needs the body).
    private func authenticateToken(path: DatabasePath, query: [String: String], header: (String) -> String?) async throws -> Outcome {
        if query["ckAPIToken"].map(\.isEmpty) ?? true, let deviceToken = query["ckWebAuthToken"], SecretToken.isDeviceToken(deviceToken) {
            return try await authenticateDevice(token: deviceToken, path: path, deviceID: Self.deviceID(header))
        }
        guard let apiToken = query["ckAPIToken"], !apiToken.isEmpty else {
            throw WireError(.authenticationFailed, "missing ckAPIToken (or server-to-server signature headers)")
        }
        let apiDigest = SecretToken.digest(apiToken)
        let webToken = query["ckWebAuthToken"].flatMap { $0.isEmpty ? nil : $0 }
        let webDigest = webToken.map(SecretToken.digest)
        let now = RecordsAuthenticator.now
        let (container, live) = try await store.readWithoutSnapshot { tx in
            try await tx.credentials(apiTokenDigest: apiDigest, webTokenDigest: webDigest, now: now)
        }
        guard let container, container == path.container else {
            throw WireError(.authenticationFailed, "the API token is not valid for container \(path.container)")
        }
        let deviceID = Self.deviceID(header)
        guard let webToken else {
            return Outcome(caller: RecordsCaller(identity: .anonymous, deviceID: deviceID))
        }
        guard let live else {
            throw WireError(.authenticationRequired, "the web auth token is not valid (expired, revoked or unknown); sign in again")
        }
        try Self.check(live.token, in: container)
        let account = live.account
        let caller = RecordsCaller(identity: .user(accountID: account.id, userRecordName: RecordsCaller.userRecordName(accountID: account.id, container: container)),
                                   deviceID: deviceID)
        return Outcome(caller: caller, rotatedToken: try await rotate(token: webToken, live: live.token))
    }

    /// Refuses a token bound to another container (issue 24, finding 9: a token a web app
    /// obtained opens only that app's container).
    static func check(_ token: StoredWebAuthToken, in container: String) throws {
        guard let bound = token.container, bound != container else { return }
        throw WireError(.authenticationRequired, "the web auth token was issued for another container, not \(container); sign in to this one")
    }

    /// A device token (`ubiq account login`) without an API token: the signed-in user in any
    /// container, which is created on first use (a device syncs the user's own private data;
    /// app containers need not be registered by an administrator first). Not rotated.
    func authenticateDevice(token: String, path: DatabasePath, deviceID: String?) async throws -> Outcome {
        let digest = SecretToken.digest(token)
        let now = RecordsAuthenticator.now
        let container = path.container
        let (live, exists) = try await store.readWithoutSnapshot { tx in
            (try await tx.webAuthToken(digest: digest, now: now), try await tx.containerExists(container))
        }
        guard let live else {
            throw WireError(.authenticationRequired, "the device token is not valid (expired, revoked or unknown); sign in again with `ubiq account login`")
        }
        try Self.check(live.token, in: container)
        let account = live.account
        if !exists {
            do {
                try RecordsAdmin.validate(container: container)
            } catch {
                throw WireError(.badRequest, "container \(container) is not a valid container identifier")
            }
            try await store.write { tx in try await tx.addContainer(container, createdAt: now) }
        }
        let caller = RecordsCaller(identity: .user(accountID: account.id, userRecordName: RecordsCaller.userRecordName(accountID: account.id, container: container)),
                                   deviceID: deviceID)
        return Outcome(caller: caller, rotatedToken: nil)
    }

    /// The token to hand back: a fresh one every five minutes per token (the old stays valid
    /// until it expires, as CloudKit's live servers do). The fresh token continues the
    /// presented one's session: the same container, the same expiry (rotation never extends a
    /// sign-in), revoked with it.
    func rotate(token: String, live: StoredWebAuthToken) async throws -> String {
        let now = RecordsAuthenticator.now
        if let current = rotations.withLock({ $0[live.digest] }), now - current.issuedAt < 5 * 60 * 1000 { return current.token }
        let fresh = SecretToken.generate()
        let freshDigest = SecretToken.digest(fresh)
        let row = StoredWebAuthToken(digest: freshDigest, accountID: live.accountID, container: live.container, session: live.session,
                                     isDevice: live.isDevice, createdAt: now, expiresAt: live.expiresAt)
        do {
            try await store.write { tx in try await tx.addWebAuthToken(row) }
        } catch {
            logger.warning("could not store a rotated web auth token", metadata: ["error": "\(error)"])
            return token
        }
        rotations.withLock { table in
            if table.count > 10_000 { table.removeAll() }
            table[live.digest] = Rotation(token: fresh, issuedAt: now)
            table[freshDigest] = Rotation(token: fresh, issuedAt: now)
        }
        return fresh
    }

    /// The device a request names (`X-Ubiquity-Device-ID`, percent-encoded when not plain ASCII).
    static func deviceID(_ header: (String) -> String?) -> String? {
        guard let value = header("X-Ubiquity-Device-ID"), !value.isEmpty else { return nil }
        return value.contains("%") ? value.removingPercentEncoding ?? value : value
    }
}
