// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// How the Console shows a record's fields and reads a query's filter value: values without
/// I/O (the pages link the references and assets it finds).
enum ConsoleRecordView {
    /// One field of a record, or one element of a list field.
    struct Field: Sendable, Hashable {
        /// The field's name.
        var name: String
        /// Its type as schema files write it (`STRING`, `LIST<INT64>`, `ASSET`).
        var type: String
        /// The value as text (elements of a list, one per line).
        var text: String
        /// The records it refers to (a reference, or a list of references).
        var references: [WireReference]
        /// The assets it holds.
        var assets: [WireAsset]
    }

    /// A record's fields, by name.
    static func fields(of record: StoredRecord) -> [Field] {
        record.fields.keys.sorted().map { name in
            let value = record.fields[name]!
            let elements = value.elements
            return Field(name: name, type: ContainerSchema.fileType(value.type.description),
                         text: elements.map(text).joined(separator: "\n"),
                         references: elements.compactMap { if case .reference(let reference) = $0 { return reference } else { return nil } },
                         assets: elements.compactMap { if case .asset(let asset) = $0 { return asset } else { return nil } })
        }
    }

    /// A scalar value as text: timestamps in ISO 8601, bytes by size and their first bytes in
    /// Base64, assets by size and checksum.
    static func text(_ value: WireFieldValue) -> String {
        switch value {
        case .string(let string): return string
        case .int64(let number): return String(number)
        case .double(let number): return String(number)
        case .timestamp(let milliseconds): return Date(timeIntervalSince1970: milliseconds / 1000).formatted(.iso8601)
        case .bytes(let data):
            let prefix = data.prefix(48).base64EncodedString()
            return "\(data.count) bytes: \(prefix)\(data.count > 48 ? "…" : "")"
        case .reference(let reference):
            return reference.recordName + (reference.zoneID.map { " in \($0.zoneName)" } ?? "")
        case .asset(let asset):
            return "\(asset.size.map { $0.formatted(.byteCount(style: .file)) } ?? "? bytes"), checksum \(asset.fileChecksum ?? "none")"
        case .location(let location):
            return "\(location.latitude), \(location.longitude)"
        case .list(_, let items):
            return items.map(text).joined(separator: ", ")
        }
    }

    /// A filter's field: a system field (`___createTime`) or a field of the type.
    static func filterKey(_ name: String) throws -> WireFieldKey {
        guard name.hasPrefix("___") else { return .field(name) }
        guard let field = WireSystemField(name: name) else {
            throw UbiquityError(.invalidArgument, "there is no system field \(name); expected one of \(WireSystemField.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        return .system(field)
    }

    /// A filter's value typed as the schema types the field (`STRING` when unknown): numbers for
    /// `INT64` and `DOUBLE`, ISO 8601 or milliseconds for `TIMESTAMP`, a record name for a
    /// `REFERENCE` (in `zone`). `invalidArgument` saying what was expected.
    static func filterValue(_ text: String, fieldType: String?, zone: String) throws -> WireFieldValue {
        let scalar = fieldType.map { $0.hasSuffix("_LIST") ? String($0.dropLast(5)) : $0 } ?? "STRING"
        switch scalar {
        case "INT64":
            guard let number = Int64(text.trimmingCharacters(in: .whitespaces)) else {
                throw UbiquityError(.invalidArgument, "the value \(text.debugDescription): expected a whole number (the field is INT64)")
            }
            return .int64(number)
        case "DOUBLE":
            guard let number = Double(text.trimmingCharacters(in: .whitespaces)) else {
                throw UbiquityError(.invalidArgument, "the value \(text.debugDescription): expected a number (the field is DOUBLE)")
            }
            return .double(number)
        case "TIMESTAMP":
            let trimmed = text.trimmingCharacters(in: .whitespaces)
            if let milliseconds = Double(trimmed) { return .timestamp(milliseconds) }
            guard let date = try? Date(trimmed, strategy: .iso8601) else {
                throw UbiquityError(.invalidArgument, "the value \(text.debugDescription): expected a date like 2026-12-06T10:00:00Z or milliseconds since 1970 (the field is TIMESTAMP)")
            }
            return .timestamp((date.timeIntervalSince1970 * 1000).rounded())
        case "REFERENCE":
            return .reference(WireReference(recordName: text, zoneID: WireZoneID(zoneName: zone)))
        default:
            return .string(text)
        }
    }
}
