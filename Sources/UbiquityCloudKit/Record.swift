// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// A record (`CKRecord`): a typed dictionary of fields with an identity and the server's
/// bookkeeping. A value type: copies are independent. The record remembers which keys were
/// set since it was made or fetched (``changedKeys()``), which is what
/// ``ModifyRecordsOperation/RecordSavePolicy/ifServerRecordUnchanged`` and
/// ``ModifyRecordsOperation/RecordSavePolicy/changedKeys`` send.
///
/// ```swift
/// var artist = Record(recordType: "Artist")
/// artist["name"] = "Mei Chen"
/// artist["born"] = Date(timeIntervalSince1970: 0)
/// artist = try await database.save(artist)
/// let name: String? = artist["name"]
/// ```
public struct Record: Sendable, Hashable, CustomStringConvertible {
    /// A record type name (`CKRecord.RecordType`).
    public typealias RecordType = String
    /// A field name (`CKRecord.FieldKey`).
    public typealias FieldKey = String

    /// The record's identity.
    public let recordID: ID
    /// The record's type.
    public let recordType: RecordType
    /// The server's version tag of the record; nil until it is saved or when fetched without it.
    public internal(set) var recordChangeTag: String?
    /// When the record was first saved.
    public internal(set) var creationDate: Date?
    /// When the record was last saved.
    public internal(set) var modificationDate: Date?
    /// The user who created the record (a user record ID in the default zone).
    public internal(set) var creatorUserRecordID: ID?
    /// The user who last saved the record.
    public internal(set) var lastModifiedUserRecordID: ID?
    /// The parent record, for sharing hierarchies (only the name travels: the parent is in the
    /// same zone).
    public var parent: Reference?

    var values: [FieldKey: RecordValue] = [:]
    var changed: Set<FieldKey> = []
    /// The element types of lists as fetched, so an emptied list keeps its type.
    var listTypes: [FieldKey: WireFieldType.Scalar] = [:]

    /// A new record of `recordType`; the ID defaults to a new UUID in the default zone.
    public init(recordType: RecordType, recordID: ID = ID()) {
        self.recordType = recordType
        self.recordID = recordID
    }

    /// A new record of `recordType` with a UUID name in `zoneID`.
    public init(recordType: RecordType, zoneID: RecordZone.ID) {
        self.init(recordType: recordType, recordID: ID(zoneID: zoneID))
    }

    /// The value of a field, or nil; setting nil removes the field (saving then clears it on
    /// the server). Setting marks the key changed.
    public subscript(key: FieldKey) -> RecordValue? {
        get { values[key] }
        set {
            values[key] = newValue
            changed.insert(key)
        }
    }

    /// The value of a field as a Swift type: `let name: String? = record["name"]`; setting
    /// converts (`record["age"] = age`).
    public subscript<T: RecordValueProtocol>(key: FieldKey) -> T? {
        get { values[key].flatMap { T(recordValue: $0) } }
        set { self[key] = newValue?.recordValue }
    }

    /// The value of a field (`object(forKey:)`).
    public func object(forKey key: FieldKey) -> RecordValue? { values[key] }

    /// Sets or removes a field (`setObject(_:forKey:)`).
    public mutating func setObject(_ value: (any RecordValueProtocol)?, forKey key: FieldKey) {
        self[key] = value?.recordValue
    }

    /// Removes a field (saving clears it on the server).
    public mutating func removeValue(forKey key: FieldKey) { self[key] = nil }

    /// The keys that have values, sorted.
    public func allKeys() -> [FieldKey] { values.keys.sorted() }

    /// The keys set (or removed) since the record was made or last fetched, sorted.
    public func changedKeys() -> [FieldKey] { changed.sorted() }

    /// Every field, as a dictionary.
    public var fields: [FieldKey: RecordValue] { values }

    /// `Record(Artist "name" …)`.
    public var description: String {
        var text = "Record(\(recordType) \(recordID)"
        if let recordChangeTag { text += " tag \(recordChangeTag)" }
        for key in allKeys() { text += " \(key)=\(values[key]!)" }
        return text + ")"
    }
}

// MARK: Wire conversion

extension Record {
    /// A record from a record dictionary. `zone` is the zone the caller asked about (kept
    /// when the server names the same zone), nil to use the zone the server names.
    init(wire: WireRecord, zone: RecordZone.ID?) {
        let zoneID = zone?.matching(wire.zoneID) ?? wire.zoneID.map(RecordZone.ID.init(wire:)) ?? .default
        self.init(recordType: wire.recordType ?? "", recordID: ID(recordName: wire.recordName, zoneID: zoneID))
        recordChangeTag = wire.recordChangeTag
        if let created = wire.created {
            creationDate = RecordValue.date(milliseconds: created.timestamp)
            if !created.userRecordName.isEmpty { creatorUserRecordID = ID(recordName: created.userRecordName) }
        }
        if let modified = wire.modified {
            modificationDate = RecordValue.date(milliseconds: modified.timestamp)
            if !modified.userRecordName.isEmpty { lastModifiedUserRecordID = ID(recordName: modified.userRecordName) }
        }
        for (key, value) in wire.fields ?? [:] {
            values[key] = RecordValue(wire: value, zone: zoneID)
            if case .list(let element?, _) = value { listTypes[key] = element }
        }
        parent = wire.parent.map { Reference(recordID: ID(recordName: $0, zoneID: zoneID), action: .none) }
        changed = []
    }

    /// The record dictionary with the fields `keys` (all when nil); keys without a value are
    /// sent as `null` (clearing them). Field names are checked here so a bad name is reported
    /// before anything is sent.
    func wire(keys: [FieldKey]?, includeChangeTag: Bool) throws -> WireRecord {
        var fields: [String: WireFieldValue] = [:]
        var nulls: Set<String> = []
        for key in keys ?? Array(Set(values.keys).union(changed)) {
            do {
                try WireRecord.validate(fieldName: key, path: "field '\(key)'")
            } catch let error as UbiquityError {
                throw CloudKitError(.invalidArguments, "record \(recordID.recordName): \(error.message)")
            }
            if let value = values[key] {
                fields[key] = try value.wire(in: recordID.zoneID, key: key, listType: listTypes[key])
            } else {
                nulls.insert(key)
            }
        }
        var record = WireRecord(recordName: recordID.recordName, recordType: recordType.isEmpty ? nil : recordType,
                                recordChangeTag: includeChangeTag ? recordChangeTag : nil, fields: fields,
                                parent: parent?.recordID.recordName)
        record.nullFields = nulls
        return record
    }
}
