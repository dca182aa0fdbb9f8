// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// Administration, as `ubiq admin` scripts it: containers and their API tokens, accounts and
/// their web-auth tokens, server-to-server keys. Secrets are returned once and stored as digests
/// (tokens) or with a memory-hard KDF (passwords).
public struct RecordsAdmin: Sendable {
    let store: any RecordStore
    let configuration: RecordsServerConfiguration
    let passwordHasher: PasswordHasher

    /// Makes an admin over a store.
    public init(store: any RecordStore, configuration: RecordsServerConfiguration = .init(), passwordHasher: PasswordHasher = PasswordHasher()) {
        self.store = store
        self.configuration = configuration
        self.passwordHasher = passwordHasher
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Checks a container identifier: letters, digits, `.`, `_`, `-`, at most 255 bytes.
    public static func validate(container: String) throws {
        guard !container.isEmpty, container.utf8.count <= 255,
              container.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0) }) else {
            throw UbiquityError(.invalidArgument, "container \(container.debugDescription): expected letters, digits, '.', '_' and '-' (like iCloud.com.example.App)")
        }
    }

    /// Checks an account name: 1–64 letters, digits, `.`, `_`, `-`, `@`.
    public static func validate(userName: String) throws {
        guard !userName.isEmpty, userName.utf8.count <= 64,
              userName.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-@".unicodeScalars.contains($0) }) else {
            throw UbiquityError(.invalidArgument, "user name \(userName.debugDescription): expected 1 to 64 letters, digits, '.', '_', '-' or '@'")
        }
    }

    /// Adds the container (when new) and returns a new API token (`ckAPIToken`) for it.
    public func addContainer(_ identifier: String) async throws -> String {
        try RecordsAdmin.validate(container: identifier)
        let token = SecretToken.generate()
        let digest = SecretToken.digest(token)
        try await store.write { tx in
            try tx.addContainer(identifier, createdAt: RecordsAdmin.now)
            try tx.addAPIToken(container: identifier, digest: digest, createdAt: RecordsAdmin.now)
        }
        return token
    }

    /// The containers.
    public func containers() async throws -> [String] {
        try await store.read { tx in try tx.containers() }
    }

    /// Creates an account and returns a web-auth token (`ckWebAuthToken`) for it.
    public func addUser(_ name: String, email: String?, password: String?) async throws -> String {
        try RecordsAdmin.validate(userName: name)
        if let email, !(email.contains("@") && email.utf8.count <= 254 && !email.contains(where: \.isWhitespace)) {
            throw UbiquityError(.invalidArgument, "e-mail \(email.debugDescription) is not an e-mail address")
        }
        let hasher = passwordHasher
        // scrypt takes ~0.1 s and 32 MiB: off the cooperative pool.
        var hashed: String?
        if let password { hashed = try await BlockingWork.run { try hasher.hash(password) } }
        let hash = hashed
        let token = SecretToken.generate()
        let digest = SecretToken.digest(token)
        let lifetime = configuration.longWebAuthTokenLifetime
        try await store.write { tx in
            let account = try tx.addAccount(name: name, email: email, passwordHash: hash, createdAt: RecordsAdmin.now)
            try tx.addWebAuthToken(accountID: account.id, digest: digest, createdAt: RecordsAdmin.now, expiresAt: RecordsAdmin.now + lifetime * 1000)
        }
        return token
    }

    /// Issues another web-auth token for an account (valid for the long lifetime), or a device
    /// token (valid for the device lifetime; see ``SecretToken/generateDeviceToken()``).
    public func issueToken(forUser name: String, lifetime: Int64? = nil, device: Bool = false) async throws -> String {
        let token = device ? SecretToken.generateDeviceToken() : SecretToken.generate()
        let digest = SecretToken.digest(token)
        let seconds = lifetime ?? (device ? configuration.deviceTokenLifetime : configuration.longWebAuthTokenLifetime)
        try await store.write { tx in
            guard let account = try tx.account(named: name) else { throw UbiquityError(.notFound, "no account is named \(name); add it with `ubiq admin user add \(name)`") }
            try tx.addWebAuthToken(accountID: account.id, digest: digest, createdAt: RecordsAdmin.now, expiresAt: RecordsAdmin.now + seconds * 1000)
        }
        return token
    }

    /// The account `name` when `password` is its password, else nil. An unknown name, or one
    /// without a password, costs the same key derivation as a wrong password (no timing oracle).
    func account(named name: String, password: String) async throws -> StoredAccount? {
        let hasher = passwordHasher
        let account = try await store.read { tx in try tx.account(named: name) }
        guard let account, let hash = account.passwordHash else {
            _ = try await BlockingWork.run { hasher.rejectWithoutHash(password) }
            return nil
        }
        return try await BlockingWork.run({ hasher.verify(password, against: hash) }) ? account : nil
    }

    /// Checks a password and issues a token (the sign-in page's and `ubiq account login`'s path).
    /// Returns nil when the name or password is wrong.
    public func signIn(user name: String, password: String, lifetime: Int64) async throws -> String? {
        guard let account = try await account(named: name, password: password) else { return nil }
        let token = SecretToken.generate()
        let digest = SecretToken.digest(token)
        try await store.write { tx in
            try tx.addWebAuthToken(accountID: account.id, digest: digest, createdAt: RecordsAdmin.now, expiresAt: RecordsAdmin.now + lifetime * 1000)
        }
        return token
    }

    /// Checks a password and issues a device token (`POST /auth/device`, `ubiq account login`).
    /// Returns nil when the name or password is wrong.
    public func signInDevice(user name: String, password: String) async throws -> String? {
        guard let account = try await account(named: name, password: password) else { return nil }
        let token = SecretToken.generateDeviceToken()
        let digest = SecretToken.digest(token)
        let expires = RecordsAdmin.now + configuration.deviceTokenLifetime * 1000
        try await store.write { tx in
            try tx.addWebAuthToken(accountID: account.id, digest: digest, createdAt: RecordsAdmin.now, expiresAt: expires)
        }
        return token
    }

    /// The account a live web-auth or device token belongs to, or nil.
    public func account(forToken token: String) async throws -> StoredAccount? {
        guard !token.isEmpty, token.utf8.count <= 256 else { return nil }
        let digest = SecretToken.digest(token)
        return try await store.read { tx in try tx.account(forWebAuthTokenDigest: digest, now: RecordsAdmin.now) }
    }

    /// Deletes a web-auth or device token (signing a device out); no error when it is unknown.
    public func revokeToken(_ token: String) async throws {
        let digest = SecretToken.digest(token)
        try await store.write { tx in try tx.revokeWebAuthToken(digest: digest) }
    }

    /// Registers a server-to-server public key (PEM, P-256) for a container; returns its key ID.
    public func addKey(container: String, publicKeyPEM: String) async throws -> String {
        try RecordsAdmin.validate(container: container)
        let publicKey: P256.Signing.PublicKey
        do {
            publicKey = try P256.Signing.PublicKey(pemRepresentation: publicKeyPEM)
        } catch {
            throw UbiquityError(.invalidArgument, "--public-key: expected a P-256 public key in PEM (`openssl ec -in eckey.pem -pubout`)", underlying: error)
        }
        let keyID = SecretToken.keyID()
        let pem = publicKey.pemRepresentation
        try await store.write { tx in
            guard try tx.containerExists(container) else {
                throw UbiquityError(.notFound, "no container \(container); add it with `ubiq admin container add \(container)`")
            }
            try tx.addServerKey(container: container, keyID: keyID, publicKeyPEM: pem, createdAt: RecordsAdmin.now)
        }
        return keyID
    }
}
