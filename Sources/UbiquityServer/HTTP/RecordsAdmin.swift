// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore

/// Administration, as `ubiq admin` scripts it: containers and their API tokens, accounts and
/// their web-auth tokens, server-to-server keys. Secrets are returned once and stored as digests
/// (tokens) or with a memory-hard KDF (passwords).
package struct RecordsAdmin: Sendable {
    let store: any RecordStore
    let configuration: RecordsServerConfiguration
    let passwordHasher: PasswordHasher

    /// Makes an admin over a store.
    package init(store: any RecordStore, configuration: RecordsServerConfiguration = .init(), passwordHasher: PasswordHasher = PasswordHasher()) {
        self.store = store
        self.configuration = configuration
        self.passwordHasher = passwordHasher
    }

    static var now: Int64 { Int64(Date().timeIntervalSince1970 * 1000) }

    /// Checks a container identifier: letters, digits, `.`, `_`, `-`, at most 255 bytes.
    package static func validate(container: String) throws {
        guard !container.isEmpty, container.utf8.count <= 255,
              container.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-".unicodeScalars.contains($0) }) else {
            throw UbiquityError(.invalidArgument, "container \(container.debugDescription): expected letters, digits, '.', '_' and '-' (like iCloud.com.example.App)")
        }
    }

    /// Checks an account name: 1–64 letters, digits, `.`, `_`, `-`, `@`.
    package static func validate(userName: String) throws {
        guard !userName.isEmpty, userName.utf8.count <= 64,
              userName.unicodeScalars.allSatisfy({ ("a"..."z").contains($0) || ("A"..."Z").contains($0) || ("0"..."9").contains($0) || "._-@".unicodeScalars.contains($0) }) else {
            throw UbiquityError(.invalidArgument, "user name \(userName.debugDescription): expected 1 to 64 letters, digits, '.', '_', '-' or '@'")
        }
    }

    /// Adds the container (when new) and returns a new API token (`ckAPIToken`) for it.
    package func addContainer(_ identifier: String) async throws -> String {
        try RecordsAdmin.validate(container: identifier)
        let token = SecretToken.generateAPIToken()
        let digest = SecretToken.digest(token)
        try await store.write { tx in
            try await tx.addContainer(identifier, createdAt: RecordsAdmin.now)
            try await tx.addAPIToken(container: identifier, digest: digest, createdAt: RecordsAdmin.now)
        }
        return token
    }

    /// The containers.
    package func containers() async throws -> [String] {
        try await store.read { tx in try await tx.containers() }
    }

    /// Creates an account and returns a web-auth token (`ckWebAuthToken`) for it, valid in any
    /// container.
    package func addUser(_ name: String, email: String?, password: String?) async throws -> String {
        try RecordsAdmin.validate(userName: name)
        if let email, !(email.contains("@") && email.utf8.count <= 254 && !email.contains(where: \.isWhitespace)) {
            throw UbiquityError(.invalidArgument, "e-mail \(email.debugDescription) is not an e-mail address")
        }
        let hash = try await hashed(password)
        let lifetime = configuration.longWebAuthTokenLifetime
        return try await store.write { tx in
            let account = try await tx.addAccount(name: name, email: email, passwordHash: hash, createdAt: RecordsAdmin.now)
            return try await RecordsAdmin.issue(to: account.id, device: false, container: nil, lifetime: lifetime, in: tx)
        }
    }

    /// Issues another web-auth token for an account (valid for the long lifetime), or a device
    /// token (valid for the device lifetime; see ``SecretToken/generateDeviceToken()``). A web-auth
    /// token issued with a `container` is valid only there (a device token is valid in any).
    package func issueToken(forUser name: String, lifetime: Int64? = nil, device: Bool = false, container: String? = nil) async throws -> String {
        if let container { try RecordsAdmin.validate(container: container) }
        let seconds = lifetime ?? (device ? configuration.deviceTokenLifetime : configuration.longWebAuthTokenLifetime)
        return try await store.write { tx in
            let account = try await RecordsAdmin.account(named: name, in: tx)
            return try await RecordsAdmin.issue(to: account.id, device: device, container: device ? nil : container, lifetime: seconds, in: tx)
        }
    }

    /// Stores a new token for the account `accountID` and returns it.
    static func issue(to accountID: Int64, device: Bool, container: String?, lifetime seconds: Int64, in tx: any RecordStoreTransaction) async throws -> String {
        let token = device ? SecretToken.generateDeviceToken() : SecretToken.generate()
        try await tx.addWebAuthToken(StoredWebAuthToken(digest: SecretToken.digest(token), accountID: accountID, container: container, isDevice: device,
                                                  createdAt: now, expiresAt: now + seconds * 1000))
        return token
    }

    /// The account named `name`, or `notFound` with how to add it.
    static func account(named name: String, in tx: any RecordStoreTransaction) async throws -> StoredAccount {
        guard let account = try await tx.account(named: name) else {
            throw UbiquityError(.notFound, "no account is named \(name); add it with `ubiq admin user add \(name)`")
        }
        return account
    }

    /// `password`'s KDF string (scrypt takes ~0.1 s and 32 MiB: off the cooperative pool).
    func hashed(_ password: String?) async throws -> String? {
        guard let password else { return nil }
        let hasher = passwordHasher
        return try await BlockingWork.run { try hasher.hash(password) }
    }

    /// The account `name` when `password` is its password, else nil. An unknown name, or one
    /// without a password, costs the same key derivation as a wrong password (no timing oracle).
    /// - Throws: `permissionDenied` when the password is right but an administrator disabled
    ///   the account.
    func account(named name: String, password: String) async throws -> StoredAccount? {
        let hasher = passwordHasher
        let account = try await store.read { tx in try await tx.account(named: name) }
        guard let account, let hash = account.passwordHash else {
            _ = try await BlockingWork.run { hasher.rejectWithoutHash(password) }
            return nil
        }
        guard try await BlockingWork.run({ hasher.verify(password, against: hash) }) else { return nil }
        guard account.disabledAt == nil else {
            throw UbiquityError(.permissionDenied, "the account \(name) is disabled; ask the server's administrator")
        }
        return account
    }

    /// Checks a password and issues a web-auth token valid in `container` only (the sign-in
    /// page's path). Returns nil when the name or password is wrong.
    /// - Throws: `permissionDenied` when the account is disabled.
    package func signIn(user name: String, password: String, lifetime: Int64, container: String) async throws -> String? {
        guard let account = try await account(named: name, password: password) else { return nil }
        return try await store.write { tx in try await RecordsAdmin.issue(to: account.id, device: false, container: container, lifetime: lifetime, in: tx) }
    }

    /// Checks a password and issues a device token (`POST /auth/device`, `ubiq account login`).
    /// Returns nil when the name or password is wrong.
    /// - Throws: `permissionDenied` when the account is disabled.
    package func signInDevice(user name: String, password: String) async throws -> String? {
        guard let account = try await account(named: name, password: password) else { return nil }
        let lifetime = configuration.deviceTokenLifetime
        return try await store.write { tx in try await RecordsAdmin.issue(to: account.id, device: true, container: nil, lifetime: lifetime, in: tx) }
    }

    /// The account a live web-auth or device token belongs to, or nil (also when the account is
    /// disabled).
    package func account(forToken token: String) async throws -> StoredAccount? {
        guard !token.isEmpty, token.utf8.count <= 256 else { return nil }
        let digest = SecretToken.digest(token)
        return try await store.read { tx in try await tx.webAuthToken(digest: digest, now: RecordsAdmin.now)?.account }
    }

    /// Revokes a web-auth or device token and every token of its session (signing a device or
    /// a web app out); no error when it is unknown. Returns how many tokens were revoked.
    @discardableResult
    package func revokeToken(_ token: String) async throws -> Int {
        let digest = SecretToken.digest(token)
        return try await store.write { tx in
            guard let live = try await tx.webAuthToken(digest: digest, now: 0) else { return 0 }
            return try await tx.revokeWebAuthSession(live.token.session)
        }
    }

    /// Registers a server-to-server public key (PEM, P-256) for a container; returns its key ID.
    package func addKey(container: String, publicKeyPEM: String) async throws -> String {
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
            guard try await tx.containerExists(container) else {
                throw UbiquityError(.notFound, "no container \(container); add it with `ubiq admin container add \(container)`")
            }
            try await tx.addServerKey(container: container, keyID: keyID, publicKeyPEM: pem, createdAt: RecordsAdmin.now)
        }
        return keyID
    }
}
