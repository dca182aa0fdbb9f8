// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// Who may create, read and write which records of the public database, inside one transaction:
/// the caller's roles (`_world` always; `_icloud` and the named roles it is a member of when
/// signed in; `_creator` for its own records) against each record type's permissions in the
/// schema of the database's environment.
///
/// Not enforced for the private database (only its owner reaches it), for server-to-server keys
/// (they act as the container's developer) and for user records (type `Users`, which have their
/// own rule). A type not in the schema has CloudKit's default permissions. `write` implies `read`.
struct RecordAccess {
    let key: DatabaseKey
    let caller: RecordsCaller
    private var memberships: Set<String>?
    private var types: [String: RecordTypeSchema?] = [:]

    /// - Parameter types: record types already read in this transaction (the schema is the
    ///   same for every caller; only roles differ), so checks for many callers read it once.
    init(key: DatabaseKey, caller: RecordsCaller, types: [String: RecordTypeSchema?] = [:]) {
        self.key = key
        self.caller = caller
        self.types = types
    }

    /// The record types read so far (to seed the access of another caller in the transaction).
    var readTypes: [String: RecordTypeSchema?] { types }

    /// Whether permissions apply at all.
    var isEnforced: Bool {
        if key.scope != .public { return false }
        if case .serverKey = caller.identity { return false }
        return true
    }

    /// What a query's caller may read of a type.
    enum ReadScope: Equatable {
        /// Every record.
        case all
        /// Only the records it created (it has read only as `_creator`).
        case own(String)
        /// No record.
        case nothing
    }

    /// The record type in the environment's schema (cached; nil when it has none).
    /// Where permissions apply, the caller's roles come in the same read (one round trip).
    mutating func recordType(_ name: String, tx: any RecordStoreTransaction) async throws -> RecordTypeSchema? {
        if let cached = types[name] { return cached }
        let (type, roles) = try await tx.schemas().recordType(container: key.container, environment: key.environment, name: name, rolesOf: rolesToRead)
        adopt(type, named: name, roles: roles)
        return type
    }

    /// The user whose roles the first read of a record type should bring (nil when permissions
    /// do not apply, the caller is no user or its roles are known).
    var rolesToRead: String? {
        guard memberships == nil, isEnforced, case .user(_, let userName) = caller.identity else { return nil }
        return userName
    }

    /// Caches a record type and the roles of ``rolesToRead`` read together elsewhere (a query's
    /// ``QueryTarget``).
    mutating func adopt(_ type: RecordTypeSchema?, named name: String, roles: Set<String>?) {
        types[name] = type
        if let roles { memberships = roles }
    }

    /// Replaces the cached type (after the batch added to it).
    mutating func cache(_ type: RecordTypeSchema) {
        types[type.name] = type
    }

    /// The caller's roles, without `_creator`.
    mutating func roles(tx: any RecordStoreTransaction) async throws -> Set<String> {
        guard case .user(_, let name) = caller.identity else { return [SecurityRole.world] }
        if memberships == nil { memberships = try await tx.schemas().roles(container: key.container, userRecordName: name) }
        return (memberships ?? []).union([SecurityRole.world, SecurityRole.icloud])
    }

    /// What the caller may do with records of the type, as creator of the record or not.
    mutating func permissions(_ typeName: String, asCreator: Bool, tx: any RecordStoreTransaction) async throws -> SchemaPermissions {
        let granted = try await recordType(typeName, tx: tx)?.permissions ?? RecordTypeSchema.defaultPermissions
        var permissions: SchemaPermissions = []
        for role in try await roles(tx: tx) { permissions.formUnion(granted[role] ?? []) }
        if asCreator { permissions.formUnion(granted[SecurityRole.creator] ?? []) }
        if permissions.contains(.write) { permissions.insert(.read) }
        return permissions
    }

    /// Whether the caller created the record.
    func isCreator(_ record: StoredRecord) -> Bool {
        guard case .user(_, let name) = caller.identity else { return false }
        return record.created.userRecordName == name
    }

    /// Whether the caller may read the record.
    mutating func canRead(_ record: StoredRecord, tx: any RecordStoreTransaction) async throws -> Bool {
        guard isEnforced, record.recordType != UserDirectory.recordType else { return true }
        return try await permissions(record.recordType, asCreator: isCreator(record), tx: tx).contains(.read)
    }

    /// Which records of the type a query returns to the caller.
    mutating func readScope(_ recordType: String, tx: any RecordStoreTransaction) async throws -> ReadScope {
        guard isEnforced else { return .all }
        if try await permissions(recordType, asCreator: false, tx: tx).contains(.read) { return .all }
        if case .user(_, let name) = caller.identity, try await permissions(recordType, asCreator: true, tx: tx).contains(.read) { return .own(name) }
        return .nothing
    }

    /// Refuses (ACCESS_DENIED) a save of a new record of the type the caller may not create.
    mutating func checkCreate(_ recordType: String, recordName: String, tx: any RecordStoreTransaction) async throws {
        guard isEnforced, recordType != UserDirectory.recordType else { return }
        guard try await permissions(recordType, asCreator: false, tx: tx).contains(.create) else {
            throw WireError(.accessDenied, "record \(recordName): your roles may not create \(recordType) records in the public database (see `ubiq admin role show`)")
        }
    }

    /// Refuses (ACCESS_DENIED) a change or deletion of a record the caller may not write.
    mutating func checkWrite(_ record: StoredRecord, tx: any RecordStoreTransaction) async throws {
        guard isEnforced, record.recordType != UserDirectory.recordType else { return }
        let creator = isCreator(record)
        guard try await permissions(record.recordType, asCreator: creator, tx: tx).contains(.write) else {
            if !creator, try await permissions(record.recordType, asCreator: true, tx: tx).contains(.write) {
                throw WireError(.accessDenied, "record \(record.recordName) in the public database belongs to the user who created it; your roles may not write others' \(record.recordType) records")
            }
            throw WireError(.accessDenied, "record \(record.recordName): your roles may not write \(record.recordType) records in the public database")
        }
    }
}
