// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore

/// The developer Console's data in PostgreSQL (`container_developers` of the
/// `v16-container-developers` migration, and listings of records and users).
extension PostgresTransaction: ConsoleStoreTransaction {
    func setDeveloper(_ developer: Bool, container: String, accountID: Int64, at: Int64) async throws {
        if developer {
            try await session.execute("INSERT INTO container_developers (container, account, added_at) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING",
                                      [.text(container), .int(accountID), .int(at)])
        } else {
            try await session.execute("DELETE FROM container_developers WHERE container = $1 AND account = $2", [.text(container), .int(accountID)])
        }
    }

    func developerContainers(accountID: Int64) async throws -> [String] {
        try await session.rows("SELECT container FROM container_developers WHERE account = $1 ORDER BY container", [.int(accountID)])
            .map { try $0.value("container") }
    }

    func developers(container: String) async throws -> [StoredAccount] {
        try await session.rows("""
            SELECT \(Self.accountColumns) FROM container_developers JOIN accounts ON accounts.id = container_developers.account
            WHERE container_developers.container = $1 ORDER BY accounts.name
            """, [.text(container)]).compactMap { try account($0) }
    }

    func latestRecords(zone: Int64, before sequence: Int64?, recordType: String?, limit: Int) async throws -> [StoredRecord] {
        var sql = "SELECT \(Self.recordColumns) FROM records WHERE zone = $1 AND NOT deleted"
        var parameters: [PostgresParameter] = [.int(zone)]
        if let sequence {
            parameters.append(.int(sequence))
            sql += " AND sequence < $\(parameters.count)"
        }
        if let recordType {
            parameters.append(.text(recordType))
            sql += " AND type = $\(parameters.count)"
        }
        parameters.append(Self.limit(limit))
        sql += " ORDER BY sequence DESC LIMIT $\(parameters.count)"
        return try await session.rows(sql, parameters).map(record)
    }

    func userIdentities(container: String, offset: Int, limit: Int) async throws -> [StoredUserIdentity] {
        try await session.rows("""
            SELECT \(Self.identityColumns) FROM user_identities JOIN accounts ON accounts.id = user_identities.account
            WHERE user_identities.container = $1 ORDER BY user_identities.created_at DESC, user_identities.user_record_name LIMIT $2 OFFSET $3
            """, [.text(container), Self.limit(limit), .int(Int64(offset))]).map(Self.identity)
    }
}
