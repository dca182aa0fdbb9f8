// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// One item of the synced folder as the web's Drive shows it: a live `UbiquityItem` record.
package struct DriveItem: Sendable, Hashable {
    /// The record name.
    package var recordName: String
    /// The path relative to the synced folder.
    package var path: String
    /// File, folder or link.
    package var kind: DocumentItemRecord.Kind
    /// Size in bytes.
    package var size: Int64
    /// Modification time, milliseconds since 1970.
    package var modified: Int64
    /// The record's change tag.
    package var changeTag: String
    /// The content asset, when the content is not inline.
    package var asset: WireAsset?
    /// The inline content, when small.
    package var inline: Data?

    /// The last path component.
    package var name: String { path.split(separator: "/").last.map(String.init) ?? path }
    /// The folder it is in (`""` for the top).
    package var parent: String { DriveItem.parent(of: path) }

    /// The item of a live record; nil for other records and tombstones.
    package init?(_ record: StoredRecord) {
        guard !record.deleted, record.recordType == DocumentItemRecord.recordType,
              let path = record.fields[DocumentItemRecord.Field.path]?.stringValue, !path.isEmpty,
              let kind = record.fields[DocumentItemRecord.Field.kind]?.stringValue.flatMap(DocumentItemRecord.Kind.init(rawValue:)) else { return nil }
        recordName = record.recordName
        self.path = path
        self.kind = kind
        size = record.fields[DocumentItemRecord.Field.size]?.int64Value ?? 0
        modified = record.fields[DocumentItemRecord.Field.modified]?.int64Value ?? record.modified.timestamp
        changeTag = record.changeTag
        asset = record.fields[DocumentItemRecord.Field.content]?.assetValue
        if case .bytes(let data) = record.fields[DocumentItemRecord.Field.inline] { inline = data }
    }

    /// The folder a path is in (`""` for the top).
    package static func parent(of path: String) -> String {
        guard let slash = path.lastIndex(of: "/") else { return "" }
        return String(path[..<slash])
    }

    /// `folder/name`, or `name` at the top.
    package static func join(_ folder: String, _ name: String) -> String {
        folder.isEmpty ? name : folder + "/" + name
    }
}
