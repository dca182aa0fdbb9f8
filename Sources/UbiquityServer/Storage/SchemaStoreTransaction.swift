// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// The storage primitives of schemas and security roles, inside one store transaction: each
/// environment's record types, fields, indexes, permissions and named roles, and the members of
/// each named role of a container. Both record stores' transactions conform
/// (`SQLiteTransaction+Schema.swift`, `PostgresTransaction+Schema.swift`); the tables come from
/// the `v6-schema` migration.
package protocol SchemaStoreTransaction {
    /// One record type of an environment's schema, or nil when it has no such type.
    func recordType(container: String, environment: CloudKitEnvironment, name: String) async throws -> RecordTypeSchema?
    /// The whole schema of an environment (empty when nothing was ever saved).
    func schema(container: String, environment: CloudKitEnvironment) async throws -> ContainerSchema
    /// Serializes changes of the container's schemas until the transaction ends (PostgreSQL: a
    /// transaction-scoped advisory lock; SQLite has one writer already). Every admin change of
    /// a schema takes it before reading, so two deploys (or a deploy and an import) never
    /// interleave their deletes and inserts.
    func lockSchemas(container: String) async throws
    /// Replaces the whole schema of an environment.
    func replaceSchema(_ schema: ContainerSchema, container: String, environment: CloudKitEnvironment) async throws
    /// Adds a record type when missing (with `type.permissions`) and those of `type.fields` it
    /// lacks; existing fields, indexes and permissions are kept.
    func addToSchema(_ type: RecordTypeSchema, container: String, environment: CloudKitEnvironment) async throws
    /// Replaces the type, index flags and guess of an existing field (development's just-in-time
    /// schema settling a guessed type: ``SchemaField/settled(as:)``).
    func updateField(_ field: SchemaField, recordType: String, container: String, environment: CloudKitEnvironment) async throws
    /// The named roles the user is a member of in the container.
    func roles(container: String, userRecordName: String) async throws -> Set<String>
    /// ``recordType(container:environment:name:)`` and, for `userRecordName`, the user's
    /// ``roles(container:userRecordName:)``, in one round trip where the store can (the first
    /// read of a public database's query or lookup needs both).
    func recordType(container: String, environment: CloudKitEnvironment, name: String,
                    rolesOf userRecordName: String?) async throws -> (type: RecordTypeSchema?, roles: Set<String>?)
    /// The members (user record names) of each named role of the container that has any.
    func roleMembers(container: String) async throws -> [String: Set<String>]
    /// Adds (`member: true`) or removes a user from a named role of the container.
    func setRoleMember(_ member: Bool, container: String, role: String, userRecordName: String) async throws
    /// Deletes every database of an environment of the container (zones, records, change logs),
    /// and its subscriptions and notifications: `schema reset` of development.
    func deleteData(container: String, environment: CloudKitEnvironment) async throws
}

extension SchemaStoreTransaction {
    /// The two reads one after the other (a store whose reads cost no round trips).
    package func recordType(container: String, environment: CloudKitEnvironment, name: String,
                            rolesOf userRecordName: String?) async throws -> (type: RecordTypeSchema?, roles: Set<String>?) {
        let type = try await recordType(container: container, environment: environment, name: name)
        guard let userRecordName else { return (type, nil) }
        return (type, try await roles(container: container, userRecordName: userRecordName))
    }
}

extension RecordStoreTransaction {
    /// The transaction's schema primitives (both stores have them).
    package func schemas() throws -> any SchemaStoreTransaction {
        guard let schemas = self as? any SchemaStoreTransaction else {
            throw UbiquityError(.unsupported, "this record store does not keep schemas")
        }
        return schemas
    }

    /// The field types recorded for a record type (`field` → wire type tag).
    package func fieldTypes(container: String, environment: CloudKitEnvironment, recordType: String) async throws -> [String: String] {
        try await schemas().recordType(container: container, environment: environment, name: recordType)?.fields.mapValues(\.type) ?? [:]
    }

    /// Records field types for a record type as development's just-in-time schema does (existing
    /// entries are kept; a new type gets CloudKit's default permissions).
    package func addFieldTypes(container: String, environment: CloudKitEnvironment, recordType: String, types: [String: String]) async throws {
        let fields = Dictionary(uniqueKeysWithValues: types.map { ($0.key, SchemaField.justInTime(name: $0.key, type: $0.value)) })
        try await schemas().addToSchema(RecordTypeSchema(name: recordType, fields: fields), container: container, environment: environment)
    }
}
