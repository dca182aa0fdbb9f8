// SPDX-License-Identifier: Apache-2.0

/// The record format of the synced folder's items, as both sides name it: the daemon writes these
/// records (`SyncRecord` in UbiquitySync), the server keeps their history and shows them on the
/// web (`DocumentHistory`). One `UbiquityItem` record per file, folder or link in the private
/// database's reserved zone `_ubiquityDocuments` (`docs/sync.md`).
package enum DocumentItemRecord {
    /// The record type.
    package static let recordType = "UbiquityItem"
    /// The zone.
    package static let zoneName = "_ubiquityDocuments"
    /// The container of the synced folder.
    package static let container = "iCloud.org.ubiquity.Drive"

    /// Field names.
    package enum Field {
        /// The relative path (UTF-8).
        package static let path = "path"
        /// `file`, `folder` or `symlink`.
        package static let kind = "kind"
        /// Size in bytes.
        package static let size = "size"
        /// Modification time in milliseconds.
        package static let modified = "modified"
        /// SHA-256 of the content, hex.
        package static let contentHash = "contentHash"
        /// Permission bits.
        package static let mode = "mode"
        /// A symbolic link's target.
        package static let target = "target"
        /// The content as an asset (larger files; empty files have none).
        package static let content = "content"
        /// The content in the record itself (BYTES; small files).
        package static let inline = "inline"
    }

    /// The item kinds (the `kind` field's values).
    package enum Kind: String, Sendable, Hashable, Codable, CaseIterable {
        /// A regular file.
        case file
        /// A folder.
        case folder
        /// A symbolic link.
        case symlink
    }
}
