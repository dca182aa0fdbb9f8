// SPDX-License-Identifier: Apache-2.0
import Foundation
import PostgresNIO
import UbiquityCore
import UbiquityWire

/// Schemas and security roles in PostgreSQL (`schema_types`, `schema_fields`,
/// `schema_permissions`, `schema_roles` and `role_members` of the `v6-schema` migration).
extension PostgresTransaction: SchemaStoreTransaction {
    /// The type, its fields and its permissions in one round trip: every read of a record type
    /// (a query's, a lookup's) goes through here.
    func recordType(container: String, environment: CloudKitEnvironment, name: String) async throws -> RecordTypeSchema? {
        try await recordType(container: container, environment: environment, name: name, rolesOf: nil).type
    }

    /// The type, its fields, its permissions and the user's roles in one round trip.
    func recordType(container: String, environment: CloudKitEnvironment, name: String,
                    rolesOf userRecordName: String?) async throws -> (type: RecordTypeSchema?, roles: Set<String>?) {
        let parameters: [PostgresParameter] = [.text(container), .text(environment.rawValue), .text(name), .text(userRecordName)]
        return try Self.recordType(name, rows: try await session.rows(RecordType.self, parameters), rolesWanted: userRecordName != nil)
    }

    /// The type named `name` and the roles read off `rows` of ``RecordType``'s shape: a `t` row
    /// for the type, `f` for each field, `p` for each role's permissions, `r` for each of the
    /// user's roles (`roles` is nil unless `rolesWanted`); rows of other kinds are skipped.
    static func recordType(_ name: String, rows: [PostgresRandomAccessRow], rolesWanted: Bool) throws -> (type: RecordTypeSchema?, roles: Set<String>?) {
        // fields and permissions of a type without its own row belong to no type
        var type = try rows.contains(where: { try $0.value("kind", as: String.self) == "t" }) ? RecordTypeSchema(name: name, permissions: [:]) : nil
        var roles: Set<String>? = rolesWanted ? [] : nil
        for row in rows {
            switch try row.value("kind", as: String.self) {
            case "f":
                let field = try Self.field(row)
                type?.fields[field.name] = field
            case "p":
                type?.permissions[try row.value("field", as: String.self)] = SchemaPermissions(rawValue: Int(try row.value("permissions", as: Int64.self)))
            case "r":
                roles?.insert(try row.value("field", as: String.self))
            default:
                break
            }
        }
        return (type, roles)
    }

    private static func field(_ row: PostgresRandomAccessRow) throws -> SchemaField {
        SchemaField(name: try row.value("field"), type: try row.value("type"), queryable: try row.value("queryable"),
                    sortable: try row.value("sortable"), searchable: try row.value("searchable"), guess: try row.value("guess", as: String?.self))
    }

    func schema(container: String, environment: CloudKitEnvironment) async throws -> ContainerSchema {
        let parameters: [PostgresParameter] = [.text(container), .text(environment.rawValue)]
        var schema = ContainerSchema()
        for row in try await session.rows("SELECT record_type FROM schema_types WHERE container = $1 AND environment = $2", parameters) {
            let name = try row.value("record_type", as: String.self)
            schema.recordTypes[name] = RecordTypeSchema(name: name, permissions: [:])
        }
        for row in try await session.rows("""
            SELECT record_type, field, type, queryable, sortable, searchable, guess FROM schema_fields WHERE container = $1 AND environment = $2
            """, parameters) {
            let field = try Self.field(row)
            let name = try row.value("record_type", as: String.self)
            schema.recordTypes[name, default: RecordTypeSchema(name: name, permissions: [:])].fields[field.name] = field
        }
        for row in try await session.rows("SELECT record_type, role, permissions FROM schema_permissions WHERE container = $1 AND environment = $2", parameters) {
            schema.recordTypes[try row.value("record_type", as: String.self)]?.permissions[try row.value("role", as: String.self)] =
                SchemaPermissions(rawValue: Int(try row.value("permissions", as: Int64.self)))
        }
        schema.roles = Set(try await session.rows("SELECT role FROM schema_roles WHERE container = $1 AND environment = $2", parameters)
            .map { try $0.value("role", as: String.self) })
        return schema
    }

    func lockSchemas(container: String) async throws {
        try await session.execute("SELECT pg_advisory_xact_lock(hashtextextended($1, 0))", [.text("ubiquity-schema/" + container)])
    }

    func replaceSchema(_ schema: ContainerSchema, container: String, environment: CloudKitEnvironment) async throws {
        let parameters: [PostgresParameter] = [.text(container), .text(environment.rawValue)]
        for table in ["schema_types", "schema_fields", "schema_permissions", "schema_roles"] {
            try await session.execute("DELETE FROM \(table) WHERE container = $1 AND environment = $2", parameters)
        }
        for type in schema.recordTypes.values.sorted(by: { $0.name < $1.name }) { try await addToSchema(type, container: container, environment: environment) }
        for role in schema.roles.sorted() {
            try await session.execute("INSERT INTO schema_roles (container, environment, role) VALUES ($1, $2, $3)", parameters + [.text(role)])
        }
    }

    func addToSchema(_ type: RecordTypeSchema, container: String, environment: CloudKitEnvironment) async throws {
        let parameters: [PostgresParameter] = [.text(container), .text(environment.rawValue), .text(type.name)]
        let isNew = try await session.row("""
            INSERT INTO schema_types (container, environment, record_type) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING RETURNING 1 AS added
            """, parameters) != nil
        for field in type.fields.values.sorted(by: { $0.name < $1.name }) {
            try await session.execute("""
                INSERT INTO schema_fields (container, environment, record_type, field, type, queryable, sortable, searchable, guess)
                VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9) ON CONFLICT DO NOTHING
                """, parameters + [.text(field.name), .text(field.type), .bool(field.queryable), .bool(field.sortable), .bool(field.searchable),
                                     .text(field.guess)])
        }
        guard isNew else { return }
        for (role, permissions) in type.permissions where !permissions.isEmpty {
            try await session.execute("INSERT INTO schema_permissions (container, environment, record_type, role, permissions) VALUES ($1, $2, $3, $4, $5)",
                                parameters + [.text(role), .int(Int64(permissions.rawValue))])
        }
    }

    func updateField(_ field: SchemaField, recordType: String, container: String, environment: CloudKitEnvironment) async throws {
        try await session.execute("""
            UPDATE schema_fields SET type = $1, queryable = $2, sortable = $3, searchable = $4, guess = $5
            WHERE container = $6 AND environment = $7 AND record_type = $8 AND field = $9
            """, [.text(field.type), .bool(field.queryable), .bool(field.sortable), .bool(field.searchable), .text(field.guess),
                 .text(container), .text(environment.rawValue), .text(recordType), .text(field.name)])
    }

    func roles(container: String, userRecordName: String) async throws -> Set<String> {
        Set(try await session.rows(Roles.self, [.text(container), .text(userRecordName)]).map { try $0.value("role", as: String.self) })
    }

    /// The statement of ``recordType(container:environment:name:rolesOf:)``: the type, its fields,
    /// its permissions and the user's roles (none for a NULL user), in one.
    enum RecordType: PostgresStatement {
        static let name = "record_type"
        static let sql = """
            SELECT 't' AS kind, NULL AS field, NULL AS type, NULL::BOOLEAN AS queryable, NULL::BOOLEAN AS sortable, NULL::BOOLEAN AS searchable,
                NULL AS guess, NULL::BIGINT AS permissions FROM schema_types WHERE container = $1 AND environment = $2 AND record_type = $3
            UNION ALL SELECT 'f', field, type, queryable, sortable, searchable, guess, NULL FROM schema_fields
                WHERE container = $1 AND environment = $2 AND record_type = $3
            UNION ALL SELECT 'p', role, NULL, NULL, NULL, NULL, NULL, permissions FROM schema_permissions
                WHERE container = $1 AND environment = $2 AND record_type = $3
            UNION ALL SELECT 'r', role, NULL, NULL, NULL, NULL, NULL, NULL FROM role_members
                WHERE container = $1 AND user_record_name = $4::TEXT
            """
    }

    /// The statement of ``roles(container:userRecordName:)``.
    enum Roles: PostgresStatement {
        static let name = "roles"
        static let sql = "SELECT role FROM role_members WHERE container = $1 AND user_record_name = $2"
    }

    func roleMembers(container: String) async throws -> [String: Set<String>] {
        var members: [String: Set<String>] = [:]
        for row in try await session.rows("SELECT role, user_record_name FROM role_members WHERE container = $1", [.text(container)]) {
            members[try row.value("role", as: String.self), default: []].insert(try row.value("user_record_name", as: String.self))
        }
        return members
    }

    func setRoleMember(_ member: Bool, container: String, role: String, userRecordName: String) async throws {
        let parameters: [PostgresParameter] = [.text(container), .text(role), .text(userRecordName)]
        if member {
            try await session.execute("INSERT INTO role_members (container, role, user_record_name) VALUES ($1, $2, $3) ON CONFLICT DO NOTHING", parameters)
        } else {
            try await session.execute("DELETE FROM role_members WHERE container = $1 AND role = $2 AND user_record_name = $3", parameters)
        }
    }

    func deleteData(container: String, environment: CloudKitEnvironment) async throws {
        let parameters: [PostgresParameter] = [.text(container), .text(environment.rawValue)]
        let databases = "SELECT id FROM databases WHERE container = $1 AND environment = $2"
        let zones = "SELECT id FROM zones WHERE database IN (\(databases))"
        try await session.execute("DELETE FROM record_index WHERE record IN (SELECT id FROM records WHERE zone IN (\(zones)))", parameters)
        try await session.execute("DELETE FROM record_keys WHERE record IN (SELECT id FROM records WHERE zone IN (\(zones)))", parameters)
        try await session.execute("DELETE FROM records WHERE zone IN (\(zones))", parameters)
        try await session.execute("DELETE FROM zones WHERE database IN (\(databases))", parameters)
        try await session.execute("DELETE FROM databases WHERE container = $1 AND environment = $2", parameters)
        try await session.execute("DELETE FROM subscriptions WHERE container = $1 AND environment = $2", parameters)
        try await session.execute("UPDATE subscription_generations SET generation = generation + 1 WHERE container = $1 AND environment = $2", parameters)
    }
}
