// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// One row of a store's query index: a (field, value) pair of a record. Scalars give one entry,
/// lists one per element; the parent reference is indexed under `___parent`; the other system
/// fields are columns of the records table (`IndexConditionSQL.column(for:)`). Assets and bytes
/// are not indexed ("Data fields aren't searchable", Apple's `CKRecord`; queries on them are
/// refused, ``SchemaField/canBeIndexed(type:)``). Both stores write exactly these rows, so
/// `IndexCondition`s mean the same on both.
package struct RecordIndexEntry: Sendable, Hashable {
    /// Longest indexed text, in UTF-8 bytes (longer text is cut; the engine's exact filter runs after).
    package static let maximumTextBytes = 256
    /// Numbers below 2⁵³ in magnitude are exact as doubles (integers past it compare as doubles
    /// with other kinds of numbers): indexes decide only about numbers under this.
    package static let exactNumberLimit = 9_007_199_254_740_992.0
    /// The separator between zone name and record name in an indexed reference.
    package static let referenceSeparator = "\u{1F}"

    package var field: String
    package var number: Double?
    package var text: String?
    package var latitude: Double?
    package var longitude: Double?

    /// Makes an entry.
    package init(field: String, number: Double? = nil, text: String? = nil, latitude: Double? = nil, longitude: Double? = nil) {
        self.field = field
        self.number = number
        self.text = text
        self.latitude = latitude
        self.longitude = longitude
    }

    /// The indexed text of a reference: `zone␟name`.
    package static func referenceKey(zoneName: String, recordName: String) -> String {
        zoneName + referenceSeparator + recordName
    }

    /// Text cut to `maximumTextBytes` on a character boundary.
    package static func indexedText(_ text: String) -> String {
        guard text.utf8.count > maximumTextBytes else { return text }
        var result = ""
        var bytes = 0
        for character in text {
            let size = character.utf8.count
            if bytes + size > maximumTextBytes { break }
            result.append(character)
            bytes += size
        }
        return result
    }

    /// The `___` names of the system fields that are columns of the records table, not index rows.
    package static let columnSystemFields: [String] = [
        WireSystemField.recordName, .createdTimestamp, .modifiedTimestamp, .createdUserRecordName, .modifiedUserRecordName,
    ].map(\.indexName)

    /// The entries of a live record in the zone named `zoneName`.
    package static func entries(for record: StoredRecord, zoneName: String) -> [RecordIndexEntry] {
        var entries: [RecordIndexEntry] = []
        entries.reserveCapacity(record.fields.count + 1)
        if let parent = record.parent {
            entries.append(RecordIndexEntry(field: WireSystemField.parent.indexName, text: referenceKey(zoneName: zoneName, recordName: parent)))
        }
        for (name, value) in record.fields {
            for element in value.elements {
                if let entry = entry(field: name, value: element, zoneName: zoneName) { entries.append(entry) }
            }
        }
        return entries
    }

    /// The entry of one scalar value, or nil for values that are not indexed (assets, bytes).
    package static func entry(field: String, value: WireFieldValue, zoneName: String) -> RecordIndexEntry? {
        switch value {
        case .string(let text): return RecordIndexEntry(field: field, text: indexedText(text))
        case .int64(let number): return RecordIndexEntry(field: field, number: Double(number))
        case .double(let number): return RecordIndexEntry(field: field, number: number)
        case .timestamp(let millis): return RecordIndexEntry(field: field, number: Double(millis))
        case .reference(let reference):
            return RecordIndexEntry(field: field, text: indexedText(referenceKey(zoneName: reference.zoneID?.zoneName ?? zoneName, recordName: reference.recordName)))
        case .location(let location): return RecordIndexEntry(field: field, latitude: location.latitude, longitude: location.longitude)
        case .asset, .bytes, .list: return nil
        }
    }
}
