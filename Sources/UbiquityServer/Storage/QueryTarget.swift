// SPDX-License-Identifier: Apache-2.0
import UbiquityCore
import UbiquityWire

/// What `records/query` reads before its page
/// (``RecordStoreTransaction/queryTarget(key:zoneName:recordType:rolesOf:)``): the record type in
/// the environment's schema, the caller's roles where permissions need them, the zones to read
/// and the type's query indexes.
package struct QueryTarget: Sendable {
    /// The record type in the environment's schema (nil when it has none).
    package var type: RecordTypeSchema?
    /// The named roles of the user asked for (nil when none was asked for).
    package var roles: Set<String>?
    /// The live zones, by name: the one named, or every zone of the database (none when the
    /// database or the zone does not exist).
    package var zones: [StoredZone]
    /// The query indexes of the record type in the environment, ready or not.
    package var indexes: [StoredQueryIndex]

    /// Makes one.
    package init(type: RecordTypeSchema?, roles: Set<String>?, zones: [StoredZone], indexes: [StoredQueryIndex]) {
        self.type = type
        self.roles = roles
        self.zones = zones
        self.indexes = indexes
    }
}

extension RecordStoreTransaction {
    /// The reads one after the other (a store whose reads cost no round trips).
    package func queryTarget(key: DatabaseKey, zoneName: String?, recordType: String, rolesOf userRecordName: String?) async throws -> QueryTarget {
        let (type, roles) = try await schemas().recordType(container: key.container, environment: key.environment, name: recordType, rolesOf: userRecordName)
        var zones: [StoredZone] = []
        if let zoneName {
            if let zone = try await zone(key: key, name: zoneName) { zones = [zone] }
        } else if let database = try await database(key) {
            zones = try await self.zones(database: database.id)
        }
        let indexes = try await queryIndexStore().queryIndexes(container: key.container, environment: key.environment)
            .filter { $0.definition.recordType == recordType }
        return QueryTarget(type: type, roles: roles, zones: zones, indexes: indexes)
    }
}
