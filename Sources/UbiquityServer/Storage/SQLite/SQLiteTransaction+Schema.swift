// SPDX-License-Identifier: Apache-2.0
import Foundation
import GRDB
import UbiquityCore
import UbiquityWire

/// Schemas and security roles in SQLite (`schema_types`, `schema_fields`, `schema_permissions`,
/// `schema_roles` and `role_members` of the `v6-schema` migration).
extension SQLiteTransaction: SchemaStoreTransaction {
    func recordType(container: String, environment: CloudKitEnvironment, name: String) throws -> RecordTypeSchema? {
        let arguments: StatementArguments = [container, environment.rawValue, name]
        guard try Bool.fetchOne(db.cachedStatement(sql: "SELECT 1 FROM schema_types WHERE container = ? AND environment = ? AND record_type = ?"),
                                arguments: arguments) ?? false else { return nil }
        var type = RecordTypeSchema(name: name, permissions: [:])
        for row in try Row.fetchAll(db.cachedStatement(sql: """
            SELECT field, type, queryable, sortable, searchable, guess FROM schema_fields WHERE container = ? AND environment = ? AND record_type = ?
            """), arguments: arguments) {
            let field = Self.field(row)
            type.fields[field.name] = field
        }
        for row in try Row.fetchAll(db.cachedStatement(sql: "SELECT role, permissions FROM schema_permissions WHERE container = ? AND environment = ? AND record_type = ?"),
                                    arguments: arguments) {
            type.permissions[row["role"]] = SchemaPermissions(rawValue: row["permissions"])
        }
        return type
    }

    private static func field(_ row: Row) -> SchemaField {
        SchemaField(name: row["field"], type: row["type"], queryable: row["queryable"], sortable: row["sortable"], searchable: row["searchable"],
                    guess: row["guess"])
    }

    func schema(container: String, environment: CloudKitEnvironment) throws -> ContainerSchema {
        let arguments: StatementArguments = [container, environment.rawValue]
        var schema = ContainerSchema()
        for name in try String.fetchAll(db, sql: "SELECT record_type FROM schema_types WHERE container = ? AND environment = ?", arguments: arguments) {
            schema.recordTypes[name] = RecordTypeSchema(name: name, permissions: [:])
        }
        for row in try Row.fetchAll(db, sql: """
            SELECT record_type, field, type, queryable, sortable, searchable, guess FROM schema_fields WHERE container = ? AND environment = ?
            """, arguments: arguments) {
            let field = Self.field(row)
            schema.recordTypes[row["record_type"], default: RecordTypeSchema(name: row["record_type"], permissions: [:])].fields[field.name] = field
        }
        for row in try Row.fetchAll(db, sql: "SELECT record_type, role, permissions FROM schema_permissions WHERE container = ? AND environment = ?",
                                    arguments: arguments) {
            schema.recordTypes[row["record_type"]]?.permissions[row["role"]] = SchemaPermissions(rawValue: row["permissions"])
        }
        schema.roles = Set(try String.fetchAll(db, sql: "SELECT role FROM schema_roles WHERE container = ? AND environment = ?", arguments: arguments))
        return schema
    }

    func lockSchemas(container: String) throws {}  // one writer at a time already

    func replaceSchema(_ schema: ContainerSchema, container: String, environment: CloudKitEnvironment) throws {
        let arguments: StatementArguments = [container, environment.rawValue]
        for table in ["schema_types", "schema_fields", "schema_permissions", "schema_roles"] {
            try db.execute(sql: "DELETE FROM \(table) WHERE container = ? AND environment = ?", arguments: arguments)
        }
        for type in schema.recordTypes.values { try addToSchema(type, container: container, environment: environment) }
        for role in schema.roles.sorted() {
            try db.execute(sql: "INSERT INTO schema_roles (container, environment, role) VALUES (?, ?, ?)", arguments: [container, environment.rawValue, role])
        }
    }

    func addToSchema(_ type: RecordTypeSchema, container: String, environment: CloudKitEnvironment) throws {
        try db.execute(sql: "INSERT INTO schema_types (container, environment, record_type) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                       arguments: [container, environment.rawValue, type.name])
        let isNew = db.changesCount > 0
        let fields = try db.cachedStatement(sql: """
            INSERT INTO schema_fields (container, environment, record_type, field, type, queryable, sortable, searchable, guess) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?)
            ON CONFLICT DO NOTHING
            """)
        for field in type.fields.values.sorted(by: { $0.name < $1.name }) {
            try fields.execute(arguments: [container, environment.rawValue, type.name, field.name, field.type, field.queryable, field.sortable, field.searchable,
                                           field.guess])
        }
        guard isNew else { return }
        for (role, permissions) in type.permissions where !permissions.isEmpty {
            try db.execute(sql: "INSERT INTO schema_permissions (container, environment, record_type, role, permissions) VALUES (?, ?, ?, ?, ?)",
                           arguments: [container, environment.rawValue, type.name, role, permissions.rawValue])
        }
    }

    func updateField(_ field: SchemaField, recordType: String, container: String, environment: CloudKitEnvironment) throws {
        try db.execute(sql: """
            UPDATE schema_fields SET type = ?, queryable = ?, sortable = ?, searchable = ?, guess = ?
            WHERE container = ? AND environment = ? AND record_type = ? AND field = ?
            """, arguments: [field.type, field.queryable, field.sortable, field.searchable, field.guess, container, environment.rawValue, recordType, field.name])
    }

    func roles(container: String, userRecordName: String) throws -> Set<String> {
        Set(try String.fetchAll(db.cachedStatement(sql: "SELECT role FROM role_members WHERE container = ? AND user_record_name = ?"),
                                arguments: [container, userRecordName]))
    }

    func roleMembers(container: String) throws -> [String: Set<String>] {
        var members: [String: Set<String>] = [:]
        for row in try Row.fetchAll(db, sql: "SELECT role, user_record_name FROM role_members WHERE container = ?", arguments: [container]) {
            members[row["role"], default: []].insert(row["user_record_name"])
        }
        return members
    }

    func setRoleMember(_ member: Bool, container: String, role: String, userRecordName: String) throws {
        if member {
            try db.execute(sql: "INSERT INTO role_members (container, role, user_record_name) VALUES (?, ?, ?) ON CONFLICT DO NOTHING",
                           arguments: [container, role, userRecordName])
        } else {
            try db.execute(sql: "DELETE FROM role_members WHERE container = ? AND role = ? AND user_record_name = ?", arguments: [container, role, userRecordName])
        }
    }

    func deleteData(container: String, environment: CloudKitEnvironment) throws {
        let arguments: StatementArguments = [container, environment.rawValue]
        let databases = "SELECT id FROM databases WHERE container = ? AND environment = ?"
        let zones = "SELECT id FROM zones WHERE database IN (\(databases))"
        try db.execute(sql: "DELETE FROM record_locations WHERE id IN (SELECT rowid FROM record_index WHERE latitude IS NOT NULL AND record IN (SELECT id FROM records WHERE zone IN (\(zones))))", arguments: arguments)
        try db.execute(sql: "DELETE FROM record_index WHERE record IN (SELECT id FROM records WHERE zone IN (\(zones)))", arguments: arguments)
        try db.execute(sql: "DELETE FROM record_keys WHERE record IN (SELECT id FROM records WHERE zone IN (\(zones)))", arguments: arguments)
        try db.execute(sql: "DELETE FROM records WHERE zone IN (\(zones))", arguments: arguments)
        try db.execute(sql: "DELETE FROM zones WHERE database IN (\(databases))", arguments: arguments)
        try db.execute(sql: "DELETE FROM databases WHERE container = ? AND environment = ?", arguments: arguments)
        try db.execute(sql: "DELETE FROM subscriptions WHERE container = ? AND environment = ?", arguments: arguments)
        try db.execute(sql: "UPDATE subscription_generations SET generation = generation + 1 WHERE container = ? AND environment = ?", arguments: arguments)
    }
}
