// SPDX-License-Identifier: Apache-2.0

/// `records/changes` request (the legacy form of `changes/zone`: one zone at the top level).
package struct WireRecordChangesRequest: Sendable, Hashable, WireReadable {
    /// The request as `changes/zone` reads it.
    package var changes: WireZoneChangesRequest

    /// Reads the body.
    package init(reader: WireReader) throws {
        let zone = WireZoneChangesRequest.Zone(zoneID: try WireZoneID(reader: reader.requiredObject("zoneID", "a zone ID dictionary")),
                                               syncToken: try reader.string("syncToken"))
        changes = WireZoneChangesRequest(zones: [zone], desiredKeys: try reader.strings("desiredKeys"),
                                         resultsLimit: try reader.integer("resultsLimit").map { try WireReader.limit($0, path: "resultsLimit") },
                                         desiredRecordTypes: try reader.strings("desiredRecordTypes"),
                                         numbersAsStrings: try reader.bool("numbersAsStrings") ?? false, reverse: try reader.bool("reverse") ?? false)
    }
}

/// `zones/lookup` request: `{"zones": [{"zoneName"…}]}` (or `[{"zoneID": {…}}]`).
package struct WireLookupZonesRequest: Sendable, Hashable, WireReadable {
    package var zones: [WireZoneID]

    /// Reads the body.
    package init(reader: WireReader) throws {
        zones = try reader.zoneIDs("zones")
    }
}

/// `zones/modify` request.
package struct WireModifyZonesRequest: Sendable, Hashable, WireReadable {
    package var operations: [WireZoneOperation]

    /// Reads the body.
    package init(reader: WireReader) throws {
        operations = try reader.requiredObjects("operations", WireZoneOperation.init(reader:))
    }
}

/// `zones/changes` and `changes/database` request: a change token and a page size.
package struct WireDatabaseChangesRequest: Sendable, Hashable, WireReadable {
    /// Apple's docs name the token of `zones/changes` `metaSyncToken`, and MistKit sends
    /// `syncToken` (the name `changes/database` uses): either is read.
    package var syncToken: String?
    package var resultsLimit: Int?

    /// Reads the body.
    package init(reader: WireReader) throws {
        syncToken = try reader.string("metaSyncToken") ?? reader.string("syncToken")
        resultsLimit = try reader.integer("resultsLimit").map { try WireReader.limit($0, path: reader.path("resultsLimit")) }
    }
}
