// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension StoredRecord {
    /// The fields as stored: a JSON object of record field dictionaries (with types).
    package var fieldsJSON: String {
        let object = JSONValue.object(fields.mapValues { $0.fieldJSON() })
        return String(decoding: object.serialized(), as: UTF8.self)
    }

    /// Decodes stored fields JSON.
    package static func decodeFields(_ text: String) throws -> [String: WireFieldValue] {
        let value = try JSONValue.parse(Data(text.utf8), maximumDepth: 16)
        guard let members = value.objectValue else { throw UbiquityError(.protocolError, "stored fields are not a JSON object") }
        var fields: [String: WireFieldValue] = [:]
        for (name, field) in members { fields[name] = try WireFieldValue(fieldJSON: field, path: name) }
        return fields
    }

    /// The record dictionary for a response (`zoneID` given by the caller, who knows the zone).
    package func wireRecord(zoneID: WireZoneID) -> WireRecord {
        var record = WireRecord(recordName: recordName, recordType: deleted ? nil : recordType, recordChangeTag: deleted ? nil : changeTag,
                                fields: deleted ? nil : fields, created: deleted ? nil : created, modified: deleted ? nil : modified,
                                deleted: deleted, zoneID: zoneID, parent: parent)
        record.shortGUID = shortGUID
        return record
    }
}
