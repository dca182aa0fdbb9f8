// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// The storage primitives of users and discovery, inside one store transaction: an account's name
/// components and e-mail, and its identity in each container it used (its user record name there
/// and whether it opted in to discovery). Both record stores' transactions conform
/// (`SQLiteTransaction+Users.swift`, `PostgresTransaction+Users.swift`); the tables come from the
/// `v5-users` migration.
package protocol UserStoreTransaction {
    /// The account's name components (all nil when never set).
    func nameComponents(accountID: Int64) async throws -> StoredNameComponents
    /// Replaces the account's name components.
    func setNameComponents(_ components: StoredNameComponents, accountID: Int64) async throws
    /// Changes the account's e-mail (nil removes it); `alreadyExists` when another account has it
    /// (compared case-insensitively).
    func setEmail(_ email: String?, accountID: Int64) async throws
    /// Records that the account has the user record name in the container (no change when it has
    /// a row there already); returns the row.
    func noteUserIdentity(accountID: Int64, container: String, userRecordName: String, createdAt: Int64) async throws -> StoredUserIdentity
    /// Sets whether the account is discoverable in the container (creating its row when missing).
    func setDiscoverable(_ discoverable: Bool, accountID: Int64, container: String, userRecordName: String, createdAt: Int64) async throws
    /// The identity of the account in the container, if it has a row there.
    func userIdentity(container: String, accountID: Int64) async throws -> StoredUserIdentity?
    /// The identities with these user record names in the container (unknown names are absent).
    func userIdentities(container: String, userRecordNames: [String]) async throws -> [StoredUserIdentity]
    /// The identities in the container of the accounts with these e-mail addresses, compared
    /// case-insensitively (unknown addresses are absent).
    func userIdentities(container: String, emails: [String]) async throws -> [StoredUserIdentity]
}

/// A person's name, as `PersonNameComponents` has it (nil parts are unknown).
package struct StoredNameComponents: Sendable, Hashable {
    /// The given (first) name.
    package var givenName: String?
    /// The family (last) name.
    package var familyName: String?
    /// The middle name.
    package var middleName: String?
    /// The nickname.
    package var nickname: String?
    /// A prefix (Dr.).
    package var namePrefix: String?
    /// A suffix (Jr.).
    package var nameSuffix: String?

    /// Makes components.
    package init(givenName: String? = nil, familyName: String? = nil, middleName: String? = nil, nickname: String? = nil,
                namePrefix: String? = nil, nameSuffix: String? = nil) {
        self.givenName = givenName
        self.familyName = familyName
        self.middleName = middleName
        self.nickname = nickname
        self.namePrefix = namePrefix
        self.nameSuffix = nameSuffix
    }

    /// The parts by their CloudKit names (`givenName`, `familyName`, …), in a fixed order.
    package var parts: [(key: String, value: String?)] {
        [("namePrefix", namePrefix), ("givenName", givenName), ("middleName", middleName), ("familyName", familyName),
         ("nameSuffix", nameSuffix), ("nickname", nickname)]
    }
}

/// An account's identity in one container.
package struct StoredUserIdentity: Sendable, Hashable {
    /// The account.
    package var account: StoredAccount
    /// The container.
    package var container: String
    /// `_` + 32 hex digits, the account's user record name in this container.
    package var userRecordName: String
    /// Whether the user opted in to being found by others in this container.
    package var discoverable: Bool
    /// The account's name (returned to others only when `discoverable`).
    package var nameComponents: StoredNameComponents

    /// Makes an identity.
    package init(account: StoredAccount, container: String, userRecordName: String, discoverable: Bool, nameComponents: StoredNameComponents) {
        self.account = account
        self.container = container
        self.userRecordName = userRecordName
        self.discoverable = discoverable
        self.nameComponents = nameComponents
    }
}

extension RecordStoreTransaction {
    /// The transaction's user primitives (both stores have them).
    func users() throws -> any UserStoreTransaction {
        guard let users = self as? any UserStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store does not keep users")
        }
        return users
    }
}
