// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Told of every change the engine commits: record saves and deletions (cascades included) and
/// zone creations and deletions. Subscriptions and push are built on it.
///
/// `changesWillCommit(_:in:)` runs inside the write transaction, after the batch's writes and
/// before its commit, so whatever it writes (notifications) commits or rolls back with the
/// change itself; `changesDidCommit(_:)` runs after the commit, outside the transaction, to wake
/// listeners. A failed atomic batch calls neither.
package protocol RecordChangeObserver: Sendable {
    /// Inside the write transaction; an error thrown here rolls the whole transaction back.
    func changesWillCommit(_ changes: [StoreChange], in tx: any RecordStoreTransaction) async throws
    /// After the commit.
    func changesDidCommit(_ changes: [StoreChange]) async
}

/// One committed change.
package enum StoreChange: Sendable, Hashable {
    /// A record was created, updated or deleted.
    case record(RecordChange)
    /// A zone was created or deleted.
    case zone(ZoneChange)
}

/// A record's change.
package struct RecordChange: Sendable, Hashable {
    /// What happened to the record.
    package enum Kind: String, Sendable, Hashable {
        case created, updated, deleted
    }

    /// The database the record is in.
    package var database: DatabaseKey
    /// Its zone's name.
    package var zoneName: String
    /// What happened.
    package var kind: Kind
    /// The record after the change (a tombstone, without fields, for `.deleted`).
    package var record: StoredRecord
    /// The record before the change (nil for `.created`).
    package var previous: StoredRecord?
    /// Who made the change (user record name; `""` for server-to-server keys).
    package var changedBy: String

    /// Makes a change.
    package init(database: DatabaseKey, zoneName: String, kind: Kind, record: StoredRecord, previous: StoredRecord?, changedBy: String) {
        self.database = database
        self.zoneName = zoneName
        self.kind = kind
        self.record = record
        self.previous = previous
        self.changedBy = changedBy
    }
}

/// A zone's creation or deletion.
package struct ZoneChange: Sendable, Hashable {
    /// The database the zone is in.
    package var database: DatabaseKey
    /// The zone.
    package var zone: StoredZone
    /// Whether it was deleted (else created).
    package var deleted: Bool
    /// Who made the change.
    package var changedBy: String

    /// Makes a change.
    package init(database: DatabaseKey, zone: StoredZone, deleted: Bool, changedBy: String) {
        self.database = database
        self.zone = zone
        self.deleted = deleted
        self.changedBy = changedBy
    }
}
