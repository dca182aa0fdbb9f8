// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// A difference between development's schema and production's, as the Console shows it before
/// a deployment.
package enum SchemaDifference: Sendable, Hashable {
    /// A record type production does not have.
    case addedType(String)
    /// A field (type, field, wire type) production does not have.
    case addedField(type: String, field: String, fieldType: String)
    /// A field whose indexes differ (production's flags, then development's).
    case changedIndexes(type: String, field: String, production: SchemaField.Indexes, development: SchemaField.Indexes)
    /// A record type whose public-database permissions differ.
    case changedPermissions(type: String)
    /// A security role production does not have.
    case addedRole(String)
    /// Something production forbids: the deployment would be refused.
    case refusal(String)

    /// What the Console says of it.
    package var description: String {
        switch self {
        case .addedType(let name): return "adds record type \(name)"
        case .addedField(let type, let field, let fieldType): return "adds field \(type).\(field) (\(ContainerSchema.fileType(fieldType)))"
        case .changedIndexes(let type, let field, let production, let development):
            return "changes the indexes of \(type).\(field) from \(production.description) to \(development.description)"
        case .changedPermissions(let type): return "changes the permissions of \(type)"
        case .addedRole(let role): return "adds security role \(role)"
        case .refusal(let reason): return reason
        }
    }

    /// Whether this blocks the deployment.
    package var isRefusal: Bool { if case .refusal = self { return true } else { return false } }
}

extension SchemaField {
    /// A field's three index flags.
    package struct Indexes: Sendable, Hashable, CustomStringConvertible {
        package var queryable: Bool
        package var sortable: Bool
        package var searchable: Bool

        /// `QUERYABLE SORTABLE`, or `none`.
        package var description: String {
            let names = [(queryable, "QUERYABLE"), (sortable, "SORTABLE"), (searchable, "SEARCHABLE")].filter(\.0).map(\.1)
            return names.isEmpty ? "none" : names.joined(separator: " ")
        }
    }

    /// The field's index flags.
    package var indexes: Indexes { Indexes(queryable: queryable, sortable: sortable, searchable: searchable) }
}

extension ContainerSchema {
    /// What deploying `self` (development) onto `production` would change, in name order, and
    /// what production forbids (``ContainerSchema/deployment(onto:)``'s refusals). Empty when
    /// the two are the same.
    package func differences(from production: ContainerSchema) -> [SchemaDifference] {
        var differences: [SchemaDifference] = roles.subtracting(production.roles).sorted().map { .addedRole($0) }
        for type in recordTypes.values.sorted(by: { $0.name < $1.name }) {
            guard let deployed = production.recordTypes[type.name] else {
                differences.append(.addedType(type.name))
                differences += type.fields.values.sorted { $0.name < $1.name }.map { .addedField(type: type.name, field: $0.name, fieldType: $0.type) }
                continue
            }
            for field in type.fields.values.sorted(by: { $0.name < $1.name }) {
                guard let old = deployed.fields[field.name] else {
                    differences.append(.addedField(type: type.name, field: field.name, fieldType: field.type))
                    continue
                }
                if old.indexes != field.indexes {
                    differences.append(.changedIndexes(type: type.name, field: field.name, production: old.indexes, development: field.indexes))
                }
            }
            if deployed.permissions != type.permissions { differences.append(.changedPermissions(type: type.name)) }
        }
        return differences + deployment(onto: production).refusals.map { .refusal($0) }
    }
}
