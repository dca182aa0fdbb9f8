// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension RecordsEngine {
    /// `changes/database` (and the legacy `zones/changes`, whose token key is `metaSyncToken`):
    /// zones changed or deleted since the token, each once, oldest change first.
    package func databaseChanges(syncToken: String?, resultsLimit: Int?, tokenKey: String = "syncToken", context: Context) async throws -> JSONValue {
        guard context.scope != .public || tokenKey == "metaSyncToken" else {
            throw WireError(.badRequest, "changes/database works on the private and shared databases only")
        }
        let key = try context.databaseKey(forWriting: false)
        let limit = min(resultsLimit ?? WireLimits.recordsPerResponse, WireLimits.recordsPerResponse)
        if context.scope == .shared {
            return .object(["zones": .array([]), tokenKey: .string(SyncToken.database(id: 0, sequence: 0)), "moreComing": .bool(false)])
        }
        let (database, changes): (StoredDatabase?, [StoredZoneChange]) = try await store.read { tx in
            guard let database = try await tx.database(key) else { return (nil, []) }
            var after: Int64 = 0
            if let syncToken {
                guard let (owner, sequence) = SyncToken.decode(syncToken, kind: "d1") else {
                    throw WireError(.badRequest, "\(tokenKey): not a database change token")
                }
                guard owner == String(database.id) || owner == "0", sequence <= database.sequence else {
                    throw WireError(.changeTokenExpired, "\(tokenKey): the token belongs to another database or has expired; fetch again without a token")
                }
                after = sequence
            }
            return (database, try await tx.zoneChanges(database: database.id, after: after, limit: limit + 1))
        }
        if database == nil, let syncToken {
            guard let (_, sequence) = SyncToken.decode(syncToken, kind: "d1") else {
                throw WireError(.badRequest, "\(tokenKey): not a database change token")
            }
            if sequence != 0 { throw WireError(.changeTokenExpired, "\(tokenKey): the token belongs to another database; fetch again without a token") }
        }
        let moreComing = changes.count > limit
        let page = changes.prefix(limit)
        let last = moreComing ? page.last!.sequence : (database?.sequence ?? 0)
        let zones: [JSONValue] = page.map { change in
            .object(["zoneID": RecordsEngine.wireZoneID(change.zone.name, key: key).json, "deleted": .bool(change.zone.deleted)])
        }
        return .object([
            "zones": .array(zones),
            tokenKey: .string(SyncToken.database(id: database?.id ?? 0, sequence: last)),
            "moreComing": .bool(moreComing),
        ])
    }

    /// `changes/zone`: per zone, records and tombstones changed since its token, each once, in
    /// change order, with `moreComing` and the next token.
    package func zoneChanges(_ request: WireZoneChangesRequest, context: Context) async throws -> JSONValue {
        try JSONValue.parse(Data(await zoneChangesBody(request, context: context)))
    }

    /// ``zoneChanges(_:context:)`` as the response body: its JSON text. A record whose stored
    /// fields need nothing added (no assets, whose download URLs are made per request) and
    /// are asked for whole is written with its fields as stored, not decoded and encoded again
    /// (that was ~10 % of the server syncing 10,000 small files).
    package func zoneChangesBody(_ request: WireZoneChangesRequest, context: Context) async throws -> [UInt8] {
        guard context.scope != .public else {
            throw WireError(.badRequest, "changes/zone works on the private and shared databases only")
        }
        // changes come oldest first; newest first is refused rather than answered the other way
        guard !request.reverse else {
            throw WireError(.badRequest, "reverse: true is not supported; changes come in the order they were made")
        }
        let key = try context.databaseKey(forWriting: false)
        var out: [UInt8] = Array(#"{"zones":["#.utf8)
        for (index, zoneRequest) in request.zones.enumerated() {
            if index > 0 { out.append(UInt8(ascii: ",")) }
            let zoneID = zoneRequest.zoneID
            let wireZone = RecordsEngine.wireZoneID(zoneID.zoneName, key: key)
            let limit = min(zoneRequest.resultsLimit ?? request.resultsLimit ?? WireLimits.recordsPerResponse, WireLimits.recordsPerResponse)
            let types = zoneRequest.desiredRecordTypes ?? request.desiredRecordTypes
            do {
                try context.checkOwner(zoneID)
                guard !zoneID.isDefault else {
                    throw WireError(.badRequest, "the default zone does not keep a change history; use a custom zone")
                }
                let (zone, records, guessed): (StoredZone?, [StoredRecordText], GuessedFields) = try await store.read { tx in
                    guard let zone = try await RecordsEngine.readZone(tx, key: key, zoneID: zoneID) else { return (nil, [], .none) }
                    var after: Int64 = 0
                    if let token = zoneRequest.syncToken {
                        guard let (owner, sequence) = SyncToken.decode(token, kind: "z1") else {
                            throw WireError(.badRequest, "syncToken: not a zone change token")
                        }
                        guard owner == String(zone.id), sequence <= zone.sequence, sequence >= zone.purgedThrough else {
                            throw WireError(.changeTokenExpired, "syncToken: the token is from another zone, a deleted zone, or too old; fetch again without a token")
                        }
                        after = sequence
                    }
                    let changes = try await tx.changesKeepingFieldsText(zone: zone.id, after: after, limit: limit + 1, recordTypes: types)
                    let guessed = try await GuessedFields.of(changes.lazy.filter { !$0.record.deleted }.map(\.record.recordType), key: key, tx: tx)
                    return (zone, changes, guessed)
                }
                if zone == nil, let token = zoneRequest.syncToken {
                    guard let (owner, sequence) = SyncToken.decode(token, kind: "z1") else { throw WireError(.badRequest, "syncToken: not a zone change token") }
                    if owner != "0" || sequence != 0 { throw WireError(.changeTokenExpired, "syncToken: the token is from another zone; fetch again without a token") }
                }
                let moreComing = records.count > limit
                let page = records.prefix(limit)
                let next = moreComing ? page.last!.record.sequence : (zone?.sequence ?? 0)
                let desiredKeys = zoneRequest.desiredKeys ?? request.desiredKeys
                let numbersAsStrings = zoneRequest.numbersAsStrings ?? request.numbersAsStrings
                // the zone's object without its records, then `,"records":[…]}` in its place
                var zoneJSON = JSONValue.object([
                    "zoneID": wireZone.json,
                    "syncToken": .string(SyncToken.zone(id: zone?.id ?? 0, sequence: next)),
                    "moreComing": .bool(moreComing),
                ]).serializedBytes()
                zoneJSON.removeLast()  // "}"
                zoneJSON.append(contentsOf: #","records":["#.utf8)
                for (position, change) in page.enumerated() {
                    if position > 0 { zoneJSON.append(UInt8(ascii: ",")) }
                    try writeRecord(change.record, fieldsText: change.fieldsText, zone: wireZone, desiredKeys: desiredKeys,
                                    numbersAsStrings: numbersAsStrings, guessed: guessed, context: context, to: &zoneJSON)
                }
                zoneJSON.append(contentsOf: "]}".utf8)
                out.append(contentsOf: zoneJSON)
            } catch var error as WireError {
                error.zoneID = wireZone
                error.json().write(to: &out)
            }
        }
        out.append(contentsOf: "]}".utf8)
        return out
    }

    /// Whether stored fields JSON may hold an asset (type `ASSETID` or `ASSETID_LIST`): any
    /// text naming it, a string value included (then the record just takes the longer way).
    static func mayHoldAssets(_ fieldsText: String) -> Bool {
        ByteSearch.contains(fieldsText, "ASSETID")
    }
}
