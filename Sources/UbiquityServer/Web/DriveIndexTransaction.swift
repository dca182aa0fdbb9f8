// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// One row of the Drive's index of a user's synced folder (`drive_items`, migration
/// `v15-drive-index`): what a folder's page and a name search show, kept by ``DriveIndexer`` in
/// the transaction of every change to the documents zone.
package struct DriveIndexRow: Sendable, Hashable {
    /// The private database (`databases.id`).
    package var database: Int64
    /// The item's record name.
    package var recordName: String
    /// The folder it is in (`""` for the top).
    package var parent: String
    /// Its name.
    package var name: String
    /// File, folder or link.
    package var kind: String
    /// Size in bytes.
    package var size: Int64
    /// Modification time (milliseconds since 1970).
    package var modified: Int64

    /// Makes a row.
    package init(database: Int64, recordName: String, parent: String, name: String, kind: String, size: Int64, modified: Int64) {
        self.database = database
        self.recordName = recordName
        self.parent = parent
        self.name = name
        self.kind = kind
        self.size = size
        self.modified = modified
    }

    /// The path relative to the synced folder.
    package var path: String { parent.isEmpty ? name : parent + "/" + name }
}

/// The Drive's index, inside one store transaction (both record stores conform:
/// `SQLiteTransaction+DriveIndex.swift`, `PostgresTransaction+DriveIndex.swift`). Rows sort with
/// folders first, then by the lower-cased name.
package protocol DriveIndexTransaction {
    /// Inserts or replaces rows (by database and record name).
    func putDriveRows(_ rows: [DriveIndexRow]) async throws
    /// Deletes rows by record name.
    func deleteDriveRows(database: Int64, recordNames: [String]) async throws
    /// Deletes every row of a database (its documents zone was deleted).
    func deleteDriveRows(database: Int64) async throws
    /// A folder's rows in page order, `limit` from `offset`, and how many it holds.
    func driveFolder(database: Int64, parent: String, offset: Int, limit: Int) async throws -> (rows: [DriveIndexRow], total: Int)
    /// Rows whose name contains `text` (any case), in page order, at most `limit`.
    func driveSearch(database: Int64, text: String, limit: Int) async throws -> [DriveIndexRow]
}

extension RecordStoreTransaction {
    /// This transaction as a Drive index transaction, or an error naming the store type.
    package func driveIndex() throws -> any DriveIndexTransaction {
        guard let tx = self as? any DriveIndexTransaction else {
            throw UbiquityError(.unsupported, "this record store (\(type(of: self))) does not keep the Drive's index")
        }
        return tx
    }
}
