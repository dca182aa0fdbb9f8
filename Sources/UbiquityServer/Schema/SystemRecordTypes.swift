// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// The record types Ubiquity itself uses, declared here with their fields' types instead of
/// inferred from the first save (issue 24, finding 3): one user's save can never fix a wrong
/// type that every other user's saves would then fail on. A save of a declared type with a field
/// of another type, or a field the type does not have, is refused for that save alone; the
/// schema is not changed by it. These names are reserved in every container.
///
/// `Users` is declared without fields of its own: apps add fields to it, just in time in
/// development as to any type, and in production only by deploy.
enum SystemRecordTypes {
    /// Each declared type's fields and the value types each accepts (the first is the one a
    /// just-in-time schema records).
    static let declared: [String: [String: [String]]] = [
        // SyncRecord (UbiquitySync): the synced folder's items
        "UbiquityItem": [
            "path": ["STRING"], "kind": ["STRING"], "size": ["INT64"], "modified": ["INT64"], "contentHash": ["STRING"],
            "mode": ["INT64"], "target": ["STRING"], "content": ["ASSETID"], "inline": ["BYTES"],
        ],
        // ConflictRecord (UbiquitySync): conflict versions shared between devices
        "UbiquityConflictVersion": [
            "item": ["REFERENCE"], "path": ["STRING"], "device": ["STRING"], "modified": ["INT64"], "size": ["INT64"],
            "contentHash": ["STRING"], "content": ["ASSETID"], "inline": ["BYTES"],
        ],
        // AppContainerRegistry (UbiquitySync): the account's app containers
        "UbiquityAppContainer": ["identifier": ["STRING"], "displayName": ["STRING"]],
        // KeyValueRecord: key-value store entries (KeyValueRules checks the rest)
        KeyValueRecord.recordType: [
            KeyValueRecord.valueField: ["STRING", "BYTES"], KeyValueRecord.modifiedField: ["INT64", "TIMESTAMP"],
        ],
    ]

    /// Whether `recordType` is declared with fixed fields.
    static func isDeclared(_ recordType: String) -> Bool { declared[recordType] != nil }

    /// The types a field of the declared `recordType` accepts; nil for an undeclared field.
    static func accepted(_ recordType: String, field: String) -> [String]? { declared[recordType]?[field] }

    /// Checks the fields of a save of the declared `recordType`; returns the fields to record in
    /// a just-in-time schema (declared name → declared type).
    /// - Throws: `BAD_REQUEST` naming the field, its type and what the type accepts.
    static func check(_ recordType: String, fields: [String: WireFieldValue], path: String) throws -> [String: String] {
        guard let declared = declared[recordType] else { return [:] }
        var types: [String: String] = [:]
        for (name, value) in fields.sorted(by: { $0.key < $1.key }) {
            guard let accepted = declared[name] else {
                let known = declared.keys.sorted().joined(separator: ", ")
                throw WireError(.badRequest, "\(path).record.fields.\(name): \(recordType) is a system record type with the fields \(known); \(name) is not one of them")
            }
            let tag = value.type.description
            if value.type == .list(nil) || !accepted.contains(tag) {
                throw WireError(.badRequest, "\(path).record.fields.\(name): Invalid value, expected type \(accepted.joined(separator: " or ")) (\(recordType) is a system record type)")
            }
            types[name] = accepted[0]
        }
        return types
    }
}
