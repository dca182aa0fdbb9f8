// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

extension ContainerSchema {
    /// The production schema after deploying `self` (development) onto `production`, or the
    /// refusals: production never loses a record type or a field, and a field never changes its
    /// type. Types, fields and roles are added; indexes and permissions become development's.
    package func deployment(onto production: ContainerSchema) -> (schema: ContainerSchema, refusals: [String]) {
        var refusals: [String] = []
        for type in production.recordTypes.values.sorted(by: { $0.name < $1.name }) {
            guard let development = recordTypes[type.name] else {
                refusals.append("record type \(type.name) is in production but not in development: a deployed record type cannot be removed")
                continue
            }
            for field in type.fields.values.sorted(by: { $0.name < $1.name }) {
                guard let new = development.fields[field.name] else {
                    refusals.append("field \(type.name).\(field.name) is in production but not in development: a deployed field cannot be removed")
                    continue
                }
                if new.type != field.type {
                    refusals.append("field \(type.name).\(field.name) is \(ContainerSchema.fileType(field.type)) in production and \(ContainerSchema.fileType(new.type)) in development: a deployed field cannot change its type")
                }
            }
        }
        var deployed = self
        deployed.roles.formUnion(production.roles)
        // production's types are declared by the deploy: no guess is left to settle there
        for name in deployed.recordTypes.keys {
            for field in deployed.recordTypes[name]!.fields.keys { deployed.recordTypes[name]!.fields[field]!.guess = nil }
        }
        return (deployed, refusals)
    }

    /// The schema after importing `file` into it: types, fields and roles of the file are added,
    /// the indexes of its fields and the permissions of its types replace the present ones;
    /// what the file does not mention is kept. Refusals: a field whose type would change.
    package func importing(_ file: ContainerSchema) -> (schema: ContainerSchema, refusals: [String]) {
        var refusals: [String] = []
        var merged = self
        merged.roles.formUnion(file.roles)
        for type in file.recordTypes.values.sorted(by: { $0.name < $1.name }) {
            var target = merged.recordTypes[type.name] ?? RecordTypeSchema(name: type.name, permissions: [:])
            for field in type.fields.values.sorted(by: { $0.name < $1.name }) {
                if let present = target.fields[field.name], present.type != field.type {
                    if var settled = present.settled(as: field.type) {  // a guessed type the file declares
                        settled.queryable = field.queryable
                        settled.sortable = field.sortable
                        settled.searchable = field.searchable
                        target.fields[field.name] = settled
                        continue
                    }
                    refusals.append("field \(type.name).\(field.name) is \(ContainerSchema.fileType(present.type)) in development; the file makes it \(ContainerSchema.fileType(field.type)) (a field cannot change its type; reset development first with `ubiq admin schema reset`)")
                    continue
                }
                target.fields[field.name] = field
            }
            target.permissions = type.permissions
            merged.recordTypes[type.name] = target
        }
        return (merged, refusals)
    }
}
