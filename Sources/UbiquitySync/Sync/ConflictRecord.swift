// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityCloudKit

/// The record format of shared conflict versions (`docs/sync.md`): a device that keeps a
/// conflict version of an item saves one `UbiquityConflictVersion` record beside the item's
/// record, so every device shows the conflict; deleting the record resolves it everywhere.
package enum ConflictRecord {
    /// The record type.
    package static let recordType = "UbiquityConflictVersion"

    /// Field names.
    package enum Field {
        /// A reference to the item's `UbiquityItem` record (DELETE_SELF: deleting the item
        /// deletes its conflict versions).
        package static let item = "item"
        /// The item's path when the version was made (for display and logs).
        package static let path = "path"
        /// The name of the device that made the content.
        package static let device = "device"
        /// The content's modification time, milliseconds since 1970.
        package static let modified = "modified"
        /// Size in bytes.
        package static let size = "size"
        /// SHA-256 of the content, hex.
        package static let contentHash = "contentHash"
        /// The content as an asset (larger than ``SyncRecord/inlineLimit``).
        package static let content = "content"
        /// The content in the record itself (1 byte up to ``SyncRecord/inlineLimit``).
        package static let inline = "inline"
    }

    /// A conflict version as its record describes it.
    package struct Version: Sendable, Hashable {
        /// The record name.
        package var recordName: String
        /// The item's record name.
        package var itemID: String
        /// The item's path when the version was made.
        package var path: String
        /// The device that made the content.
        package var device: String
        /// The content's modification time in milliseconds since 1970.
        package var modifiedMilliseconds: Int64
        /// Size in bytes.
        package var size: Int64
        /// SHA-256 of the content, hex (empty when unknown).
        package var contentHash: String

        /// A version from its parts.
        package init(recordName: String, itemID: String, path: String, device: String, modifiedMilliseconds: Int64, size: Int64,
                    contentHash: String) {
            self.recordName = recordName
            self.itemID = itemID
            self.path = path
            self.device = device
            self.modifiedMilliseconds = modifiedMilliseconds
            self.size = size
            self.contentHash = contentHash
        }

        /// The modification time as a date.
        package var modificationDate: Date { Date(timeIntervalSince1970: Double(modifiedMilliseconds) / 1000) }
    }

    /// The record name of the conflict version whose persistent identifier is `versionID` on the
    /// device that made it.
    package static func recordName(forVersion versionID: String) -> String { "conflict-" + versionID }

    /// Milliseconds since 1970 of `date` (rounded to the nearest).
    package static func milliseconds(_ date: Date?) -> Int64 {
        guard let date else { return 0 }
        return Int64((date.timeIntervalSince1970 * 1000).rounded())
    }

    /// Reads a conflict version from a fetched record; nil when it is not a well-formed one.
    package static func version(from record: Record) -> Version? {
        guard record.recordType == recordType, let item = record[Field.item]?.referenceValue else { return nil }
        return Version(recordName: record.recordID.recordName, itemID: item.recordID.recordName,
                       path: record[Field.path]?.stringValue ?? "", device: record[Field.device]?.stringValue ?? "",
                       modifiedMilliseconds: record[Field.modified]?.int64Value ?? 0, size: record[Field.size]?.int64Value ?? 0,
                       contentHash: record[Field.contentHash]?.stringValue ?? "")
    }

    /// A new record for `version` (its content fields are the caller's).
    package static func record(_ version: Version) -> Record {
        var record = Record(recordType: recordType, recordID: Record.ID(recordName: version.recordName, zoneID: SyncRecord.zoneID))
        record[Field.item] = .reference(Reference(recordID: Record.ID(recordName: version.itemID, zoneID: SyncRecord.zoneID), action: .deleteSelf))
        record[Field.path] = .string(version.path)
        record[Field.device] = .string(version.device)
        record[Field.modified] = .int64(version.modifiedMilliseconds)
        record[Field.size] = .int64(version.size)
        record[Field.contentHash] = .string(version.contentHash)
        return record
    }
}
