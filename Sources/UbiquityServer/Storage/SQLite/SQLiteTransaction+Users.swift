// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// Users and discovery in SQLite (the name columns of `accounts` and the `user_identities` table
/// of the `v5-users` migration).
extension SQLiteTransaction: UserStoreTransaction {
    static let identityColumns = """
        accounts.id, accounts.name, accounts.email, accounts.password_hash, accounts.created_at,
        accounts.given_name, accounts.family_name, accounts.middle_name, accounts.nickname, accounts.name_prefix, accounts.name_suffix,
        user_identities.container, user_identities.user_record_name, user_identities.discoverable
        """

    static func components(_ row: Row) -> StoredNameComponents {
        StoredNameComponents(givenName: row["given_name"], familyName: row["family_name"], middleName: row["middle_name"],
                             nickname: row["nickname"], namePrefix: row["name_prefix"], nameSuffix: row["name_suffix"])
    }

    static func identity(_ row: Row) -> StoredUserIdentity {
        StoredUserIdentity(
            account: StoredAccount(id: row["id"], name: row["name"], email: row["email"], passwordHash: row["password_hash"], createdAt: row["created_at"]),
            container: row["container"], userRecordName: row["user_record_name"], discoverable: row["discoverable"],
            nameComponents: components(row))
    }

    func nameComponents(accountID: Int64) throws -> StoredNameComponents {
        try Row.fetchOne(db, sql: "SELECT given_name, family_name, middle_name, nickname, name_prefix, name_suffix FROM accounts WHERE id = ?",
                         arguments: [accountID]).map(Self.components) ?? StoredNameComponents()
    }

    func setNameComponents(_ components: StoredNameComponents, accountID: Int64) throws {
        try db.execute(sql: """
            UPDATE accounts SET given_name = ?, family_name = ?, middle_name = ?, nickname = ?, name_prefix = ?, name_suffix = ? WHERE id = ?
            """, arguments: [components.givenName, components.familyName, components.middleName, components.nickname,
                             components.namePrefix, components.nameSuffix, accountID])
    }

    func setEmail(_ email: String?, accountID: Int64) throws {
        if let email, try Bool.fetchOne(db, sql: "SELECT 1 FROM accounts WHERE lower(email) = ? AND id <> ?",
                                        arguments: [email.lowercased(), accountID]) ?? false {
            throw UbiquityError(.alreadyExists, "another account has the e-mail \(email)")
        }
        try db.execute(sql: "UPDATE accounts SET email = ? WHERE id = ?", arguments: [email, accountID])
    }

    func noteUserIdentity(accountID: Int64, container: String, userRecordName: String, createdAt: Int64) throws -> StoredUserIdentity {
        try db.execute(sql: """
            INSERT INTO user_identities (account, container, user_record_name, discoverable, created_at) VALUES (?, ?, ?, 0, ?) ON CONFLICT DO NOTHING
            """, arguments: [accountID, container, userRecordName, createdAt])
        guard let identity = try userIdentity(container: container, accountID: accountID) else {
            throw UbiquityError(.notFound, "no account has the id \(accountID)")
        }
        return identity
    }

    func setDiscoverable(_ discoverable: Bool, accountID: Int64, container: String, userRecordName: String, createdAt: Int64) throws {
        try db.execute(sql: """
            INSERT INTO user_identities (account, container, user_record_name, discoverable, created_at) VALUES (?, ?, ?, ?, ?)
            ON CONFLICT (account, container) DO UPDATE SET discoverable = excluded.discoverable
            """, arguments: [accountID, container, userRecordName, discoverable, createdAt])
    }

    func userIdentity(container: String, accountID: Int64) throws -> StoredUserIdentity? {
        try Row.fetchOne(db, sql: """
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = ? AND user_identities.account = ?
            """, arguments: [container, accountID]).map(Self.identity)
    }

    func userIdentities(container: String, userRecordNames: [String]) throws -> [StoredUserIdentity] {
        guard !userRecordNames.isEmpty else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = ? AND user_identities.user_record_name IN (\(databaseQuestionMarks(count: userRecordNames.count)))
            """, arguments: StatementArguments([container] + userRecordNames)).map(Self.identity)
    }

    func userIdentities(container: String, emails: [String]) throws -> [StoredUserIdentity] {
        guard !emails.isEmpty else { return [] }
        return try Row.fetchAll(db, sql: """
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = ? AND lower(accounts.email) IN (\(databaseQuestionMarks(count: emails.count)))
            """, arguments: StatementArguments([container] + emails.map { $0.lowercased() })).map(Self.identity)
    }
}
