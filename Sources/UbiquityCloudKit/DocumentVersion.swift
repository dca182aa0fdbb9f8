// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// A version of a synced document that the server keeps: one upload of its content. The server
/// keeps every upload and thins them as Nextcloud does (all from the last 10 seconds, then one
/// per 10 seconds for a minute, per minute for an hour, per hour for a day, per day for 30 days,
/// then one per week), within the user's quota.
public struct DocumentVersion: Sendable, Hashable, Identifiable {
    /// The version's ID (give it to ``CloudDatabase/restoreDocumentVersion(_:)``).
    public var id: Int64
    /// The document's path in the synced folder when this version was saved.
    public var path: String
    /// When the server received it.
    public var savedAt: Date
    /// The device (or user) that uploaded it.
    public var savedBy: String
    /// Its size in bytes.
    public var size: Int64
    /// SHA-256 of its content, hex.
    public var contentHash: String
    /// Whether it is the document's current content.
    public var isCurrent: Bool

    /// Makes a version.
    public init(id: Int64, path: String, savedAt: Date, savedBy: String, size: Int64, contentHash: String, isCurrent: Bool) {
        self.id = id
        self.path = path
        self.savedAt = savedAt
        self.savedBy = savedBy
        self.size = size
        self.contentHash = contentHash
        self.isCurrent = isCurrent
    }

    init(json: JSONValue) throws {
        let reader = try WireReader(json, path: "")
        id = try reader.integer("id") ?? 0
        path = try reader.string("path") ?? ""
        savedAt = Date(timeIntervalSince1970: Double(try reader.integer("savedAt") ?? 0) / 1000)
        savedBy = try reader.string("savedBy") ?? ""
        size = try reader.integer("size") ?? 0
        contentHash = try reader.string("contentHash") ?? ""
        isCurrent = try reader.bool("current") ?? false
    }
}
