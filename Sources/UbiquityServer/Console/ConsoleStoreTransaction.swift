// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// What the developer Console reads and keeps, inside one store transaction (both record
/// stores conform: `SQLiteTransaction+Console.swift`, `PostgresTransaction+Console.swift`):
/// a container's developers (`container_developers`, migration `v16-container-developers`) and
/// the listings its pages page through.
package protocol ConsoleStoreTransaction {
    /// Makes the account a developer of the container (or no longer one).
    func setDeveloper(_ developer: Bool, container: String, accountID: Int64, at: Int64) async throws
    /// The containers the account develops, by identifier.
    func developerContainers(accountID: Int64) async throws -> [String]
    /// The accounts developing a container, by name.
    func developers(container: String) async throws -> [StoredAccount]
    /// A zone's live records, newest change first: those changed before `sequence` (all when
    /// nil), of `recordType` only when given, at most `limit`.
    func latestRecords(zone: Int64, before sequence: Int64?, recordType: String?, limit: Int) async throws -> [StoredRecord]
    /// The users of a container (accounts that called it), newest first, from `offset`.
    func userIdentities(container: String, offset: Int, limit: Int) async throws -> [StoredUserIdentity]
}

extension RecordStoreTransaction {
    /// This transaction as a Console store transaction, or an error naming the store type.
    package func consoleStore() throws -> any ConsoleStoreTransaction {
        guard let tx = self as? any ConsoleStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store (\(type(of: self))) does not keep the Console's data")
        }
        return tx
    }
}
