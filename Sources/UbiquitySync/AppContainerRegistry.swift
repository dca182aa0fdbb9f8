// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore

/// Which app containers an account has, kept on the server so a device sees an app's documents
/// before the app ever ran there: one `UbiquityAppContainer` record per container (record name =
/// the identifier) in the zone `UbiquityAppContainers` of the drive container's private
/// database. Plain CloudKit records, so any CloudKit Web Services server keeps them; no
/// endpoint outside CloudKit's API is needed.
struct AppContainerRegistry: Sendable {
    /// The zone.
    static let zoneID = RecordZone.ID(zoneName: "UbiquityAppContainers")
    /// The record type.
    static let recordType = "UbiquityAppContainer"
    /// The field holding the identifier (the record name holds it too).
    static let identifierField = "identifier"

    /// The drive container's private database.
    let database: CloudDatabase

    /// Makes the zone (saving an existing zone changes nothing).
    func prepare() async throws {
        _ = try await database.save(RecordZone(zoneID: Self.zoneID))
    }

    /// Every container registered, valid identifiers only.
    func containers() async throws -> Set<String> {
        var token: ServerChangeToken?
        var identifiers = Set<String>()
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: Self.zoneID, since: token)
            for (id, result) in page.modificationResultsByID {
                guard case .success(let modification) = result, modification.record.recordType == Self.recordType else { continue }
                if (try? ContainerIdentifier(id.recordName)) != nil { identifiers.insert(id.recordName) }
            }
            for deletion in page.deletions { identifiers.remove(deletion.recordID.recordName) }
            token = page.changeToken
            if !page.moreComing { return identifiers }
        }
    }

    /// Registers `identifier` (already registered by another device: nothing to do).
    func register(_ identifier: String) async throws {
        var record = Record(recordType: Self.recordType, recordID: Record.ID(recordName: identifier, zoneID: Self.zoneID))
        record[Self.identifierField] = .string(identifier)
        do {
            _ = try await database.save(record)
        } catch let error as CloudKitError where error.code == .serverRecordChanged {
            // another device registered it first
        }
    }
}
