// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

/// Which app containers an account has, kept on the server so a device sees an app's documents
/// before the app ever ran there: one `UbiquityAppContainer` record per container (record name =
/// the identifier) in the zone `UbiquityAppContainers` of the drive container's private
/// database. Plain CloudKit records, so any CloudKit Web Services server keeps them; no
/// endpoint outside CloudKit's API is needed. A container's declared display name
/// (``UbiquityContainers/setDisplayName(_:for:)``) is kept in the record too, so every device
/// names the app's folder alike.
struct AppContainerRegistry: Sendable {
    /// The zone.
    static let zoneID = RecordZone.ID(zoneName: "UbiquityAppContainers")
    /// The record type.
    static let recordType = "UbiquityAppContainer"
    /// The field holding the identifier (the record name holds it too).
    static let identifierField = "identifier"
    /// The field holding the container's declared display name (absent: none declared).
    static let displayNameField = "displayName"

    /// The drive container's private database.
    let database: CloudDatabase

    /// Makes the zone (saving an existing zone changes nothing).
    func prepare() async throws {
        _ = try await database.save(RecordZone(zoneID: Self.zoneID))
    }

    /// Every container registered (valid identifiers only), with its display name (nil: none
    /// declared, or one that cannot be a folder name).
    func containers() async throws -> [String: String?] {
        var token: ServerChangeToken?
        var containers: [String: String?] = [:]
        while true {
            let page = try await database.recordZoneChanges(inZoneWith: Self.zoneID, since: token)
            for (id, result) in page.modificationResultsByID {
                guard case .success(let modification) = result, modification.record.recordType == Self.recordType,
                      (try? ContainerIdentifier(id.recordName)) != nil else { continue }
                containers[id.recordName] = .some(Self.displayName(of: modification.record))
            }
            for deletion in page.deletions { containers[deletion.recordID.recordName] = nil }
            token = page.changeToken
            if !page.moreComing { return containers }
        }
    }

    /// A registry record's display name, when it is a valid one.
    static func displayName(of record: Record) -> String? {
        let value: RecordValue? = record[displayNameField]
        guard case .string(let name)? = value else { return nil }
        return try? UbiquityContainers.validatedDisplayName(name)
    }

    /// Registers `identifier` with the display name this device declares (`displayName`; nil:
    /// none). Registered by another device already: its record takes this device's declared
    /// name when that differs; a device that declares none never clears another's.
    func register(_ identifier: String, displayName: String? = nil) async throws {
        var record = Record(recordType: Self.recordType, recordID: Record.ID(recordName: identifier, zoneID: Self.zoneID))
        record[Self.identifierField] = .string(identifier)
        if let displayName { record[Self.displayNameField] = .string(displayName) }
        do {
            _ = try await database.save(record)
        } catch let error as CloudKitError where error.code == .serverRecordChanged {
            // another device registered it first
            guard let displayName, var existing = error.serverRecord, Self.displayName(of: existing) != displayName else { return }
            existing[Self.displayNameField] = .string(displayName)
            _ = try await database.save(existing)
        }
    }
}
