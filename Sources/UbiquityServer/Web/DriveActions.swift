// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import UbiquityCore
import UbiquityWire

/// What the web's Drive does with a user's synced folder on the server: list, search, make
/// folders, rename, move, delete and save uploads. Every change is a `records/modify` of the
/// user's own documents zone through ``RecordsEngine`` (change tags, quotas, notifications, the
/// history), so it reaches every device's folder as any other change does.
package struct DriveActions: Sendable {
    /// The engine every change goes through.
    package let engine: RecordsEngine
    /// Restores and the zone's helpers.
    package let history: DocumentHistory

    /// Makes the actions of `engine`.
    package init(engine: RecordsEngine, history: DocumentHistory) {
        self.engine = engine
        self.history = history
    }

    // MARK: Reading

    /// The live items under the folder `path` (at any depth), as records say them.
    package func descendants(of path: String, context: RecordsEngine.Context) async throws -> [DriveItem] {
        let key = try DocumentHistory.documentsKey(context)
        return try await engine.store.read { tx in
            guard let zone = try await tx.zone(key: key, name: DocumentItemRecord.zoneName) else { return [] }
            return try await tx.candidates(zones: [zone.id], recordType: DocumentItemRecord.recordType,
                                           conditions: [.prefix(field: DocumentItemRecord.Field.path, path + "/")])
                .compactMap(DriveItem.init).filter { $0.path.hasPrefix(path + "/") }
        }
    }

    /// A page of the items in `folder` (`""`: the top), folders first, then by name, from the
    /// Drive's index; and how many the folder holds.
    package func page(of folder: String, offset: Int, limit: Int, context: RecordsEngine.Context) async throws -> (items: [DriveIndexRow], total: Int) {
        let key = try DocumentHistory.documentsKey(context)
        return try await engine.store.read { tx in
            guard let database = try await tx.database(key) else { return ([], 0) }
            let page = try await tx.driveIndex().driveFolder(database: database.id, parent: folder, offset: offset, limit: limit)
            return (page.rows, page.total)
        }
    }

    /// The items in `folder`, all of them.
    package func list(folder: String, context: RecordsEngine.Context) async throws -> [DriveIndexRow] {
        try await page(of: folder, offset: 0, limit: Int.max >> 1, context: context).items
    }

    /// The items whose name contains `text` (ignoring case), folders first, at most `limit`.
    package func search(_ text: String, limit: Int = 500, context: RecordsEngine.Context) async throws -> [DriveIndexRow] {
        guard !text.isEmpty else { return [] }
        let key = try DocumentHistory.documentsKey(context)
        return try await engine.store.read { tx in
            guard let database = try await tx.database(key) else { return [] }
            return try await tx.driveIndex().driveSearch(database: database.id, text: text, limit: limit)
        }
    }

    /// The live item with this record name.
    package func item(_ recordName: String, context: RecordsEngine.Context) async throws -> DriveItem {
        let key = try DocumentHistory.documentsKey(context)
        let record = try await engine.store.read { tx -> StoredRecord? in
            guard let zone = try await tx.zone(key: key, name: DocumentItemRecord.zoneName) else { return nil }
            return try await tx.record(zone: zone.id, name: recordName)
        }
        guard let record, let item = DriveItem(record) else { throw WireError(.notFound, "no such item in your Drive (it may have been deleted)") }
        return item
    }

    // MARK: Changing

    /// Makes a folder `name` in `parent`.
    @discardableResult
    package func makeFolder(named name: String, in parent: String, context: RecordsEngine.Context) async throws -> String {
        try Self.check(name: name)
        let path = DriveItem.join(parent, name)
        try await requireFree(path, context: context)
        let recordName = UUID().uuidString.lowercased()
        try await history.saveAll([(recordName, [
            DocumentItemRecord.Field.path: .string(path), DocumentItemRecord.Field.kind: .string(DocumentItemRecord.Kind.folder.rawValue),
            DocumentItemRecord.Field.size: .int64(0), DocumentItemRecord.Field.modified: .int64(engine.timestamp),
            DocumentItemRecord.Field.contentHash: .string(""), DocumentItemRecord.Field.mode: .int64(0o755),
        ])], context: context)
        return path
    }

    /// Renames an item in its folder.
    package func rename(_ recordName: String, to name: String, context: RecordsEngine.Context) async throws {
        try Self.check(name: name)
        let item = try await item(recordName, context: context)
        try await move(item, to: DriveItem.join(item.parent, name), context: context)
    }

    /// Moves an item into the folder `folder` (`""`: the top).
    package func move(_ recordName: String, into folder: String, context: RecordsEngine.Context) async throws {
        let item = try await item(recordName, context: context)
        if !folder.isEmpty {
            guard let target = try await liveItem(at: folder, context: context), target.kind == .folder else {
                throw WireError(.badRequest, "folder: '\(folder)' is not a folder of your Drive")
            }
            if folder == item.path || folder.hasPrefix(item.path + "/") {
                throw WireError(.badRequest, "folder: a folder cannot go inside itself")
            }
        }
        try await move(item, to: DriveItem.join(folder, item.name), context: context)
    }

    /// Gives `item` (and, for a folder, everything in it) the path `path`.
    private func move(_ item: DriveItem, to path: String, context: RecordsEngine.Context) async throws {
        guard path != item.path else { return }
        try await requireFree(path, context: context)
        var moved = [(item.recordName, item.changeTag, path)]
        if item.kind == .folder {
            for inner in try await descendants(of: item.path, context: context) {
                moved.append((inner.recordName, inner.changeTag, path + inner.path.dropFirst(item.path.count)))
            }
        }
        // the folder first, then what it holds, a request at a time (each atomic)
        for start in stride(from: 0, to: moved.count, by: WireLimits.operationsPerRequest) {
            let operations = moved[start..<min(start + WireLimits.operationsPerRequest, moved.count)].map { name, tag, newPath in
                WireRecordOperation(.update, WireRecord(recordName: name, recordType: DocumentItemRecord.recordType, recordChangeTag: tag,
                                                        fields: [DocumentItemRecord.Field.path: .string(newPath)]))
            }
            try await history.modify(operations, context: context)
        }
    }

    /// Deletes an item (a folder with everything in it); it goes to Recently Deleted.
    package func delete(_ recordName: String, context: RecordsEngine.Context) async throws {
        let item = try await item(recordName, context: context)
        var doomed = [item.recordName]
        if item.kind == .folder {
            doomed += try await descendants(of: item.path, context: context)
                .sorted { $0.path.utf8.count > $1.path.utf8.count }.map(\.recordName)
            doomed = Array(doomed.dropFirst()) + [item.recordName]  // what it holds first, the folder last
        }
        for start in stride(from: 0, to: doomed.count, by: WireLimits.operationsPerRequest) {
            try await history.modify(doomed[start..<min(start + WireLimits.operationsPerRequest, doomed.count)].map {
                WireRecordOperation(.forceDelete, WireRecord(recordName: $0))
            }, context: context)
        }
    }

    /// Saves an uploaded file as `name` in `folder`: `asset` is what the asset upload URL
    /// answered (checksum, size, receipt), nil for an empty file. A name already taken gets a
    /// number (`report 2.pdf`): nothing is replaced. Returns the path it got.
    @discardableResult
    package func saveUpload(named name: String, in folder: String, asset: WireAsset?, recordName: String, modified: Int64?,
                            context: RecordsEngine.Context) async throws -> String {
        try Self.check(name: name)
        if !folder.isEmpty {
            guard let parent = try await liveItem(at: folder, context: context), parent.kind == .folder else {
                throw WireError(.badRequest, "folder: '\(folder)' is not a folder of your Drive")
            }
        }
        var hash = SHA256.hexHash([UInt8]())
        var size: Int64 = 0
        if let asset {
            guard let checksum = asset.fileChecksum, let bytes = Data(base64Encoded: checksum), bytes.count == 32, let assetSize = asset.size else {
                throw WireError(.badRequest, "the upload's answer has no SHA-256 fileChecksum and size")
            }
            hash = Hex.encode(bytes)
            size = assetSize
        }
        let path = try await freeName(name, in: folder, context: context)
        var fields: [String: WireFieldValue] = [
            DocumentItemRecord.Field.path: .string(path), DocumentItemRecord.Field.kind: .string(DocumentItemRecord.Kind.file.rawValue),
            DocumentItemRecord.Field.size: .int64(size), DocumentItemRecord.Field.modified: .int64(modified ?? engine.timestamp),
            DocumentItemRecord.Field.contentHash: .string(hash), DocumentItemRecord.Field.mode: .int64(0o644),
        ]
        if let asset { fields[DocumentItemRecord.Field.content] = .asset(asset) }
        let operation = WireRecordOperation(.create, WireRecord(recordName: recordName, recordType: DocumentItemRecord.recordType, fields: fields))
        try await history.modify([operation], context: context)
        return path
    }

    // MARK: Parts

    /// The live item at `path`.
    func liveItem(at path: String, context: RecordsEngine.Context) async throws -> DriveItem? {
        let key = try DocumentHistory.documentsKey(context)
        return try await engine.store.read { tx in try await DocumentHistory.liveItem(at: path, key: key, tx: tx).flatMap(DriveItem.init) }
    }

    /// Refuses a path that an item has.
    private func requireFree(_ path: String, context: RecordsEngine.Context) async throws {
        if try await liveItem(at: path, context: context) != nil {
            throw WireError(.exists, "an item named '\(path.split(separator: "/").last ?? "")' is already there")
        }
    }

    /// `name` in `folder`, or `name 2`, `name 3`… (before the extension) when taken.
    private func freeName(_ name: String, in folder: String, context: RecordsEngine.Context) async throws -> String {
        let taken = Set(try await list(folder: folder, context: context).map { $0.name.lowercased() })
        guard taken.contains(name.lowercased()) else { return DriveItem.join(folder, name) }
        let dot = name.lastIndex(of: ".").flatMap { $0 == name.startIndex ? nil : $0 }
        let stem = dot.map { String(name[..<$0]) } ?? name
        let suffix = dot.map { String(name[$0...]) } ?? ""
        var number = 2
        while taken.contains("\(stem) \(number)\(suffix)".lowercased()) { number += 1 }
        return DriveItem.join(folder, "\(stem) \(number)\(suffix)")
    }

    /// A name the synced folder can hold on every device.
    static func check(name: String) throws {
        guard !name.isEmpty, name != ".", name != "..", !name.contains("/"), !name.contains("\0") else {
            throw WireError(.badRequest, "name: '\(name)' cannot be a name (no '/', not empty, '.' or '..')")
        }
        guard name.utf8.count <= 255 else { throw WireError(.badRequest, "name: at most 255 bytes") }
        guard !(name.hasPrefix(".") && name.hasSuffix(".icloud")) else {
            throw WireError(.badRequest, "name: '\(name)' is the name of an evicted file's stub")
        }
    }
}
