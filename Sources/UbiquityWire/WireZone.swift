// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// A zone ID dictionary: `{"zoneName": "…", "ownerRecordName": "…"}`.
package struct WireZoneID: Sendable, Hashable, WireReadable {
    /// The default zone's name.
    package static let defaultZoneName = "_defaultZone"
    /// The zone's name, unique per database.
    package var zoneName: String
    /// The owner's user record name; nil means the caller.
    package var ownerRecordName: String?

    /// Makes a zone ID.
    package init(zoneName: String, ownerRecordName: String? = nil) {
        self.zoneName = zoneName
        self.ownerRecordName = ownerRecordName
    }

    /// The default zone.
    package static var `default`: WireZoneID { WireZoneID(zoneName: defaultZoneName) }

    /// Whether this is the default zone.
    package var isDefault: Bool { zoneName == WireZoneID.defaultZoneName }

    /// Reads a zone ID dictionary (`zoneType` and other extra keys clients echo are accepted).
    package init(reader: WireReader) throws {
        zoneName = try reader.requiredString("zoneName")
        try WireZoneID.validate(name: zoneName, path: reader.path("zoneName"))
        ownerRecordName = try reader.string("ownerRecordName")
    }

    /// Zone names: 1–255 UTF-8 bytes, no control characters, no `/`.
    package static func validate(name: String, path: String) throws {
        guard !name.isEmpty, name.utf8.count <= 255 else { throw WireReader.invalid(path, "a zone name must be 1 to 255 bytes") }
        guard !name.unicodeScalars.contains(where: { $0.value < 0x20 || $0 == "/" }) else {
            throw WireReader.invalid(path, "a zone name must not contain control characters or '/'")
        }
    }

    /// The dictionary, with `zoneType` as the real server sends it.
    package var json: JSONValue {
        var writer = WireWriter()
        write(members: &writer)
        return writer.json
    }

    /// Writes the dictionary's members.
    package func write(members writer: inout some WireMemberWriter) {
        writer.set("zoneName", zoneName)
        writer.set("ownerRecordName", ownerRecordName)
        writer.set("zoneType", isDefault ? "DEFAULT_ZONE" : "REGULAR_CUSTOM_ZONE")
    }
}
