// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// Security roles of the public database, as `ubiq admin role` scripts them: named roles and
/// their members, and what each role may do with each record type.
extension RecordsAdmin {
    /// The roles of an environment: each named role with its members (user record names), and
    /// each record type's permissions by role.
    package struct RoleSummary: Sendable, Hashable {
        /// Named roles and their members.
        package var members: [String: [String]]
        /// Record type → role → permissions.
        package var permissions: [String: [String: SchemaPermissions]]
    }

    /// Adds a named role to an environment's schema (no error when it exists).
    package func addRole(container: String, role: String, environment: CloudKitEnvironment = .development) async throws {
        try RecordsAdmin.validate(container: container)
        try SecurityRole.validate(name: role)
        try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            var schema = try await schemas.schema(container: container, environment: environment)
            guard schema.roles.insert(role).inserted else { return }
            try await schemas.replaceSchema(schema, container: container, environment: environment)
        }
    }

    /// Adds (`member: true`) or removes a user — an account name, or a user record name
    /// (`_` and 32 hex digits) — to or from a named role. Returns the user record name.
    @discardableResult
    package func setRoleMember(_ member: Bool, container: String, role: String, user: String) async throws -> String {
        try RecordsAdmin.validate(container: container)
        try SecurityRole.validate(name: role)
        let isRecordName = user.count == 33 && user.hasPrefix("_") && user.dropFirst().allSatisfy(\.isHexDigit)
        if !isRecordName { try RecordsAdmin.validate(userName: user) }
        return try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            var defined = false
            for environment in CloudKitEnvironment.allCases where !defined {
                defined = try await schemas.schema(container: container, environment: environment).roles.contains(role)
            }
            guard defined || !member else {
                throw UbiquityError(.notFound, "\(container) has no role \(role); add it with `ubiq admin role add \(container) \(role)`")
            }
            var recordName = user
            if !isRecordName {
                let account = try await RecordsAdmin.account(named: user, in: tx)
                recordName = RecordsCaller.userRecordName(accountID: account.id, container: container)
            }
            try await schemas.setRoleMember(member, container: container, role: role, userRecordName: recordName)
            return recordName
        }
    }

    /// Sets what a role may do with a record type's records in an environment (empty: nothing).
    /// `_world` may only read; a named role must exist in the environment; the type must be in
    /// its schema.
    package func setPermissions(_ permissions: SchemaPermissions, container: String, environment: CloudKitEnvironment,
                               recordType: String, role: String) async throws {
        try RecordsAdmin.validate(container: container)
        try RecordTypeSchema.validate(name: recordType)
        if role.hasPrefix("_") {
            guard SecurityRole.builtIn.contains(role) else {
                throw UbiquityError(.invalidArgument, "role \(role): expected \(SecurityRole.builtIn.joined(separator: ", ")) or a named role")
            }
        } else {
            try SecurityRole.validate(name: role)
        }
        if role == SecurityRole.world, permissions.contains(.create) || permissions.contains(.write) {
            throw UbiquityError(.invalidArgument, "role _world: may only read (anyone with the API token, not signed in); give --read or --none")
        }
        var granted = permissions
        if granted.contains(.write) { granted.insert(.read) }
        let final = granted
        try await store.write { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            try await schemas.lockSchemas(container: container)
            var schema = try await schemas.schema(container: container, environment: environment)
            if !SecurityRole.builtIn.contains(role), !schema.roles.contains(role) {
                throw UbiquityError(.notFound, "the \(environment.rawValue) schema of \(container) has no role \(role); add it with `ubiq admin role add \(container) \(role)`")
            }
            guard schema.recordTypes[recordType] != nil else {
                throw UbiquityError(.notFound, "the \(environment.rawValue) schema of \(container) has no record type \(recordType) (see `ubiq admin schema show \(container) --environment \(environment.rawValue)`)")
            }
            schema.recordTypes[recordType]?.permissions[role] = final.isEmpty ? nil : final
            try await schemas.replaceSchema(schema, container: container, environment: environment)
        }
    }

    /// The roles of an environment of a container.
    package func roles(container: String, environment: CloudKitEnvironment) async throws -> RoleSummary {
        try RecordsAdmin.validate(container: container)
        return try await store.read { tx in
            try await RecordsAdmin.requireContainer(container, tx: tx)
            let schemas = try tx.schemas()
            let schema = try await schemas.schema(container: container, environment: environment)
            let members = try await schemas.roleMembers(container: container)
            var summary = RoleSummary(members: [:], permissions: [:])
            for role in schema.roles { summary.members[role] = (members[role] ?? []).sorted() }
            for type in schema.recordTypes.values { summary.permissions[type.name] = type.permissions }
            return summary
        }
    }
}
