// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// An item in Recently Deleted: a document, folder or link deleted from the synced folder, which
/// the server keeps for its days (30 by default) so it can be restored on every device.
public struct DeletedDocument: Sendable, Hashable, Identifiable {
    /// The entry's ID (give it to ``CloudDatabase/restoreDeletedDocuments(_:)``).
    public var id: Int64
    /// The item's record name.
    public var recordName: String
    /// Its path when deleted.
    public var path: String
    /// `file`, `folder` or `symlink`.
    public var kind: String
    /// When it was deleted.
    public var deletedAt: Date
    /// The device (or user) that deleted it.
    public var deletedBy: String
    /// Its size in bytes (0 for folders).
    public var size: Int64
    /// When it leaves Recently Deleted for good.
    public var expiresAt: Date
    /// For a folder: how many items inside it were deleted with it (they come back with it).
    public var containedItemCount: Int

    /// Makes an entry.
    public init(id: Int64, recordName: String, path: String, kind: String, deletedAt: Date, deletedBy: String, size: Int64, expiresAt: Date,
                containedItemCount: Int) {
        self.id = id
        self.recordName = recordName
        self.path = path
        self.kind = kind
        self.deletedAt = deletedAt
        self.deletedBy = deletedBy
        self.size = size
        self.expiresAt = expiresAt
        self.containedItemCount = containedItemCount
    }

    init(json: JSONValue) throws {
        let reader = try WireReader(json, path: "")
        id = try reader.integer("id") ?? 0
        recordName = try reader.string("recordName") ?? ""
        path = try reader.string("path") ?? ""
        kind = try reader.string("kind") ?? "file"
        deletedAt = Date(timeIntervalSince1970: Double(try reader.integer("deletedAt") ?? 0) / 1000)
        deletedBy = try reader.string("deletedBy") ?? ""
        size = try reader.integer("size") ?? 0
        expiresAt = Date(timeIntervalSince1970: Double(try reader.integer("expiresAt") ?? 0) / 1000)
        containedItemCount = Int(try reader.integer("contains") ?? 0)
    }
}
