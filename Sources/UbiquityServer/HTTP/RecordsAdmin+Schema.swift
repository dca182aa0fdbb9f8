// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// Schemas and environments, as `ubiq admin schema` scripts them: show, export and import a
/// schema, deploy development to production, reset development, change a field's indexes.
extension RecordsAdmin {
    /// Throws `notFound` unless the container exists (inside a transaction).
    static func requireContainer(_ container: String, tx: any RecordStoreTransaction) async throws {
        guard try await tx.containerExists(container) else {
            throw UbiquityError(.notFound, "no container \(container); add it with `ubiq admin container add \(container)`")
        }
    }

    /// The schema of an environment of a container.
    package func schema(container: String, environment: CloudKitEnvironment) async throws -> ContainerSchema {
        try RecordsAdmin.validate(container: container)
        return try await store.read { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            return try await tx.schemas().schema(container: container, environment: environment)
        }
    }

    /// Imports a schema file into development (see `ContainerSchema.init(text:)`): adds its types,
    /// fields and roles, sets its indexes and permissions. Nothing changes when a field's type
    /// would change (`conflict`, listing every one) or the file does not parse (`invalidArgument`).
    /// Returns development's schema after the import.
    @discardableResult
    package func importSchema(container: String, text: String) async throws -> ContainerSchema {
        try RecordsAdmin.validate(container: container)
        let file = try ContainerSchema(text: text)
        return try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            let (merged, refusals) = try await schemas.schema(container: container, environment: .development).importing(file)
            guard refusals.isEmpty else {
                throw UbiquityError(.conflict, "the import changes nothing:\n  " + refusals.joined(separator: "\n  "))
            }
            try await schemas.replaceSchema(merged, container: container, environment: .development)
            _ = try await RecordsAdmin.dropDisallowedQueryIndexes(tx, container: container, environment: .development, schema: merged)
            return merged
        }
    }

    /// What a deployment changed.
    package struct Deployment: Sendable, Hashable {
        /// Record types production did not have.
        package var addedTypes: [String]
        /// Fields (`Type.field`) production did not have.
        package var addedFields: [String]
        /// The production schema now.
        package var schema: ContainerSchema
        /// Query indexes production did not have (`Item(=cat,+rank)`), built before the deployment returns.
        package var addedIndexes: [String] = []
    }

    /// Deploys development's schema (types, fields, indexes, roles and permissions) to
    /// production. Refuses — changing nothing, `conflict` listing every refusal — when production
    /// would lose a type or field or a field would change its type. Development's query indexes
    /// that production's schema allows are added to production and built before it returns.
    package func deploySchema(container: String) async throws -> Deployment {
        try RecordsAdmin.validate(container: container)
        let (deployment, added) = try await store.write { tx -> (Deployment, [StoredQueryIndex]) in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            let development = try await schemas.schema(container: container, environment: .development)
            let production = try await schemas.schema(container: container, environment: .production)
            let (deployed, refusals) = development.deployment(onto: production)
            guard refusals.isEmpty else {
                throw UbiquityError(.conflict, "the deployment changes nothing; production forbids:\n  " + refusals.joined(separator: "\n  "))
            }
            try await schemas.replaceSchema(deployed, container: container, environment: .production)
            var addedTypes: [String] = []
            var addedFields: [String] = []
            for type in deployed.recordTypes.values.sorted(by: { $0.name < $1.name }) {
                guard let old = production.recordTypes[type.name] else {
                    addedTypes.append(type.name)
                    continue
                }
                addedFields += type.fields.keys.filter { old.fields[$0] == nil }.sorted().map { "\(type.name).\($0)" }
            }
            _ = try await RecordsAdmin.dropDisallowedQueryIndexes(tx, container: container, environment: .production, schema: deployed)
            let added = try await RecordsAdmin.deployQueryIndexes(tx, container: container, production: deployed)
            return (Deployment(addedTypes: addedTypes, addedFields: addedFields, schema: deployed, addedIndexes: added.map(\.definition.description)), added)
        }
        for index in added {
            try await QueryIndexBuilder.build(index, store: store)
        }
        return deployment
    }

    /// Resets development as CloudKit Console's "Reset Development Environment": its schema
    /// becomes production's and all its data (every database, zone, record and subscription of
    /// development) is deleted.
    package func resetDevelopment(container: String) async throws {
        try RecordsAdmin.validate(container: container)
        try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            let production = try await schemas.schema(container: container, environment: .production)
            try await schemas.replaceSchema(production, container: container, environment: .development)
            try await schemas.deleteData(container: container, environment: .development)
            _ = try await RecordsAdmin.dropDisallowedQueryIndexes(tx, container: container, environment: .development, schema: production)
        }
    }

    /// Turns a field's indexes on or off (nil leaves one as it is); returns the field.
    /// `searchable` is only for `STRING` and `STRING_LIST` fields.
    @discardableResult
    package func setIndexes(container: String, environment: CloudKitEnvironment, recordType: String, field name: String,
                           queryable: Bool?, sortable: Bool?, searchable: Bool?) async throws -> SchemaField {
        try RecordsAdmin.validate(container: container)
        try RecordTypeSchema.validate(name: recordType)
        try RecordTypeSchema.validate(fieldName: name)
        guard queryable != nil || sortable != nil || searchable != nil else {
            throw UbiquityError(.invalidArgument, "nothing to change: give --queryable, --sortable or --searchable (on or off)")
        }
        return try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            var schema = try await schemas.schema(container: container, environment: environment)
            guard var field = schema.recordTypes[recordType]?.fields[name] else {
                let what = schema.recordTypes[recordType] == nil ? "record type \(recordType)" : "field \(recordType).\(name)"
                throw UbiquityError(.notFound, "the \(environment.rawValue) schema of \(container) has no \(what) (see `ubiq admin schema show \(container) --environment \(environment.rawValue)`)")
            }
            if searchable == true, !SchemaField.canBeSearchable(type: field.type) {
                throw UbiquityError(.invalidArgument, "--searchable on: field \(recordType).\(name) is \(ContainerSchema.fileType(field.type)); only STRING and LIST<STRING> fields can be searchable")
            }
            if queryable == true || sortable == true, !SchemaField.canBeIndexed(type: field.type) {
                throw UbiquityError(.invalidArgument, "--\(queryable == true ? "queryable" : "sortable") on: field \(recordType).\(name) is \(ContainerSchema.fileType(field.type)); bytes and assets cannot be queried or sorted on")
            }
            field.queryable = queryable ?? field.queryable
            field.sortable = sortable ?? field.sortable
            field.searchable = searchable ?? field.searchable
            schema.recordTypes[recordType]?.fields[name] = field
            try await schemas.replaceSchema(schema, container: container, environment: environment)
            _ = try await RecordsAdmin.dropDisallowedQueryIndexes(tx, container: container, environment: environment, schema: schema)
            return field
        }
    }
}
