// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// Users and discovery in PostgreSQL (the name columns of `accounts` and the `user_identities`
/// table of the `v5-users` migration).
extension PostgresTransaction: UserStoreTransaction {
    static let identityColumns = """
        accounts.id, accounts.name, accounts.email, accounts.password_hash, accounts.created_at,
        accounts.given_name, accounts.family_name, accounts.middle_name, accounts.nickname, accounts.name_prefix, accounts.name_suffix,
        user_identities.container, user_identities.user_record_name, user_identities.discoverable
        """

    static func components(_ row: PostgresRandomAccessRow) throws -> StoredNameComponents {
        StoredNameComponents(givenName: try row.value("given_name"), familyName: try row.value("family_name"),
                             middleName: try row.value("middle_name"), nickname: try row.value("nickname"),
                             namePrefix: try row.value("name_prefix"), nameSuffix: try row.value("name_suffix"))
    }

    static func identity(_ row: PostgresRandomAccessRow) throws -> StoredUserIdentity {
        StoredUserIdentity(
            account: StoredAccount(id: try row.value("id"), name: try row.value("name"), email: try row.value("email"),
                                   passwordHash: try row.value("password_hash"), createdAt: try row.value("created_at")),
            container: try row.value("container"), userRecordName: try row.value("user_record_name"),
            discoverable: try row.value("discoverable"), nameComponents: try components(row))
    }

    func nameComponents(accountID: Int64) async throws -> StoredNameComponents {
        try await session.row("SELECT given_name, family_name, middle_name, nickname, name_prefix, name_suffix FROM accounts WHERE id = $1",
                        [.int(accountID)]).map(Self.components) ?? StoredNameComponents()
    }

    func setNameComponents(_ components: StoredNameComponents, accountID: Int64) async throws {
        try await session.execute("""
            UPDATE accounts SET given_name = $1, family_name = $2, middle_name = $3, nickname = $4, name_prefix = $5, name_suffix = $6 WHERE id = $7
            """, [.text(components.givenName), .text(components.familyName), .text(components.middleName), .text(components.nickname),
                  .text(components.namePrefix), .text(components.nameSuffix), .int(accountID)])
    }

    func setEmail(_ email: String?, accountID: Int64) async throws {
        if let email, try await session.row("SELECT 1 FROM accounts WHERE lower(email) = $1 AND id <> $2", [.text(email.lowercased()), .int(accountID)]) != nil {
            throw UbiquityError(.alreadyExists, "another account has the e-mail \(email)")
        }
        try await session.execute("UPDATE accounts SET email = $1 WHERE id = $2", [.text(email), .int(accountID)])
    }

    func noteUserIdentity(accountID: Int64, container: String, userRecordName: String, createdAt: Int64) async throws -> StoredUserIdentity {
        try await session.execute("""
            INSERT INTO user_identities (account, container, user_record_name, discoverable, created_at) VALUES ($1, $2, $3, FALSE, $4) ON CONFLICT DO NOTHING
            """, [.int(accountID), .text(container), .text(userRecordName), .int(createdAt)])
        guard let identity = try await userIdentity(container: container, accountID: accountID) else {
            throw UbiquityError(.notFound, "no account has the id \(accountID)")
        }
        return identity
    }

    func setDiscoverable(_ discoverable: Bool, accountID: Int64, container: String, userRecordName: String, createdAt: Int64) async throws {
        try await session.execute("""
            INSERT INTO user_identities (account, container, user_record_name, discoverable, created_at) VALUES ($1, $2, $3, $4, $5)
            ON CONFLICT (account, container) DO UPDATE SET discoverable = excluded.discoverable
            """, [.int(accountID), .text(container), .text(userRecordName), .bool(discoverable), .int(createdAt)])
    }

    func userIdentity(container: String, accountID: Int64) async throws -> StoredUserIdentity? {
        try await session.row("""
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = $1 AND user_identities.account = $2
            """, [.text(container), .int(accountID)]).map(Self.identity)
    }

    func userIdentities(container: String, userRecordNames: [String]) async throws -> [StoredUserIdentity] {
        guard !userRecordNames.isEmpty else { return [] }
        return try await session.rows("""
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = $1 AND user_identities.user_record_name = ANY($2)
            """, [.text(container), .texts(userRecordNames)]).map(Self.identity)
    }

    func userIdentities(container: String, emails: [String]) async throws -> [StoredUserIdentity] {
        guard !emails.isEmpty else { return [] }
        return try await session.rows("""
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = $1 AND lower(accounts.email) = ANY($2)
            """, [.text(container), .texts(emails.map { $0.lowercased() })]).map(Self.identity)
    }
}
