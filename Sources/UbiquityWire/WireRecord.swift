// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// Who changed a record and when: the `created` / `modified` dictionaries.
package struct WireRecordStamp: Sendable, Hashable, WireReadable {
    /// Milliseconds since 1970.
    package var timestamp: Int64
    /// The user record name of the user who made the change.
    package var userRecordName: String
    /// The device the change came from.
    package var deviceID: String?

    /// Makes a stamp.
    package init(timestamp: Int64, userRecordName: String, deviceID: String? = nil) {
        self.timestamp = timestamp
        self.userRecordName = userRecordName
        self.deviceID = deviceID
    }

    /// Reads a stamp dictionary.
    package init(reader: WireReader) throws {
        timestamp = try reader.integer("timestamp") ?? 0
        userRecordName = try reader.string("userRecordName") ?? ""
        deviceID = try reader.string("deviceID")
    }

    /// The dictionary.
    package var json: JSONValue {
        var writer = WireWriter()
        write(members: &writer)
        return writer.json
    }

    /// Writes the dictionary's members.
    package func write(members writer: inout some WireMemberWriter) {
        writer.set("timestamp", timestamp)
        writer.set("userRecordName", userRecordName)
        writer.set("deviceID", deviceID)
    }
}

/// A record dictionary, as sent in requests and returned in responses.
package struct WireRecord: Sendable, Hashable, WireReadable {
    package var recordName: String
    package var recordType: String?
    package var recordChangeTag: String?
    /// The fields; nil when a request leaves them out (or `desiredKeys` excluded them all).
    package var fields: [String: WireFieldValue]?
    /// Request: fields sent as `null` (an update removes them).
    package var nullFields: Set<String> = []
    /// Request: fields sent without a `type` (allowed: the field's type comes from the schema).
    /// Their values were read with a type inferred from the JSON; the server types them from
    /// the schema (``WireFieldValue/retyped(as:)``).
    package var untypedFields: Set<String> = []
    package var created: WireRecordStamp?
    package var modified: WireRecordStamp?
    /// True for a tombstone in a change feed or a successful delete.
    package var deleted: Bool
    package var zoneID: WireZoneID?
    /// The parent record (`{"recordName": …}`), for sharing hierarchies.
    package var parent: String?
    /// Request: ask for a short GUID; response: the short GUID.
    package var createShortGUID: Bool?
    package var shortGUID: String?

    /// Makes a record dictionary.
    package init(recordName: String, recordType: String? = nil, recordChangeTag: String? = nil,
                fields: [String: WireFieldValue]? = nil, created: WireRecordStamp? = nil, modified: WireRecordStamp? = nil,
                deleted: Bool = false, zoneID: WireZoneID? = nil, parent: String? = nil) {
        self.recordName = recordName
        self.recordType = recordType
        self.recordChangeTag = recordChangeTag
        self.fields = fields
        self.created = created
        self.modified = modified
        self.deleted = deleted
        self.zoneID = zoneID
        self.parent = parent
    }

    /// Reads a record dictionary. `recordName` may be absent (a create gets a UUID): it is then "".
    package init(reader: WireReader) throws {
        recordName = try reader.string("recordName") ?? ""
        if recordName.utf8.count > 255 || recordName.unicodeScalars.contains(where: { $0.value < 0x20 }) {
            throw WireReader.invalid(reader.path("recordName"), "a record name must be at most 255 bytes, without control characters")
        }
        recordType = try reader.string("recordType")
        if let recordType {
            guard !recordType.isEmpty, recordType.utf8.count <= 255,
                  recordType.unicodeScalars.allSatisfy({ CharacterSetTests.isTypeNameScalar($0) }) else {
                throw WireReader.invalid(reader.path("recordType"), "a record type is 1 to 255 letters, digits, '_' and '.'")
            }
        }
        recordChangeTag = try reader.string("recordChangeTag")
        if let fieldsReader = try reader.object("fields") {
            var fields: [String: WireFieldValue] = [:]
            for name in fieldsReader.keys {
                try WireRecord.validate(fieldName: name, path: fieldsReader.path(name))
                // `null`, or `{"value": null}`: the field is removed
                guard let field = try fieldsReader.object(name), try !field.isNull("value") else {
                    nullFields.insert(name)
                    continue
                }
                fields[name] = try WireFieldValue(fieldReader: field)
                if try field.isNull("type") { untypedFields.insert(name) }
            }
            self.fields = fields
        }
        created = try reader.object("created").map(WireRecordStamp.init(reader:))
        modified = try reader.object("modified").map(WireRecordStamp.init(reader:))
        deleted = try reader.bool("deleted") ?? false
        zoneID = try reader.object("zoneID").map { try WireZoneID(reader: $0) }
        parent = try reader.object("parent").map { try $0.requiredString("recordName") }
        createShortGUID = try reader.bool("createShortGUID")
        shortGUID = try reader.string("shortGUID")
    }

    /// Field names: letters, digits and `_`, starting with a letter, at most 255 bytes.
    package static func validate(fieldName name: String, path: String) throws {
        guard let first = name.unicodeScalars.first, name.utf8.count <= 255,
              CharacterSetTests.isLetter(first) || first == "_",
              name.unicodeScalars.allSatisfy({ CharacterSetTests.isLetter($0) || CharacterSetTests.isDigit($0) || $0 == "_" }) else {
            throw WireReader.invalid(path, "a field name is 1 to 255 ASCII letters, digits and '_', starting with a letter")
        }
        guard !name.hasPrefix("___") else { throw WireReader.invalid(path, "field names starting with ___ are reserved") }
    }

    /// The dictionary. `desiredKeys` limits the fields written (`[]` writes none, nil all).
    package func json(desiredKeys: [String]? = nil, numbersAsStrings: Bool = false) -> JSONValue {
        var writer = WireWriter()
        write(members: &writer, desiredKeys: desiredKeys, numbersAsStrings: numbersAsStrings)
        return writer.json
    }

    /// Appends the dictionary as JSON text to `out`, without a ``JSONValue`` tree: see
    /// ``write(members:desiredKeys:numbersAsStrings:fieldsText:)``.
    package func write(to out: inout [UInt8], desiredKeys: [String]? = nil, numbersAsStrings: Bool = false, fieldsText: String? = nil) {
        var writer = WireObjectWriter(appendingTo: &out)
        write(members: &writer, desiredKeys: desiredKeys, numbersAsStrings: numbersAsStrings, fieldsText: fieldsText)
        writer.finish(into: &out)
    }

    /// Writes the dictionary's members. `desiredKeys` limits the fields written (`[]` writes none,
    /// nil all); `fieldsText`, the fields already as a JSON object's text (as a store keeps them),
    /// is written as it is in place of ``fields``.
    package func write<Writer: WireMemberWriter>(members writer: inout Writer, desiredKeys: [String]? = nil, numbersAsStrings: Bool = false,
                                                 fieldsText: String? = nil) {
        writer.set("recordName", recordName)
        if deleted {
            writer.set("deleted", true)
            if let zoneID { writer.set("zoneID") { zoneID.write(members: &$0) } }
            return
        }
        writer.set("recordType", recordType)
        writer.set("recordChangeTag", recordChangeTag)
        if let fieldsText {
            writer.set("fields", rawJSON: fieldsText)
        } else if let fields {
            writer.set("fields") { members in
                for (name, value) in fields.sorted(by: { $0.key < $1.key }) where desiredKeys?.contains(name) ?? true {
                    members.set(name, value.fieldJSON(numbersAsStrings: numbersAsStrings))
                }
            }
        }
        writer.set("pluginFields") { _ in }
        if let created { writer.set("created") { created.write(members: &$0) } }
        if let modified { writer.set("modified") { modified.write(members: &$0) } }
        writer.set("deleted", false)
        if let zoneID { writer.set("zoneID") { zoneID.write(members: &$0) } }
        if let parent { writer.set("parent") { $0.set("recordName", parent) } }
        writer.set("shortGUID", shortGUID)
        writer.set("createShortGUID", createShortGUID)
    }
}

/// ASCII character tests for names on the wire.
enum CharacterSetTests {
    static func isLetter(_ scalar: Unicode.Scalar) -> Bool {
        ("a"..."z").contains(scalar) || ("A"..."Z").contains(scalar)
    }
    static func isDigit(_ scalar: Unicode.Scalar) -> Bool { ("0"..."9").contains(scalar) }
    static func isTypeNameScalar(_ scalar: Unicode.Scalar) -> Bool {
        isLetter(scalar) || isDigit(scalar) || scalar == "_" || scalar == "."
    }
}
