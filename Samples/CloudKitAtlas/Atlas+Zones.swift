// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// A custom zone and change tokens (CloudKitAtlas's "Zones" and "Sync" sections).
extension Atlas {
    /// Saves a zone, then finds it with `fetchAllRecordZones` and `fetch(withRecordZoneID:)`.
    func createZone() async throws -> String {
        let zone = try await database.save(RecordZone(zoneName: "AtlasZone-\(run)"))
        madeZones.append(zone.zoneID)
        let all = try await database.allRecordZones()
        try check(all.contains { $0.zoneID.zoneName == zone.zoneID.zoneName }, "fetchAllRecordZones does not list \(zone.zoneID.zoneName)")
        let fetched = try await database.recordZone(for: zone.zoneID)
        try check(fetched.capabilities.contains(.fetchChanges), "the zone cannot fetch changes (capabilities \(fetched.capabilities.rawValue))")
        changesZone = zone.zoneID
        return "\(zone.zoneID.zoneName), one of \(all.count) zones"
    }

    /// Every change of `zone` since `token`, page after page: changed records by name, deleted
    /// record IDs, and the last token.
    func allChanges(in zone: RecordZone.ID, since token: ServerChangeToken?) async throws
        -> (changed: [String], deleted: [Record.ID], token: ServerChangeToken) {
        var token = token
        var changed: [String] = []
        var deleted: [Record.ID] = []
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: zone, since: token)
            for result in page.modificationResultsByID.values {
                changed.append(try result.get().record["name"] as String? ?? "(no name)")
            }
            deleted += page.deletions.map(\.recordID)
            token = page.changeToken
            if !page.moreComing { return (changed.sorted(), deleted, page.changeToken) }
        }
    }

    /// Saves two records in the zone and fetches all its changes (no token): both, and a token.
    func fetchZoneChanges() async throws -> String {
        let zone = try need(changesZone, from: "zone-create")
        let records = ["first", "second"].map { name in
            var record = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-\(name)", zoneID: zone))
            record["name"] = name
            return record
        }
        let (results, _) = try await database.modifyRecords(saving: records, deleting: [])
        for result in results.values { _ = try result.get() }
        changesRecords = records.map(\.recordID)
        let changes = try await allChanges(in: zone, since: nil)
        try check(changes.changed == ["first", "second"], "changes without a token: \(changes.changed), expected [first, second]")
        try check(changes.deleted.isEmpty, "changes without a token report deletions: \(changes.deleted)")
        changesToken = changes.token
        return "\(changes.changed.count) records, token \(changes.token.description.prefix(16))…"
    }

    /// Saves a third record and deletes the first; fetching with the token reports just that.
    func fetchZoneChangesWithToken() async throws -> String {
        let zone = try need(changesZone, from: "zone-create")
        let token = try need(changesToken, from: "zone-changes")
        var third = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-third", zoneID: zone))
        third["name"] = "third"
        let (saved, deleted) = try await database.modifyRecords(saving: [third], deleting: [changesRecords[0]])
        for result in saved.values { _ = try result.get() }
        for result in deleted.values { try result.get() }
        let changes = try await allChanges(in: zone, since: token)
        try check(changes.changed == ["third"], "changes since the token: \(changes.changed), expected [third]")
        try check(changes.deleted.map(\.recordName) == [changesRecords[0].recordName], "deletions since the token: \(changes.deleted.map(\.recordName)), expected [\(changesRecords[0].recordName)]")
        let again = try await allChanges(in: zone, since: changes.token)
        try check(again.changed.isEmpty && again.deleted.isEmpty, "changes since the newest token: \(again.changed) and \(again.deleted.count) deletions, expected none")
        return "since the token: 1 saved (third), 1 deleted (first); since the new token: nothing"
    }
}

/// Deleting what the run made.
extension Atlas {
    /// Deletes the subscription, the zones (with their records) and the default-zone records.
    func cleanUp() async throws -> String {
        defer { try? FileManager.default.removeItem(at: scratch) }
        var problems: [String] = []
        if let subscriptionID {
            do { _ = try await database.deleteSubscription(withID: subscriptionID) } catch { problems.append("subscription \(subscriptionID): \(error)") }
        }
        if !madeZones.isEmpty {
            let (_, deleted) = try await database.modifyRecordZones(saving: [], deleting: madeZones)
            for (zone, result) in deleted {
                if case .failure(let error) = result { problems.append("zone \(zone.zoneName): \(error)") }
            }
        }
        if !madeRecords.isEmpty {
            let (_, deleted) = try await database.modifyRecords(saving: [], deleting: madeRecords, atomically: false)
            for (id, result) in deleted {
                // The children went with their parent.
                if case .failure(let error as CloudKitError) = result, error.code == .unknownItem { continue }
                if case .failure(let error) = result { problems.append("record \(id.recordName): \(error)") }
            }
        }
        try check(problems.isEmpty, problems.joined(separator: "; "))
        return "deleted \(subscriptionID == nil ? 0 : 1) subscription, \(madeZones.count) zones, \(madeRecords.count) records"
    }
}
