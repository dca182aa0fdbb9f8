// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Synchronization
import UbiquityCore
import UbiquityWire

/// Read-only share links of the web's Drive: a link to a file or a folder of a user's synced
/// folder that anyone holding it opens without an account, until it expires or its owner revokes
/// it, optionally behind a password. The link's token is stored as its digest only; it follows
/// the item through renames and moves, and opens nothing once the item is deleted.
final class DriveShares: Sendable {
    let store: any RecordStore
    let admin: RecordsAdmin
    /// The server secret unlock cookies are signed with, once read.
    private let unlockSecret = Mutex<String?>(nil)

    init(store: any RecordStore, admin: RecordsAdmin) {
        self.store = store
        self.admin = admin
    }

    /// The longest a link may last, in days.
    static let maximumDays = 365

    /// What opening a link finds.
    struct Opened: Sendable {
        var link: StoredShareLink
        /// The shared item, as it is now.
        var item: DriveItem
    }

    /// Makes a link to the user's item `recordName`, valid `days` days; returns its token.
    func create(recordName: String, days: Int, password: String?, user: DriveUser, item: DriveItem) async throws -> String {
        guard (1...Self.maximumDays).contains(days) else {
            throw DriveRefusal(status: .badRequest, message: "A link lasts from 1 to \(Self.maximumDays) days.")
        }
        let hash = try await admin.hashed(password.flatMap { $0.isEmpty ? nil : $0 })
        let token = SecretToken.generate()
        let key = try DocumentHistory.documentsKey(user.context)
        let now = RecordsAuthenticator.now
        try await store.write { tx in
            let database = try await tx.lockDatabase(key)
            try await tx.shareStore().addShareLink(StoredShareLink(
                digest: SecretToken.digest(token), database: database.id, recordName: recordName, path: item.path, createdAt: now,
                expiresAt: now + Int64(days) * 86_400_000, passwordHash: hash))
        }
        return token
    }

    /// The user's links, newest first.
    func links(of user: DriveUser) async throws -> [StoredShareLink] {
        let key = try DocumentHistory.documentsKey(user.context)
        return try await store.read { tx in
            guard let database = try await tx.database(key) else { return [] }
            return try await tx.shareStore().shareLinks(database: database.id)
        }
    }

    /// Revokes one of the user's links (by digest).
    func revoke(digest: String, user: DriveUser) async throws {
        let key = try DocumentHistory.documentsKey(user.context)
        let revoked = try await store.write { tx -> Bool in
            guard let database = try await tx.database(key) else { return false }
            return try await tx.shareStore().deleteShareLink(database: database.id, digest: digest)
        }
        guard revoked else { throw DriveRefusal(status: .notFound, message: "There is no such link (it may have been revoked already).") }
    }

    /// The link of `token` and its item; a refusal page's reason when it does not open.
    func open(_ token: String) async throws -> Opened {
        let digest = SecretToken.digest(token)
        let found = try await store.read { tx -> (StoredShareLink, StoredRecord?)? in
            guard let link = try await tx.shareStore().shareLink(digest: digest) else { return nil }
            guard let zone = try await tx.zone(database: link.database, name: DocumentItemRecord.zoneName) else { return (link, nil) }
            return (link, try await tx.record(zone: zone.id, name: link.recordName))
        }
        guard let (link, record) = found else {
            throw DriveRefusal(status: .notFound, message: "This link does not exist, or its owner revoked it.")
        }
        guard link.expiresAt > RecordsAuthenticator.now else {
            throw DriveRefusal(status: .gone, message: "This link has expired.")
        }
        guard let record, let item = DriveItem(record) else {
            throw DriveRefusal(status: .notFound, message: "What this link shared is no longer there.")
        }
        return Opened(link: link, item: item)
    }

    /// The items of a shared folder's subfolder `relative` (`""`: the shared folder itself), the
    /// first `limit`.
    func list(_ opened: Opened, relative: String, limit: Int = 1000) async throws -> [DriveIndexRow] {
        let folder = relative.isEmpty ? opened.item.path : opened.item.path + "/" + relative
        return try await store.read { tx in
            try await tx.driveIndex().driveFolder(database: opened.link.database, parent: folder, offset: 0, limit: limit).rows
        }
    }

    /// An item inside what `opened` shares (the shared file itself, or anything under the folder).
    func item(_ recordName: String?, in opened: Opened) async throws -> DriveItem {
        guard let recordName, recordName != opened.item.recordName else { return opened.item }
        let record = try await store.read { tx -> StoredRecord? in
            guard let zone = try await tx.zone(database: opened.link.database, name: DocumentItemRecord.zoneName) else { return nil }
            return try await tx.record(zone: zone.id, name: recordName)
        }
        guard let record, let item = DriveItem(record), item.path.hasPrefix(opened.item.path + "/") else {
            throw DriveRefusal(status: .notFound, message: "This link does not share that.")
        }
        return item
    }

    /// Whether `password` is the link's.
    func check(password: String, for link: StoredShareLink) async throws -> Bool {
        guard let hash = link.passwordHash else { return true }
        let hasher = admin.passwordHasher
        return try await BlockingWork.run { hasher.verify(password, against: hash) }
    }

    /// What the cookie of an unlocked link holds: an HMAC of its digest under a server secret
    /// (the link's token alone does not make it).
    func unlockProof(for link: StoredShareLink) async throws -> String {
        let secret: String
        if let known = unlockSecret.withLock({ $0 }) {
            secret = known
        } else {
            // read (or made) once per process: the store keeps it for every process
            let candidate = Hex.encode(SymmetricKey(size: .bits256).withUnsafeBytes { Array($0) })
            secret = try await store.write { tx in try await tx.serverSecret(name: "share-link-unlock", candidate: candidate, createdAt: RecordsAuthenticator.now) }
            unlockSecret.withLock { $0 = secret }
        }
        return Hex.encode(HMAC<SHA256>.authenticationCode(for: Array(link.digest.utf8), using: SymmetricKey(data: Array(secret.utf8))))
    }
}
