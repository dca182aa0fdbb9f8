// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// The fields whose stored values may carry a tag other than the schema's: fields whose type
/// was guessed from values sent without `type` (``SchemaField/guess``), then settled or widened.
/// Records are answered with the schema's type: a value stored as INT64 in a field since settled
/// as TIMESTAMP is answered as TIMESTAMP (the same JSON number); one that the schema's type
/// cannot read (a STRING that is not Base64 in a BYTES field) is answered as stored.
struct GuessedFields: Sendable {
    /// Record type → field → the schema's type tag, for the fields with a guess only.
    private var byType: [String: [String: WireFieldType]] = [:]

    /// None.
    static let none = GuessedFields()

    /// The guessed fields of one record type's schema (none without a schema).
    init(_ type: RecordTypeSchema?) {
        guard let type else { return }
        let guessed = type.fields.values.filter { $0.guess != nil }
            .reduce(into: [String: WireFieldType]()) { fields, field in fields[field.name] = WireFieldType(tag: field.type) }
        if !guessed.isEmpty { byType[type.name] = guessed }
    }

    private init() {}

    /// The guessed fields of `recordTypes` in the environment of `key`.
    static func of(_ recordTypes: some Sequence<String>, key: DatabaseKey, tx: any RecordStoreTransaction) async throws -> GuessedFields {
        let schemas = try tx.schemas()
        return try await of(recordTypes) { try await schemas.recordType(container: key.container, environment: key.environment, name: $0) }
    }

    /// ``of(_:key:tx:)`` with the types `access` has read already (a lookup checked its caller's
    /// permissions on them), reading the others through it.
    static func of(_ recordTypes: some Sequence<String>, access: inout RecordAccess, tx: any RecordStoreTransaction) async throws -> GuessedFields {
        try await of(recordTypes) { try await access.recordType($0, tx: tx) }
    }

    private static func of(_ recordTypes: some Sequence<String>, type: (String) async throws -> RecordTypeSchema?) async throws -> GuessedFields {
        var found = GuessedFields()
        for name in Set(recordTypes) {
            found.byType.merge(GuessedFields(try await type(name)).byType) { first, _ in first }
        }
        return found
    }

    func covers(_ recordType: String) -> Bool { byType[recordType] != nil }

    /// `record` with its guessed fields' values in the schema's types, where they read as them.
    func retyped(_ record: StoredRecord) -> StoredRecord {
        guard let fields = byType[record.recordType], !record.deleted else { return record }
        var retyped = record
        for (name, type) in fields {
            if let value = record.fields[name], value.type != type, let typed = value.retyped(as: type) { retyped.fields[name] = typed }
        }
        return retyped
    }
}
