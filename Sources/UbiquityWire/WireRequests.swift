// SPDX-License-Identifier: Apache-2.0
import UbiquityCore

/// CloudKit Web Services' limits, as Apple documents them.
package enum WireLimits {
    /// Operations per `records/modify` (and `zones/modify`, `subscriptions/modify`) request.
    package static let operationsPerRequest = 200
    /// Records per response, and the largest `resultsLimit`.
    package static let recordsPerResponse = 200
    /// A record's size without its assets, in bytes.
    package static let recordSize = 1_000_000
    /// Sources with a DELETE_SELF reference to one target.
    package static let deleteSelfSourcesPerTarget = 750
    /// Tokens per `assets/upload` request (and assets per `assets/rereference`).
    package static let assetTokensPerRequest = 200
}

/// One `records/modify` operation.
package struct WireRecordOperation: Sendable, Hashable, WireReadable {
    /// The operation types of `records/modify`.
    package enum OperationType: String, Sendable, Hashable, CaseIterable {
        case create, update, forceUpdate, replace, forceReplace, delete, forceDelete
    }
    package var operationType: OperationType
    package var record: WireRecord
    /// Overrides the request's `desiredKeys` for this operation's result.
    package var desiredKeys: [String]?

    /// Makes an operation.
    package init(_ operationType: OperationType, _ record: WireRecord, desiredKeys: [String]? = nil) {
        self.operationType = operationType
        self.record = record
        self.desiredKeys = desiredKeys
    }

    /// Reads an operation dictionary.
    package init(reader: WireReader) throws {
        let name = try reader.requiredString("operationType")
        guard let type = OperationType(rawValue: name) ?? OperationType.allCases.first(where: { $0.rawValue.lowercased() == name.lowercased() }) else {
            throw WireReader.invalid(reader.path("operationType"), "unknown operation \(name); expected one of \(OperationType.allCases.map(\.rawValue).joined(separator: ", "))")
        }
        operationType = type
        record = try WireRecord(reader: reader.requiredObject("record", "a record dictionary"))
        desiredKeys = try reader.strings("desiredKeys")
    }

    /// The dictionary.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("operationType", operationType.rawValue)
        var record = self.record.json()
        if case .object(var members) = record {
            members["pluginFields"] = nil
            members["deleted"] = nil
            if self.record.fields == nil, !self.record.nullFields.isEmpty { members["fields"] = .object([:]) }
            if !self.record.nullFields.isEmpty, case .object(var fields)? = members["fields"] {
                for name in self.record.nullFields { fields[name] = .object(["value": .null]) }
                members["fields"] = .object(fields)
            }
            record = .object(members)
        }
        writer.set("record", record)
        writer.set("desiredKeys", desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
        return writer.json
    }
}

/// `records/modify` request.
package struct WireModifyRecordsRequest: Sendable, Hashable, WireReadable {
    package var operations: [WireRecordOperation]
    package var zoneID: WireZoneID?
    /// Default true; applies to custom zones.
    package var atomic: Bool?
    package var desiredKeys: [String]?
    package var numbersAsStrings: Bool
    /// The operations of the body that could not be read, by index, with why: each is answered
    /// as its own `BAD_REQUEST` item (as Apple answers a malformed record) while the others are
    /// applied; its place in ``operations`` holds a stand-in with the record's name, if it had one.
    package var unreadable: [Int: WireError] = [:]

    /// Makes a request.
    package init(operations: [WireRecordOperation], zoneID: WireZoneID? = nil, atomic: Bool? = nil,
                desiredKeys: [String]? = nil, numbersAsStrings: Bool = false) {
        self.operations = operations
        self.zoneID = zoneID
        self.atomic = atomic
        self.desiredKeys = desiredKeys
        self.numbersAsStrings = numbersAsStrings
    }

    /// Reads the body.
    package init(reader: WireReader) throws {
        var unreadable: [Int: WireError] = [:]
        let operations = try reader.objects("operations") { index, element in
            do {
                return try WireRecordOperation(reader: element.get())
            } catch {
                let name = (try? element.get().object("record")?.string("recordName")) ?? ""
                var refusal = error as? WireError ?? WireError(.badRequest, "operations[\(index)]: \(error)")
                refusal.recordName = refusal.recordName ?? (name.isEmpty ? nil : name)
                unreadable[index] = refusal
                return WireRecordOperation(.create, WireRecord(recordName: name))
            }
        }
        guard let operations else { throw WireReader.missing("operations", "an array") }
        self.operations = operations
        self.unreadable = unreadable
        zoneID = try reader.object("zoneID").map { try WireZoneID(reader: $0) }
        atomic = try reader.bool("atomic")
        desiredKeys = try reader.strings("desiredKeys")
        numbersAsStrings = try reader.bool("numbersAsStrings") ?? false
    }

    /// The body.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("operations", .array(operations.map(\.json)))
        writer.set("zoneID", zoneID?.json)
        writer.set("atomic", atomic)
        writer.set("desiredKeys", desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
        writer.set("numbersAsStrings", numbersAsStrings)
        return writer.json
    }
}

/// `records/lookup` request.
package struct WireLookupRecordsRequest: Sendable, Hashable, WireReadable {
    /// One record to look up.
    package struct Item: Sendable, Hashable {
        package var recordName: String
        package var desiredKeys: [String]?
        /// Makes an item.
        package init(recordName: String, desiredKeys: [String]? = nil) {
            self.recordName = recordName
            self.desiredKeys = desiredKeys
        }
    }
    package var records: [Item]
    package var zoneID: WireZoneID?
    package var desiredKeys: [String]?
    package var numbersAsStrings: Bool

    /// Makes a request.
    package init(records: [Item], zoneID: WireZoneID? = nil, desiredKeys: [String]? = nil, numbersAsStrings: Bool = false) {
        self.records = records
        self.zoneID = zoneID
        self.desiredKeys = desiredKeys
        self.numbersAsStrings = numbersAsStrings
    }

    /// Reads the body.
    package init(reader: WireReader) throws {
        records = try reader.requiredObjects("records") { item in
            Item(recordName: try item.requiredString("recordName"), desiredKeys: try item.strings("desiredKeys"))
        }
        zoneID = try reader.object("zoneID").map { try WireZoneID(reader: $0) }
        desiredKeys = try reader.strings("desiredKeys")
        numbersAsStrings = try reader.bool("numbersAsStrings") ?? false
    }

    /// The body.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("records", .array(records.map { item in
            var entry = WireWriter()
            entry.set("recordName", item.recordName)
            entry.set("desiredKeys", item.desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
            return entry.json
        }))
        writer.set("zoneID", zoneID?.json)
        writer.set("desiredKeys", desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
        writer.set("numbersAsStrings", numbersAsStrings)
        return writer.json
    }
}

/// `records/query` request.
package struct WireQueryRecordsRequest: Sendable, Hashable, WireReadable {
    package var query: WireQuery
    package var zoneID: WireZoneID?
    package var resultsLimit: Int?
    package var continuationMarker: String?
    package var desiredKeys: [String]?
    package var zoneWide: Bool
    package var numbersAsStrings: Bool

    /// Makes a request.
    package init(query: WireQuery, zoneID: WireZoneID? = nil, resultsLimit: Int? = nil, continuationMarker: String? = nil,
                desiredKeys: [String]? = nil, zoneWide: Bool = false, numbersAsStrings: Bool = false) {
        self.query = query
        self.zoneID = zoneID
        self.resultsLimit = resultsLimit
        self.continuationMarker = continuationMarker
        self.desiredKeys = desiredKeys
        self.zoneWide = zoneWide
        self.numbersAsStrings = numbersAsStrings
    }

    /// Reads the body.
    package init(reader: WireReader) throws {
        query = try WireQuery(reader: reader.requiredObject("query", "a query dictionary"))
        zoneID = try reader.object("zoneID").map { try WireZoneID(reader: $0) }
        resultsLimit = try reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") }
        continuationMarker = try reader.string("continuationMarker")
        desiredKeys = try reader.strings("desiredKeys")
        zoneWide = try reader.bool("zoneWide") ?? false
        numbersAsStrings = try reader.bool("numbersAsStrings") ?? false
    }

    /// The body.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("query", query.json)
        writer.set("zoneID", zoneID?.json)
        writer.set("resultsLimit", resultsLimit.map { Int64($0) })
        writer.set("continuationMarker", continuationMarker)
        writer.set("desiredKeys", desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
        writer.set("zoneWide", zoneWide)
        writer.set("numbersAsStrings", numbersAsStrings)
        return writer.json
    }
}

/// `changes/zone` request (and, with one zone, the legacy `records/changes`).
package struct WireZoneChangesRequest: Sendable, Hashable, WireReadable {
    /// One zone to fetch changes of; its keys override the request's.
    package struct Zone: Sendable, Hashable {
        package var zoneID: WireZoneID
        package var syncToken: String?
        package var desiredKeys: [String]?
        package var resultsLimit: Int?
        package var desiredRecordTypes: [String]?
        package var numbersAsStrings: Bool?
        /// Makes a zone entry.
        package init(zoneID: WireZoneID, syncToken: String? = nil, desiredKeys: [String]? = nil, resultsLimit: Int? = nil,
                    desiredRecordTypes: [String]? = nil, numbersAsStrings: Bool? = nil) {
            self.zoneID = zoneID
            self.syncToken = syncToken
            self.desiredKeys = desiredKeys
            self.resultsLimit = resultsLimit
            self.desiredRecordTypes = desiredRecordTypes
            self.numbersAsStrings = numbersAsStrings
        }
    }
    package var zones: [Zone]
    package var desiredKeys: [String]?
    package var resultsLimit: Int?
    package var desiredRecordTypes: [String]?
    package var numbersAsStrings: Bool
    package var reverse: Bool

    /// Makes a request.
    package init(zones: [Zone], desiredKeys: [String]? = nil, resultsLimit: Int? = nil, desiredRecordTypes: [String]? = nil,
                numbersAsStrings: Bool = false, reverse: Bool = false) {
        self.zones = zones
        self.desiredKeys = desiredKeys
        self.resultsLimit = resultsLimit
        self.desiredRecordTypes = desiredRecordTypes
        self.numbersAsStrings = numbersAsStrings
        self.reverse = reverse
    }

    /// Reads a `changes/zone` body.
    package init(reader: WireReader) throws {
        zones = try reader.requiredObjects("zones") { zone in
            Zone(zoneID: try WireZoneID(reader: zone.requiredObject("zoneID", "a zone ID dictionary")), syncToken: try zone.string("syncToken"),
                 desiredKeys: try zone.strings("desiredKeys"),
                 resultsLimit: try zone.integer("resultsLimit").map { try WireReader.limit($0, path: zone.path("resultsLimit")) },
                 desiredRecordTypes: try zone.strings("desiredRecordTypes"),
                 numbersAsStrings: try zone.bool("numbersAsStrings") ?? zone.bool("numberAsStrings"))
        }
        desiredKeys = try reader.strings("desiredKeys")
        resultsLimit = try reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") }
        desiredRecordTypes = try reader.strings("desiredRecordTypes")
        numbersAsStrings = try reader.bool("numbersAsStrings") ?? reader.bool("numberAsStrings") ?? false
        reverse = try reader.bool("reverse") ?? false
    }

    /// The `changes/zone` body.
    package var json: JSONValue {
        var writer = WireWriter()
        writer.set("zones", .array(zones.map { zone in
            var entry = WireWriter()
            entry.set("zoneID", zone.zoneID.json)
            entry.set("syncToken", zone.syncToken)
            entry.set("desiredKeys", zone.desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
            entry.set("resultsLimit", zone.resultsLimit.map { Int64($0) })
            entry.set("desiredRecordTypes", zone.desiredRecordTypes.map { JSONValue.array($0.map { .string($0) }) })
            entry.set("numbersAsStrings", zone.numbersAsStrings)
            return entry.json
        }))
        writer.set("desiredKeys", desiredKeys.map { JSONValue.array($0.map { .string($0) }) })
        writer.set("resultsLimit", resultsLimit.map { Int64($0) })
        writer.set("desiredRecordTypes", desiredRecordTypes.map { JSONValue.array($0.map { .string($0) }) })
        writer.set("numbersAsStrings", numbersAsStrings)
        writer.set("reverse", reverse)
        return writer.json
    }
}

/// A `zones/modify` operation.
package struct WireZoneOperation: Sendable, Hashable, WireReadable {
    /// Zone operation types.
    package enum OperationType: String, Sendable, Hashable, CaseIterable { case create, delete }
    package var operationType: OperationType
    package var zoneID: WireZoneID

    /// Makes an operation.
    package init(_ operationType: OperationType, _ zoneID: WireZoneID) {
        self.operationType = operationType
        self.zoneID = zoneID
    }

    /// Reads an operation dictionary (`{"operationType", "zone": {"zoneID": …}}`; a bare zone
    /// ID under `zone` is accepted too).
    package init(reader: WireReader) throws {
        let name = try reader.requiredString("operationType")
        guard let type = OperationType(rawValue: name.lowercased()) else {
            throw WireReader.invalid(reader.path("operationType"), "unknown operation \(name); expected create or delete")
        }
        operationType = type
        let zone = try reader.requiredObject("zone", "a zone dictionary")
        zoneID = try WireZoneID(reader: zone.object("zoneID") ?? zone)
    }

    /// The dictionary.
    package var json: JSONValue {
        .object(["operationType": .string(operationType.rawValue), "zone": .object(["zoneID": zoneID.json])])
    }
}

extension WireReader {
    /// Validates a `resultsLimit`: 1 or more; larger than the maximum is clamped by the caller.
    package static func limit(_ value: Int64, path: String) throws -> Int {
        guard value >= 1 else { throw WireReader.invalid(path, "must be at least 1") }
        return Int(min(value, 1_000_000))
    }

    /// Reads a list of zone IDs from `key` (`zones/lookup`: `[{"zoneName"…}]` or `[{"zoneID": …}]`).
    package func zoneIDs(_ key: String) throws -> [WireZoneID] {
        try requiredObjects(key) { item in try WireZoneID(reader: item.object("zoneID") ?? item) }
    }
}
