// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore

/// The developer Console's data in SQLite (`container_developers` of the
/// `v16-container-developers` migration, and listings of records and users).
extension SQLiteTransaction: ConsoleStoreTransaction {
    func setDeveloper(_ developer: Bool, container: String, accountID: Int64, at: Int64) throws {
        if developer {
            try db.execute(sql: "INSERT INTO container_developers (container, account, added_at) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                           arguments: [container, accountID, at])
        } else {
            try db.execute(sql: "DELETE FROM container_developers WHERE container = ? AND account = ?", arguments: [container, accountID])
        }
    }

    func developerContainers(accountID: Int64) throws -> [String] {
        try String.fetchAll(db, sql: "SELECT container FROM container_developers WHERE account = ? ORDER BY container", arguments: [accountID])
    }

    func developers(container: String) throws -> [StoredAccount] {
        try Row.fetchAll(db, sql: """
            SELECT accounts.* FROM container_developers JOIN accounts ON accounts.id = container_developers.account
            WHERE container_developers.container = ? ORDER BY accounts.name
            """, arguments: [container]).compactMap { account($0) }
    }

    func latestRecords(zone: Int64, before sequence: Int64?, recordType: String?, limit: Int) throws -> [StoredRecord] {
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = ? AND deleted = 0"
        var arguments: [(any DatabaseValueConvertible)?] = [zone]
        if let sequence {
            sql += " AND sequence < ?"
            arguments.append(sequence)
        }
        if let recordType {
            sql += " AND type = ?"
            arguments.append(recordType)
        }
        sql += " ORDER BY sequence DESC LIMIT ?"
        arguments.append(limit)
        return try Row.fetchAll(db.cachedStatement(sql: sql), arguments: StatementArguments(arguments)).map(record)
    }

    func userIdentities(container: String, offset: Int, limit: Int) throws -> [StoredUserIdentity] {
        try Row.fetchAll(db, sql: """
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = ? ORDER BY user_identities.created_at DESC, user_identities.user_record_name LIMIT ? OFFSET ?
            """, arguments: [container, limit, offset]).map(Self.identity)
    }
}
