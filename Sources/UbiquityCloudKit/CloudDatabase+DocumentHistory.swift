// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire

/// The synced folder's history on the server (a Ubiquity extension of CloudKit Web Services:
/// the `documents/…` operations of the private database): a document's versions and Recently
/// Deleted. Use them on ``CloudContainer/privateCloudDatabase`` of the synced folder's container
/// (`iCloud.org.ubiquity.Drive`). Every restore reaches every device as any other change does.
extension CloudDatabase {
    /// The versions the server keeps of the document at `path` (relative to the synced folder),
    /// newest first; the first is its current content.
    public func documentVersions(atPath path: String) async throws -> [DocumentVersion] {
        try await versions(["path": .string(path)])
    }

    /// The versions the server keeps of the document whose record is `recordName` (also after
    /// it was deleted), newest first.
    public func documentVersions(recordName: String) async throws -> [DocumentVersion] {
        try await versions(["recordName": .string(recordName)])
    }

    private func versions(_ body: [String: JSONValue]) async throws -> [DocumentVersion] {
        let answer = try await send("documents/versions", body: .object(body))
        return try CloudContainer.unexpected("documents/versions") {
            try (answer.objectValue?["versions"]?.arrayValue ?? []).map(DocumentVersion.init(json:))
        }
    }

    /// Puts version `id` back as its document's content: a new upload of that content, which
    /// every device downloads. A document in Recently Deleted comes back with it.
    /// - Returns: the document's path.
    @discardableResult
    public func restoreDocumentVersion(_ id: Int64) async throws -> String {
        let answer = try await send("documents/versions/restore", body: .object(["versionID": .number(Double(id))]))
        return answer.objectValue?["path"]?.stringValue ?? ""
    }

    /// Recently Deleted, newest first. Items deleted with a folder are counted in its
    /// ``DeletedDocument/containedItemCount``, not listed.
    public func recentlyDeletedDocuments() async throws -> [DeletedDocument] {
        let answer = try await send("documents/trash", body: .object([:]))
        return try CloudContainer.unexpected("documents/trash") {
            try (answer.objectValue?["items"]?.arrayValue ?? []).map(DeletedDocument.init(json:))
        }
    }

    /// Restores items from Recently Deleted (with what was deleted with them, and the deleted
    /// folders they were in) under their old paths, on every device.
    /// - Returns: the restored items' paths.
    @discardableResult
    public func restoreDeletedDocuments(_ ids: [Int64]) async throws -> [String] {
        let answer = try await send("documents/trash/restore", body: .object(["ids": .array(ids.map { .number(Double($0)) })]))
        return (answer.objectValue?["restored"]?.arrayValue ?? []).compactMap { $0.objectValue?["path"]?.stringValue }
    }

    /// Deletes items from Recently Deleted for good, with their versions.
    /// - Returns: how many entries were deleted (with those deleted inside folders).
    @discardableResult
    public func permanentlyDeleteDocuments(_ ids: [Int64]) async throws -> Int {
        let answer = try await send("documents/trash/delete", body: .object(["ids": .array(ids.map { .number(Double($0)) })]))
        return Int(answer.objectValue?["deleted"]?.doubleValue ?? 0)
    }

    /// Empties Recently Deleted for good.
    /// - Returns: how many entries were deleted.
    @discardableResult
    public func emptyRecentlyDeleted() async throws -> Int {
        let answer = try await send("documents/trash/delete", body: .object(["all": .bool(true)]))
        return Int(answer.objectValue?["deleted"]?.doubleValue ?? 0)
    }
}
