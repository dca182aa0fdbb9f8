// SPDX-License-Identifier: Apache-2.0
import Foundation
import Ubiquity
import UbiquityCore
import UbiquityWire
import UbiquityCloudKit

/// The kind of a synced item.
package enum SyncItemKind: String, Sendable, Hashable, Codable {
    /// A regular file (its content is an asset).
    case file
    /// A folder.
    case folder
    /// A symbolic link (stored as its target, never followed).
    case symlink
}

/// What sync knows about an item's local state: its kind, what `lstat` says (the quick check)
/// and, when read, its content hash. A value with no I/O.
package struct SyncStat: Sendable, Hashable {
    /// The kind.
    package var kind: SyncItemKind
    /// Size in bytes (0 for folders).
    package var size: Int64
    /// Modification time in nanoseconds (0 for folders: their times change with their children).
    package var modifiedNanoseconds: Int64
    /// The inode.
    package var inode: UInt64
    /// The permission bits.
    package var mode: UInt32
    /// The inode's birth time in nanoseconds since 1970, when known (``FileStamp/birthNanoseconds``):
    /// evidence of identity only, not part of the stat's equality (the index keeps it less
    /// precisely than `statx` reports it).
    package var birthNanoseconds: Int64?

    /// A stat from its parts.
    package init(kind: SyncItemKind, size: Int64, modifiedNanoseconds: Int64, inode: UInt64, mode: UInt32, birthNanoseconds: Int64? = nil) {
        self.kind = kind
        self.size = size
        self.modifiedNanoseconds = modifiedNanoseconds
        self.inode = inode
        self.mode = mode
        self.birthNanoseconds = birthNanoseconds
    }

    /// The stat of a ``FileStamp``.
    package init(_ stamp: FileStamp) {
        kind = stamp.isSymbolicLink ? .symlink : stamp.isDirectory ? .folder : .file
        size = kind == .folder ? 0 : stamp.size
        modifiedNanoseconds = kind == .folder ? 0 : stamp.modificationNanoseconds
        inode = stamp.inode
        mode = stamp.mode
        birthNanoseconds = stamp.birthNanoseconds
    }

    /// Whether `self` and `other` are one life of their inode: nil when either lacks its birth
    /// time; false when the times differ by more than a millisecond (the index's precision is
    /// better than a microsecond), so the inode was freed and handed out again in between.
    package func sameBirth(as other: SyncStat) -> Bool? {
        guard inode == other.inode, let birth = birthNanoseconds, let otherBirth = other.birthNanoseconds else { return nil }
        return abs(birth - otherBirth) <= 1_000_000
    }

    /// Whether the stats agree on everything but the birth time.
    package static func == (lhs: SyncStat, rhs: SyncStat) -> Bool {
        lhs.kind == rhs.kind && lhs.size == rhs.size && lhs.modifiedNanoseconds == rhs.modifiedNanoseconds && lhs.inode == rhs.inode
            && lhs.mode == rhs.mode
    }

    /// Hashes what ``==`` compares.
    package func hash(into hasher: inout Hasher) {
        hasher.combine(kind)
        hasher.combine(size)
        hasher.combine(modifiedNanoseconds)
        hasher.combine(inode)
        hasher.combine(mode)
    }

    /// Whether the item may have changed since `other` was recorded: kind, size, modification
    /// time or inode differ. (A mode change alone is not a content change.)
    package func differs(from other: SyncStat) -> Bool {
        kind != other.kind || size != other.size || modifiedNanoseconds != other.modifiedNanoseconds || inode != other.inode
    }
}

/// An item as the server has it: the fields of its `UbiquityItem` record.
package struct RemoteItem: Sendable, Hashable {
    /// The record name (the item's stable ID).
    package var id: String
    /// The record's change tag.
    package var changeTag: String?
    /// The path relative to the synced folder.
    package var path: String
    /// The kind.
    package var kind: SyncItemKind
    /// Size in bytes.
    package var size: Int64
    /// Modification time in milliseconds since 1970.
    package var modifiedMilliseconds: Int64
    /// SHA-256 of the content (hex); for symlinks of the target; empty for folders.
    package var contentHash: String
    /// The permission bits.
    package var mode: UInt32
    /// A symbolic link's target.
    package var target: String?

    /// An item from its parts.
    package init(id: String, changeTag: String?, path: String, kind: SyncItemKind, size: Int64 = 0, modifiedMilliseconds: Int64 = 0,
                contentHash: String = "", mode: UInt32 = 0o644, target: String? = nil) {
        self.id = id
        self.changeTag = changeTag
        self.path = path
        self.kind = kind
        self.size = size
        self.modifiedMilliseconds = modifiedMilliseconds
        self.contentHash = contentHash
        self.mode = mode
        self.target = target
    }
}

/// The record format of synced items (`docs/sync.md`).
package enum SyncRecord {
    /// The record type.
    package static let recordType = DocumentItemRecord.recordType
    /// The zone: the private database's reserved documents zone (`_ubiquityDocuments`).
    package static let zoneName = DocumentItemRecord.zoneName
    /// The zone's ID.
    package static var zoneID: RecordZone.ID { RecordZone.ID(zoneName: zoneName) }
    /// The default container of the sync folder.
    package static let defaultContainer = DocumentItemRecord.container

    /// Field names.
    package enum Field {
        /// The relative path (UTF-8).
        package static let path = DocumentItemRecord.Field.path
        /// `file`, `folder` or `symlink`.
        package static let kind = DocumentItemRecord.Field.kind
        /// Size in bytes.
        package static let size = DocumentItemRecord.Field.size
        /// Modification time in milliseconds.
        package static let modified = DocumentItemRecord.Field.modified
        /// SHA-256 of the content, hex.
        package static let contentHash = DocumentItemRecord.Field.contentHash
        /// Permission bits.
        package static let mode = DocumentItemRecord.Field.mode
        /// A symbolic link's target.
        package static let target = DocumentItemRecord.Field.target
        /// The content as an asset (files larger than ``inlineLimit``; empty files have none).
        package static let content = DocumentItemRecord.Field.content
        /// The content in the record itself (BYTES; files of 1 byte up to ``inlineLimit``).
        package static let inline = DocumentItemRecord.Field.inline
    }

    /// The largest file whose content travels in the record (``Field/inline``) instead of as an
    /// asset: no asset round trips (well under CloudKit's 1 MB record limit).
    package static let inlineLimit: Int64 = 64 << 10

    /// Reads an item from a fetched record; nil when it is not a well-formed item.
    package static func item(from record: Record) -> RemoteItem? {
        guard record.recordType == recordType,
              let path = record[Field.path]?.stringValue, !path.isEmpty,
              let kind = record[Field.kind]?.stringValue.flatMap(SyncItemKind.init(rawValue:)) else { return nil }
        return RemoteItem(
            id: record.recordID.recordName, changeTag: record.recordChangeTag, path: path, kind: kind,
            size: record[Field.size]?.int64Value ?? 0, modifiedMilliseconds: record[Field.modified]?.int64Value ?? 0,
            contentHash: record[Field.contentHash]?.stringValue ?? "", mode: UInt32(truncatingIfNeeded: record[Field.mode]?.int64Value ?? 0o644),
            target: record[Field.target]?.stringValue)
    }

    /// A record to save for item `id`: an update of the version `changeTag` (only the fields set
    /// afterwards are sent), or a new record when `changeTag` is nil.
    package static func record(id: String, changeTag: String?) throws -> Record {
        guard let changeTag else {
            return Record(recordType: recordType, recordID: Record.ID(recordName: id, zoneID: zoneID))
        }
        let json: JSONValue = .object([
            "recordName": .string(id), "recordType": .string(recordType), "recordChangeTag": .string(changeTag),
        ])
        guard let record = try Record.fromCloudKitJSON(json.serialized(), zoneID: zoneID).first else {
            throw UbiquityError(.protocolError, "could not make the record of item \(id)")
        }
        return record
    }
}
