// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCore
import UbiquityWire

extension WireFieldValue {
    /// The value with `transform` applied to each asset (a scalar asset or a list's elements).
    package func mappingAssets(_ transform: (WireAsset) -> WireAsset) -> WireFieldValue {
        switch self {
        case .asset(let asset): return .asset(transform(asset))
        case .list(let element, let items) where element == .asset || element == nil:
            return .list(element: element, items.map { $0.mappingAssets(transform) })
        default: return self
        }
    }
}

/// One asset value of one operation of a `records/modify` request, whose receipt was checked
/// before the write transaction (checking needs the blob store, which is asynchronous).
struct AssetCheckKey: Hashable {
    var operation: Int
    var field: String
    var fileChecksum: String
    var size: Int64
}

/// The outcome of checking one receipt.
enum AssetCheck {
    /// Valid for the record type named (the request's, or the receipt's when the request named
    /// none: the batch compares it with the stored record's).
    case accepted(recordType: String)
    case refused(WireError)
}

extension RecordsEngine {
    /// Checks the receipts of every asset value that carries one, before the write transaction.
    /// Values without a receipt are checked in the transaction (they must equal the stored value).
    func checkReceipts(_ operations: [WireRecordOperation], key: DatabaseKey, zoneName: String) async -> [AssetCheckKey: AssetCheck] {
        guard let assets else { return [:] }
        var checks: [AssetCheckKey: AssetCheck] = [:]
        for (index, operation) in operations.enumerated() {
            let record = operation.record
            for (field, value) in record.fields ?? [:] {
                for case .asset(let asset) in value.elements {
                    guard let receipt = asset.receipt, let checksum = asset.fileChecksum, let size = asset.size else { continue }
                    let checkKey = AssetCheckKey(operation: index, field: field, fileChecksum: checksum, size: size)
                    guard checks[checkKey] == nil else { continue }
                    let recordType = record.recordType ?? (try? assets.signer.openReceipt(receipt))?.binding.recordType ?? ""
                    let binding = AssetBinding(container: key.container, environment: key.environment, scope: key.scope, owner: key.owner,
                                               zoneName: zoneName, recordType: recordType, fieldName: field, recordName: record.recordName)
                    do {
                        _ = try await assets.verifyReceipt(asset, binding: binding)
                        checks[checkKey] = .accepted(recordType: recordType)
                    } catch let error as WireError {
                        checks[checkKey] = .refused(error)
                    } catch {
                        logger.error("asset receipt check failed", metadata: ["error": "\(error)"])
                        checks[checkKey] = .refused(WireError(.internalError, "field \(field): the asset store failed; try again"))
                    }
                }
            }
        }
        return checks
    }

    /// The record as answered: each asset with a fresh `downloadURL` (when the server has an
    /// asset service and knows its URL).
    func presented(_ record: StoredRecord, context: Context) -> StoredRecord {
        guard let assets, let baseURL = context.baseURL, !record.deleted else { return record }
        var presented = record
        let now = Date()
        presented.fields = record.fields.mapValues { value in
            value.mappingAssets { asset in
                guard let checksum = asset.fileChecksum, let size = asset.size else { return asset }
                var answered = asset
                answered.receipt = nil
                answered.downloadURL = assets.downloadURL(fileChecksum: checksum, size: size, container: context.container, baseURL: baseURL, now: now)
                return answered
            }
        }
        return presented
    }

    /// The asset service and the base URL, or the error saying the server offers no assets.
    func assetEndpoint(_ operation: String, context: Context) throws -> (AssetService, String) {
        guard let assets, let baseURL = context.baseURL else {
            throw WireError(.badRequest, "operation \(operation) is not available on this server (it stores no assets)")
        }
        return (assets, baseURL)
    }

    /// `assets/upload`: an upload URL per requested field, for writers of the zone.
    package func requestAssetUploads(_ body: JSONValue, context: Context) async throws -> JSONValue {
        let (assets, baseURL) = try assetEndpoint("assets/upload", context: context)
        let reader = try WireReader(body, path: "")
        let zoneID = try reader.object("zoneID").map { try WireZoneID(reader: $0) } ?? .default
        let tokens = try reader.requiredArray("tokens")
        guard tokens.count <= WireLimits.assetTokensPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(tokens.count) tokens; assets/upload takes at most \(WireLimits.assetTokensPerRequest)")
        }
        var requested: [(recordType: String, fieldName: String, recordName: String?)] = []
        for (index, token) in tokens.enumerated() {
            let item = try WireReader(token, path: "tokens[\(index)]")
            let recordType = try item.requiredString("recordType")
            let fieldName = try item.requiredString("fieldName")
            guard !recordType.isEmpty else { throw WireError(.badRequest, "tokens[\(index)].recordType: expected a record type name") }
            guard !fieldName.isEmpty else { throw WireError(.badRequest, "tokens[\(index)].fieldName: expected a field name") }
            requested.append((recordType, fieldName, try item.string("recordName")))
        }
        let key = try context.databaseKey(forWriting: true)
        try context.checkOwner(zoneID)
        let usage: StoredUsage = try await store.read { tx in
            guard let database = try await tx.database(key) else {
                if !zoneID.isDefault, !(key.scope == .private && ReservedZone.all.contains(zoneID.zoneName)) {
                    throw WireError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")
                }
                return StoredUsage()
            }
            if try await tx.zone(database: database.id, name: zoneID.zoneName) == nil, !zoneID.isDefault,
               !(key.scope == .private && ReservedZone.all.contains(zoneID.zoneName)) {
                throw WireError(.zoneNotFound, "zone \(zoneID.zoneName) does not exist")
            }
            return try await tx.databaseUsage(database: database.id)
        }
        if let limit = quotas.limit(for: key), usage.total >= limit {
            throw WireError(.quotaExceeded, "the \(key.scope == .public ? "public database" : "private database") uses \(usage.total) bytes of its \(limit)-byte quota; delete records or assets first")
        }
        let now = Date()
        let answered: [JSONValue] = requested.map { item in
            // Without a record name the receipt is good for any record (CloudKit answers a random
            // name, which the client may use).
            let binding = AssetBinding(container: key.container, environment: key.environment, scope: key.scope, owner: key.owner,
                                       zoneName: zoneID.zoneName, recordType: item.recordType, fieldName: item.fieldName, recordName: item.recordName)
            return .object(["recordName": .string(item.recordName ?? UUID().uuidString.lowercased()), "fieldName": .string(item.fieldName),
                            "url": .string(assets.uploadURL(for: binding, baseURL: baseURL, now: now))])
        }
        return .object(["tokens": .array(answered)])
    }

    /// `assets/rereference`: fresh receipts for the assets stored in fields of existing records,
    /// to save them in other records of the same type and field.
    ///
    /// Takes `{"zoneID", "assets": [{"recordName", "fieldName"}]}` (also `"tokens"` for
    /// `"assets"`, and a `zoneID` per item); answers `{"assets": [asset dictionary]}`, each with
    /// `recordName` and `fieldName`, one per asset (a list field gives one per element), or an
    /// error dictionary for a record or field that does not exist.
    package func rereferenceAssets(_ body: JSONValue, context: Context) async throws -> JSONValue {
        let (assets, _) = try assetEndpoint("assets/rereference", context: context)
        let reader = try WireReader(body, path: "")
        let defaultZone = try reader.object("zoneID").map { try WireZoneID(reader: $0) } ?? .default
        let listKey = try reader.value("assets") != nil ? "assets" : (reader.value("tokens") != nil ? "tokens" : "assets")
        let items = try reader.requiredArray(listKey)
        guard items.count <= WireLimits.assetTokensPerRequest else {
            throw WireError(.badRequest, "limit exceeded: \(items.count) assets; assets/rereference takes at most \(WireLimits.assetTokensPerRequest)")
        }
        var requested: [(zoneID: WireZoneID, recordName: String, fieldName: String)] = []
        for (index, item) in items.enumerated() {
            let itemReader = try WireReader(item, path: "\(listKey)[\(index)]")
            let zoneID = try itemReader.object("zoneID").map { try WireZoneID(reader: $0) } ?? defaultZone
            try context.checkOwner(zoneID)
            requested.append((zoneID, try itemReader.requiredString("recordName"), try itemReader.requiredString("fieldName")))
        }
        let key = try context.databaseKey(forWriting: true)
        let wanted = requested
        let found: [StoredRecord?] = try await store.read { tx in
            var zones: [String: StoredZone?] = [:]
            var found: [StoredRecord?] = []
            for item in wanted {
                if zones[item.zoneID.zoneName] == nil {
                    zones[item.zoneID.zoneName] = .some(try await RecordsEngine.readZone(tx, key: key, zoneID: item.zoneID))
                }
                guard let zone = zones[item.zoneID.zoneName] ?? nil else {
                    found.append(nil)
                    continue
                }
                found.append(try await tx.record(zone: zone.id, name: item.recordName).flatMap { $0.deleted ? nil : $0 })
            }
            return found
        }
        var answered: [JSONValue] = []
        for (item, record) in zip(requested, found) {
            guard let record else {
                var error = WireError(.notFound, "record \(item.recordName) does not exist")
                error.recordName = item.recordName
                answered.append(error.json())
                continue
            }
            let values = (record.fields[item.fieldName]?.elements ?? []).compactMap { value -> WireAsset? in
                if case .asset(let asset) = value { return asset }
                return nil
            }
            guard !values.isEmpty else {
                var error = WireError(.notFound, "field \(item.fieldName) of record \(item.recordName) holds no asset")
                error.recordName = item.recordName
                answered.append(error.json())
                continue
            }
            let binding = AssetBinding(container: key.container, environment: key.environment, scope: key.scope, owner: key.owner,
                                       zoneName: item.zoneID.zoneName, recordType: record.recordType, fieldName: item.fieldName)
            for value in values {
                do {
                    guard let checksum = value.fileChecksum, let size = value.size else {
                        throw WireError(.notFound, "field \(item.fieldName) of record \(item.recordName) holds an asset without fileChecksum and size")
                    }
                    let fresh = try await assets.rereferenceReceipt(fileChecksum: checksum, size: size, binding: binding)
                    guard case .object(var members) = fresh.json else { continue }
                    members["recordName"] = .string(item.recordName)
                    members["fieldName"] = .string(item.fieldName)
                    answered.append(.object(members))
                } catch var error as WireError {
                    error.recordName = item.recordName
                    answered.append(error.json())
                }
            }
        }
        return .object(["assets": .array(answered)])
    }

    /// Deletes stored asset content no live record refers to and older than `olderThan` (content
    /// uploaded but not saved in a record yet survives while it is younger).
    /// - Returns: what was deleted, or nil without an asset service.
    @discardableResult
    package func collectAssetGarbage(olderThan: Date) async throws -> BlobGarbageReport? {
        guard let assets else { return nil }
        let referenced = try await store.read { tx in try await tx.referencedAssetChecksums() }
        let report = try await assets.store.collectGarbage(referenced: referenced, olderThan: olderThan)
        logger.info("asset garbage collected", metadata: ["report": "\(report)"])
        return report
    }
}
