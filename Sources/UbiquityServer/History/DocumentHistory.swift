// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

/// The synced folder's history as a user reaches it (the `documents/…` operations, the CLI's
/// `ubiq trash` and `ubiq versions`, the web's Drive): a document's versions, restoring one,
/// Recently Deleted, restoring from it and deleting from it for good.
///
/// What ``DocumentHistoryRecorder`` kept is read here; every restore is a `records/modify` of
/// the user's own documents zone through ``RecordsEngine`` (change tags, quotas, notifications),
/// so it reaches every device as any other change does, and is itself a new version.
package struct DocumentHistory: Sendable {
    /// The engine restores go through.
    package let engine: RecordsEngine
    /// How long deleted items stay in Recently Deleted, in days.
    package let trashDays: Int

    /// Items deleted within this many milliseconds of a deleted folder, at paths inside it, were
    /// deleted with it: they are listed and restored with it.
    static let deletedTogether: Int64 = 60_000

    /// Makes the history of `engine`'s store.
    package init(engine: RecordsEngine, trashDays: Int = 30) {
        self.engine = engine
        self.trashDays = trashDays
    }

    // MARK: Versions

    /// A document's versions, newest first (`documents/versions`): `{"path", "recordName",
    /// "versions": [{"id", "savedAt", "savedBy", "size", "contentHash", "current"}]}`. The document
    /// is named by `recordName` or by the `path` of a live item.
    package func versions(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let reader = try WireReader(body, path: "")
        let key = try Self.documentsKey(context)
        let named = try reader.string("recordName")
        let path = try reader.string("path")
        guard named != nil || path != nil else { throw WireError(.badRequest, "give the document's path or recordName") }
        let (recordName, versions): (String, [StoredItemVersion]) = try await engine.store.read { tx in
            guard let database = try await tx.database(key) else { throw Self.noDocument(path ?? named ?? "") }
            let recordName: String
            if let named {
                recordName = named
            } else {
                guard let found = try await Self.liveItem(at: path ?? "", key: key, tx: tx) else { throw Self.noDocument(path ?? "") }
                recordName = found.recordName
            }
            return (recordName, try await tx.historyStore().itemVersions(database: database.id, recordName: recordName))
        }
        var writer = WireWriter()
        writer.set("recordName", recordName)
        writer.set("path", path ?? versions.first?.path)
        writer.set("versions", .array(versions.map(Self.versionJSON)))
        return writer.json
    }

    /// Puts an earlier version back as the document's content (`documents/versions/restore`,
    /// `{"versionID"}`): a new upload of that content, dated now. A document in Recently
    /// Deleted comes back with it. Answers `{"recordName", "path", "versionID"}`.
    package func restoreVersion(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let reader = try WireReader(body, path: "")
        guard let id = try reader.integer("versionID") else { throw WireError(.badRequest, "versionID: expected the number of a version (`documents/versions` lists them)") }
        let key = try Self.documentsKey(context)
        let (version, current): (StoredItemVersion, StoredRecord?) = try await engine.store.read { tx in
            guard let database = try await tx.database(key),
                  let version = try await tx.historyStore().itemVersion(database: database.id, id: id) else {
                throw WireError(.notFound, "versionID \(id): no such version of your documents")
            }
            guard let zone = try await tx.zone(database: database.id, name: DocumentItemRecord.zoneName) else { return (version, nil) }
            return (version, try await tx.record(zone: zone.id, name: version.recordName))
        }
        var fields = try StoredRecord.decodeFields(version.fieldsJSON)
        fields[DocumentItemRecord.Field.modified] = .int64(engine.timestamp)
        if let current, !current.deleted {
            var kept = current.fields
            for name in Self.contentFields { kept[name] = fields[name] }
            try await save(.replace, recordName: version.recordName, changeTag: current.changeTag, fields: kept, context: context)
        } else {
            try await restoreParents(of: fields[DocumentItemRecord.Field.path]?.stringValue ?? version.path, context: context)
            try await save(.create, recordName: version.recordName, changeTag: nil, fields: fields, context: context)
            try await engine.store.write { tx in
                guard let database = try await tx.database(key) else { return }
                let history = try tx.historyStore()
                let entries = try await history.trashedItems(database: database.id).filter { $0.recordName == version.recordName }
                try await history.deleteTrashedItems(ids: entries.map(\.id))
            }
        }
        var writer = WireWriter()
        writer.set("recordName", version.recordName)
        writer.set("path", fields[DocumentItemRecord.Field.path]?.stringValue ?? version.path)
        writer.set("versionID", id)
        return writer.json
    }

    /// The fields a version's content is: what restoring it changes (the path, mode and kind stay).
    static let contentFields = [DocumentItemRecord.Field.contentHash, DocumentItemRecord.Field.size, DocumentItemRecord.Field.modified,
                                DocumentItemRecord.Field.inline, DocumentItemRecord.Field.content]

    // MARK: Recently Deleted

    /// Recently Deleted (`documents/trash`), newest first: `{"items": [{"id", "recordName",
    /// "path", "kind", "deletedAt", "deletedBy", "size", "expiresAt", "contains"}], "days"}`;
    /// what was deleted with a folder is counted in its `contains`, not listed.
    package func trash(context: RecordsEngine.Context) async throws -> JSONValue {
        let key = try Self.documentsKey(context)
        let items: [StoredTrashedItem] = try await engine.store.read { tx in
            guard let database = try await tx.database(key) else { return [] }
            return try await tx.historyStore().trashedItems(database: database.id)
        }
        let groups = Self.grouped(items)
        let days = Int64(trashDays)
        return .object([
            "days": .number(Double(trashDays)),
            "items": .array(groups.map { group in
                var json = Self.trashedJSON(group.top)
                json["expiresAt"] = .number(Double(group.top.deletedAt + days * 86_400_000))
                json["contains"] = .number(Double(group.inside.count))
                return .object(json)
            }),
        ])
    }

    /// Restores items from Recently Deleted (`documents/trash/restore`, `{"ids": [id]}`), each
    /// with what was deleted with it and the deleted folders it was in, under the names and
    /// record names they had. Answers `{"restored": [{"id", "path", "recordName"}]}`.
    package func restoreTrashed(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let ids = try Self.ids(body)
        let key = try Self.documentsKey(context)
        let all: [StoredTrashedItem] = try await engine.store.read { tx in
            guard let database = try await tx.database(key) else { return [] }
            return try await tx.historyStore().trashedItems(database: database.id)
        }
        let groups = Self.grouped(all)
        var restored: [JSONValue] = []
        for id in ids {
            guard let group = groups.first(where: { $0.top.id == id }) ?? all.first(where: { $0.id == id }).map({ TrashGroup(top: $0, inside: []) }) else {
                throw WireError(.notFound, "id \(id): not in Recently Deleted (it may have been restored, deleted for good or expired)")
            }
            try await restoreParents(of: group.top.path, context: context)
            // folders before what they hold
            let entries = ([group.top] + group.inside).sorted { $0.path.utf8.count < $1.path.utf8.count }
            for start in stride(from: 0, to: entries.count, by: WireLimits.operationsPerRequest) {
                let chunk = try await withFields(Array(entries[start..<min(start + WireLimits.operationsPerRequest, entries.count)]), key: key)
                try await saveAll(chunk.map { entry in (entry.recordName, try StoredRecord.decodeFields(entry.fieldsJSON)) }, context: context)
                let done = chunk.map(\.id)
                try await engine.store.write { tx in try await tx.historyStore().deleteTrashedItems(ids: done) }
            }
            restored.append(.object(["id": .number(Double(id)), "path": .string(group.top.path), "recordName": .string(group.top.recordName)]))
        }
        return .object(["restored": .array(restored)])
    }

    /// Deletes items from Recently Deleted for good (`documents/trash/delete`: `{"ids": [id]}`,
    /// or `{"all": true}` to empty it), with what was deleted with them and their versions.
    /// Answers `{"deleted": count}`.
    package func deleteTrashed(_ body: JSONValue, context: RecordsEngine.Context) async throws -> JSONValue {
        let reader = try WireReader(body, path: "")
        let all = try reader.bool("all") ?? false
        let ids = all ? [] : try Self.ids(body)
        let key = try Self.documentsKey(context)
        let count: Int = try await engine.store.write { tx in
            guard let database = try await tx.database(key) else { return 0 }
            let history = try tx.historyStore()
            let items = try await history.trashedItems(database: database.id)
            var doomed: [StoredTrashedItem]
            if all {
                doomed = items
            } else {
                let groups = Self.grouped(items)
                doomed = []
                for id in ids {
                    guard let group = groups.first(where: { $0.top.id == id }) ?? items.first(where: { $0.id == id }).map({ TrashGroup(top: $0, inside: []) }) else {
                        throw WireError(.notFound, "id \(id): not in Recently Deleted")
                    }
                    doomed += [group.top] + group.inside
                }
            }
            try await history.deleteTrashedItems(ids: doomed.map(\.id))
            // their versions go too, unless the record lives again
            var live: [String: StoredRecord] = [:]
            if let zone = try await tx.zone(database: database.id, name: DocumentItemRecord.zoneName) {
                live = try await tx.records(zone: zone.id, names: doomed.map(\.recordName))
            }
            try await history.deleteItemVersions(database: database.id, recordNames: doomed.map(\.recordName).filter { live[$0].map(\.deleted) ?? true })
            return doomed.count
        }
        return .object(["deleted": .number(Double(count))])
    }

    /// Forgets what was deleted more than ``trashDays`` days before `now` (the periodic task).
    @discardableResult
    package func pruneTrash(now: Int64) async throws -> Int {
        let cutoff = now - Int64(trashDays) * 86_400_000
        return try await engine.store.write { tx in try await tx.historyStore().pruneTrash(deletedBefore: cutoff) }
    }

    // MARK: Parts

    /// Deleted items and what was deleted with them.
    struct TrashGroup {
        var top: StoredTrashedItem
        var inside: [StoredTrashedItem]
    }

    /// Groups deleted items (newest first) under the deleted folders they were deleted with.
    static func grouped(_ items: [StoredTrashedItem]) -> [TrashGroup] {
        let folders = items.filter { $0.kind == DocumentItemRecord.Kind.folder.rawValue }
        func container(of item: StoredTrashedItem) -> StoredTrashedItem? {
            // the outermost deleted folder it was deleted with
            folders.filter { folder in
                folder.id != item.id && item.path.hasPrefix(folder.path + "/") && abs(item.deletedAt - folder.deletedAt) <= deletedTogether
            }.min { $0.path.utf8.count < $1.path.utf8.count }
        }
        var groups: [TrashGroup] = []
        var index: [Int64: Int] = [:]
        var inside: [(Int64, StoredTrashedItem)] = []
        for item in items {
            if let folder = container(of: item) {
                inside.append((folder.id, item))
            } else {
                index[item.id] = groups.count
                groups.append(TrashGroup(top: item, inside: []))
            }
        }
        for (folder, item) in inside {
            if let position = index[folder] { groups[position].inside.append(item) }
        }
        return groups
    }

    /// Makes sure the folders above `path` exist: each missing one comes back from Recently
    /// Deleted when it is there, else is created as a new folder.
    func restoreParents(of path: String, context: RecordsEngine.Context) async throws {
        let key = try Self.documentsKey(context)
        let components = path.split(separator: "/").dropLast()
        let parents = components.indices.map { components[...$0].joined(separator: "/") }
        guard !parents.isEmpty else { return }
        let missing: [(String, StoredTrashedItem?)] = try await engine.store.read { tx in
            guard let database = try await tx.database(key) else { return parents.map { ($0, nil) } }
            let trashed = try await tx.historyStore().trashedItems(database: database.id)
            var missing: [(String, StoredTrashedItem?)] = []
            for parent in parents where try await Self.liveItem(at: parent, key: key, tx: tx) == nil {
                missing.append((parent, trashed.first { $0.path == parent && $0.kind == DocumentItemRecord.Kind.folder.rawValue }))
            }
            return missing
        }
        guard !missing.isEmpty else { return }
        let fields = Dictionary(uniqueKeysWithValues: try await withFields(missing.compactMap(\.1), key: key).map { ($0.id, $0) })
        try await saveAll(missing.map { parent, found in
            let entry = found.flatMap { fields[$0.id] }
            if let entry { return (entry.recordName, try StoredRecord.decodeFields(entry.fieldsJSON)) }
            return (UUID().uuidString.lowercased(), [
                DocumentItemRecord.Field.path: .string(parent), DocumentItemRecord.Field.kind: .string(DocumentItemRecord.Kind.folder.rawValue),
                DocumentItemRecord.Field.size: .int64(0), DocumentItemRecord.Field.modified: .int64(engine.timestamp),
                DocumentItemRecord.Field.contentHash: .string(""), DocumentItemRecord.Field.mode: .int64(0o755),
            ])
        }, context: context)
        let restored = missing.compactMap { $0.1?.id }
        try await engine.store.write { tx in try await tx.historyStore().deleteTrashedItems(ids: restored) }
    }

    /// `entries` read again with their fields, in the same order (listings leave them out).
    private func withFields(_ entries: [StoredTrashedItem], key: DatabaseKey) async throws -> [StoredTrashedItem] {
        guard !entries.isEmpty else { return [] }
        let ids = entries.map(\.id)
        let full = try await engine.store.read { tx -> [StoredTrashedItem] in
            guard let database = try await tx.database(key) else { return [] }
            return try await tx.historyStore().trashedItems(database: database.id, ids: ids)
        }
        let byID = Dictionary(uniqueKeysWithValues: full.map { ($0.id, $0) })
        return try entries.map { entry in
            guard let found = byID[entry.id] else { throw WireError(.notFound, "id \(entry.id): no longer in Recently Deleted") }
            return found
        }
    }

    /// Creates records in the documents zone, atomically.
    func saveAll(_ records: [(name: String, fields: [String: WireFieldValue])], context: RecordsEngine.Context) async throws {
        let operations = records.map { record in
            WireRecordOperation(.create, WireRecord(recordName: record.name, recordType: DocumentItemRecord.recordType,
                                                    fields: withReceipts(record.fields, recordName: record.name, context: context)))
        }
        try await modify(operations, context: context)
    }

    /// Saves one record of the documents zone.
    func save(_ type: WireRecordOperation.OperationType, recordName: String, changeTag: String?, fields: [String: WireFieldValue],
              context: RecordsEngine.Context) async throws {
        let record = WireRecord(recordName: recordName, recordType: DocumentItemRecord.recordType, recordChangeTag: changeTag,
                                fields: withReceipts(fields, recordName: recordName, context: context))
        try await modify([WireRecordOperation(type, record)], context: context)
    }

    /// Runs `records/modify` on the documents zone, throwing the first operation's error.
    func modify(_ operations: [WireRecordOperation], context: RecordsEngine.Context) async throws {
        guard !operations.isEmpty else { return }
        let request = WireModifyRecordsRequest(operations: operations, zoneID: WireZoneID(zoneName: DocumentItemRecord.zoneName), atomic: true)
        let answer = try await engine.modifyRecords(request, context: context)
        // the operation that failed, rather than the others' ATOMIC_ERROR
        let errors = (answer.objectValue?["records"]?.arrayValue ?? []).compactMap { WireError(json: $0) }
        if let error = errors.first(where: { $0.code != .atomicError }) ?? errors.first { throw error }
    }

    /// `fields` with a fresh receipt on each asset the server kept (the server vouches for
    /// content it holds; a client's asset needs one too).
    private func withReceipts(_ fields: [String: WireFieldValue], recordName: String, context: RecordsEngine.Context) -> [String: WireFieldValue] {
        guard let signer = engine.assets?.signer, let key = try? Self.documentsKey(context) else { return fields }
        var fields = fields
        for (name, value) in fields {
            fields[name] = value.mappingAssets { asset in
                guard let checksum = asset.fileChecksum, let size = asset.size else { return asset }
                var signed = asset
                let binding = AssetBinding(container: key.container, environment: key.environment, scope: key.scope, owner: key.owner,
                                           zoneName: DocumentItemRecord.zoneName, recordType: DocumentItemRecord.recordType, fieldName: name,
                                           recordName: recordName)
                signed.receipt = signer.makeReceipt(for: binding, fileChecksum: checksum, size: size)
                return signed
            }
        }
        return fields
    }

    /// The live item at `path`, if any.
    static func liveItem(at path: String, key: DatabaseKey, tx: any RecordStoreTransaction) async throws -> StoredRecord? {
        guard let zone = try await tx.zone(key: key, name: DocumentItemRecord.zoneName) else { return nil }
        return try await tx.candidates(zones: [zone.id], recordType: DocumentItemRecord.recordType,
                                       conditions: [.compare(field: DocumentItemRecord.Field.path, .equal, .text(path))])
            .first { !$0.deleted && $0.fields[DocumentItemRecord.Field.path]?.stringValue == path }
    }

    /// The caller's private database (history is kept for the synced folder's documents only).
    static func documentsKey(_ context: RecordsEngine.Context) throws -> DatabaseKey {
        guard context.scope == .private else {
            throw WireError(.badRequest, "the documents' history is in the private database; use …/private/documents/…")
        }
        return try context.databaseKey(forWriting: false)
    }

    static func noDocument(_ path: String) -> WireError {
        WireError(.notFound, "no document at '\(path)' in your synced folder")
    }

    /// The `ids` of a request body.
    static func ids(_ body: JSONValue) throws -> [Int64] {
        let reader = try WireReader(body, path: "")
        let values = try reader.requiredArray("ids")
        guard !values.isEmpty else { throw WireError(.badRequest, "ids: expected at least one id (`documents/trash` lists them)") }
        return try values.enumerated().map { index, value in
            guard let number = value.doubleValue, number.rounded() == number, number > 0 else {
                throw WireError(.badRequest, "ids[\(index)]: expected the number of an item in Recently Deleted")
            }
            return Int64(number)
        }
    }

    static func versionJSON(_ version: StoredItemVersion) -> JSONValue {
        .object([
            "id": .number(Double(version.id)), "savedAt": .number(Double(version.savedAt)), "savedBy": .string(version.savedBy),
            "size": .number(Double(version.size)), "contentHash": .string(version.contentHash), "current": .bool(version.current),
            "path": .string(version.path),
        ])
    }

    static func trashedJSON(_ item: StoredTrashedItem) -> [String: JSONValue] {
        [
            "id": .number(Double(item.id)), "recordName": .string(item.recordName), "path": .string(item.path), "kind": .string(item.kind),
            "deletedAt": .number(Double(item.deletedAt)), "deletedBy": .string(item.deletedBy), "size": .number(Double(item.size)),
        ]
    }
}
