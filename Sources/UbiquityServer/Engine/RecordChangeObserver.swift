// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Told of every change the engine commits: record saves and deletions (cascades included) and
/// zone creations and deletions. Subscriptions and push are built on it.
///
/// `changesWillCommit(_:in:)` runs inside the write transaction, after the batch's writes and
/// before its commit, so whatever it writes (notifications) commits or rolls back with the
/// change itself; `changesDidCommit(_:)` runs after the commit, outside the transaction, to wake
/// listeners. A failed atomic batch calls neither.
public protocol RecordChangeObserver: Sendable {
    /// Inside the write transaction; an error thrown here rolls the whole transaction back.
    func changesWillCommit(_ changes: [StoreChange], in tx: any RecordStoreTransaction) throws
    /// After the commit.
    func changesDidCommit(_ changes: [StoreChange]) async
}

/// One committed change.
public enum StoreChange: Sendable, Hashable {
    /// A record was created, updated or deleted.
    case record(RecordChange)
    /// A zone was created or deleted.
    case zone(ZoneChange)
}

/// A record's change.
public struct RecordChange: Sendable, Hashable {
    /// What happened to the record.
    public enum Kind: String, Sendable, Hashable {
        case created, updated, deleted
    }

    /// The database the record is in.
    public var database: DatabaseKey
    /// Its zone's name.
    public var zoneName: String
    /// What happened.
    public var kind: Kind
    /// The record after the change (a tombstone, without fields, for `.deleted`).
    public var record: StoredRecord
    /// The record before the change (nil for `.created`).
    public var previous: StoredRecord?
    /// Who made the change (user record name; `""` for server-to-server keys).
    public var changedBy: String

    /// Makes a change.
    public init(database: DatabaseKey, zoneName: String, kind: Kind, record: StoredRecord, previous: StoredRecord?, changedBy: String) {
        self.database = database
        self.zoneName = zoneName
        self.kind = kind
        self.record = record
        self.previous = previous
        self.changedBy = changedBy
    }
}

/// A zone's creation or deletion.
public struct ZoneChange: Sendable, Hashable {
    /// The database the zone is in.
    public var database: DatabaseKey
    /// The zone.
    public var zone: StoredZone
    /// Whether it was deleted (else created).
    public var deleted: Bool
    /// Who made the change.
    public var changedBy: String

    /// Makes a change.
    public init(database: DatabaseKey, zone: StoredZone, deleted: Bool, changedBy: String) {
        self.database = database
        self.zone = zone
        self.deleted = deleted
        self.changedBy = changedBy
    }
}
