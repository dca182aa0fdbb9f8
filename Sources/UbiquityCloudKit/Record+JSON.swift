// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

extension Record {
    /// Reads records written as CloudKit Web Services record dictionaries: one dictionary, an
    /// array of them, or `{"records": […]}` (what `records/lookup` returns). Field types may be
    /// left out (`{"value": 30}` is INT64); a record without `recordName` gets a UUID; records
    /// without `zoneID` are in `zoneID`. The fields given count as changed (``changedKeys()``),
    /// `null` fields included, so saving sends them; a `recordChangeTag` makes the save an
    /// update of that version. Errors name the path of the mistake (`[1].fields.age.value`).
    public static func fromCloudKitJSON(_ data: Data, zoneID: RecordZone.ID = .default) throws -> [Record] {
        let json: JSONValue
        do {
            json = try JSONValue.parse(data)
        } catch let error as UbiquityError {
            throw CloudKitError(.invalidArguments, error.message, underlying: error)
        }
        let items: [(JSONValue, String)]
        switch json {
        case .array(let elements): items = elements.enumerated().map { ($1, "[\($0)]") }
        case .object(let members) where members["records"]?.arrayValue != nil && members["recordType"] == nil:
            items = members["records"]!.arrayValue!.enumerated().map { ($1, "records[\($0)]") }
        default: items = [(json, "")]
        }
        return try items.map { element, path in
            do {
                var wire = try WireRecord(json: element, path: path)
                if wire.recordName.isEmpty { wire.recordName = UUID().uuidString }
                guard wire.recordType != nil else {
                    throw WireReader.missing(path.isEmpty ? "recordType" : "\(path).recordType", "a record type")
                }
                var record = Record(wire: wire, zone: wire.zoneID == nil ? zoneID : nil)
                record.changed = Set(wire.fields?.keys.map { $0 } ?? []).union(wire.nullFields)
                return record
            } catch let error as UbiquityError {
                throw CloudKitError(.invalidArguments, error.message, underlying: error)
            }
        }
    }

    /// The record dictionary as CloudKit Web Services writes it (compact JSON, keys sorted):
    /// `recordName`, `recordType`, `recordChangeTag`, typed `fields`, `created`, `modified`,
    /// `zoneID`, `parent`.
    public func cloudKitJSON() -> String {
        var fields: [String: WireFieldValue] = [:]
        for (key, value) in values {
            if let wire = try? value.wire(in: recordID.zoneID, key: key, listType: listTypes[key]) { fields[key] = wire }
        }
        let created = creationDate.map { WireRecordStamp(timestamp: RecordValue.milliseconds($0), userRecordName: creatorUserRecordID?.recordName ?? "") }
        let modified = modificationDate.map {
            WireRecordStamp(timestamp: RecordValue.milliseconds($0), userRecordName: lastModifiedUserRecordID?.recordName ?? "")
        }
        let wire = WireRecord(recordName: recordID.recordName, recordType: recordType, recordChangeTag: recordChangeTag, fields: fields,
                              created: created, modified: modified, zoneID: recordID.zoneID.wire, parent: parent?.recordID.recordName)
        return String(decoding: wire.json().serialized(), as: UTF8.self)
    }
}

extension RecordZone {
    /// The zone dictionary as CloudKit Web Services writes it (`zoneID`, `syncToken`, `atomic`).
    public func cloudKitJSON() -> String {
        var writer = WireWriter()
        writer.set("zoneID", zoneID.wire.json)
        writer.set("syncToken", currentServerChangeToken?.rawValue)
        writer.set("atomic", capabilities.contains(.atomic))
        return String(decoding: writer.json.serialized(), as: UTF8.self)
    }
}

extension Record.ID {
    /// A tombstone dictionary as change feeds write it: `{"recordName", "deleted": true, "zoneID"}`
    /// (with `recordType` when known).
    public func cloudKitTombstoneJSON(recordType: Record.RecordType? = nil) -> String {
        var writer = WireWriter()
        writer.set("recordName", recordName)
        writer.set("recordType", recordType)
        writer.set("deleted", true)
        writer.set("zoneID", zoneID.wire.json)
        return String(decoding: writer.json.serialized(), as: UTF8.self)
    }
}
