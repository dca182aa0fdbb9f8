// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// Appends a record's dictionary to an answer written as bytes (`changes/zone`,
    /// `records/lookup`, `records/query`). With its stored fields text (`fieldsText`), that text is
    /// spliced in as it is when the fields are wanted whole, as stored (no number as a string),
    /// hold no asset and no field whose type was guessed (`guessed`); else the record goes through
    /// its decoded fields (`record.fields` when it has any, decoded and retyped; else decoded here
    /// from `fieldsText`), as every other operation writes records.
    func writeRecord(_ record: StoredRecord, fieldsText: String?, zone: WireZoneID, desiredKeys: [String]?, numbersAsStrings: Bool,
                     guessed: GuessedFields, context: Context, to out: inout [UInt8]) throws {
        guard let fieldsText, !record.deleted, desiredKeys == nil, !numbersAsStrings, !Self.mayHoldAssets(fieldsText),
              !guessed.covers(record.recordType) else {
            var decoded = record
            if let fieldsText, record.fields.isEmpty { decoded = guessed.retyped(Self.decoded(record, fieldsText: fieldsText)) }
            presented(decoded, context: context).wireRecord(zoneID: zone).write(to: &out, desiredKeys: desiredKeys, numbersAsStrings: numbersAsStrings)
            return
        }
        record.wireRecord(zoneID: zone).write(to: &out, fieldsText: fieldsText)
    }

    /// `record` with its fields decoded from their stored text (no fields for text that does
    /// not read: it was written by this server, so that does not happen).
    static func decoded(_ record: StoredRecord, fieldsText: String) -> StoredRecord {
        guard !record.deleted else { return record }
        var decoded = record
        decoded.fields = (try? StoredRecord.decodeFields(fieldsText)) ?? [:]
        return decoded
    }
}
