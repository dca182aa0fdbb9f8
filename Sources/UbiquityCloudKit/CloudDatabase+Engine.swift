// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityWire
import UbiquityCore

/// The requests behind the operations and convenience methods. Each function sends one
/// request per zone and per chunk of ``WireLimits/operationsPerRequest`` items, halves a
/// chunk the server refuses with "limit exceeded", and reports each item through a callback.
/// Whole-request failures are thrown; per-item failures go to the callbacks.
extension CloudDatabase {
    /// The items of one zone, in the order given, with the zone's position kept.
    static func groupedByZone<Item>(_ items: [Item], zone: (Item) -> RecordZone.ID) -> [(RecordZone.ID, [Item])] {
        var order: [RecordZone.ID] = []
        var groups: [RecordZone.ID: [Item]] = [:]
        for item in items {
            let key = zone(item)
            if groups[key] == nil { order.append(key) }
            groups[key, default: []].append(item)
        }
        return order.map { ($0, groups[$0]!) }
    }

    /// Sends `items` in chunks of at most `chunkSize`; a chunk refused with `limitExceeded`
    /// is split in half and each half retried, down to single items (whose failure goes to
    /// `failItem`).
    func sendChunked<Item>(_ items: [Item], chunkSize: Int = WireLimits.operationsPerRequest,
                           send: ([Item]) async throws -> Void, failItem: (Item, CloudKitError) -> Void) async throws {
        var start = 0
        while start < items.count {
            let end = min(start + chunkSize, items.count)
            try await sendHalving(Array(items[start..<end]), send: send, failItem: failItem)
            start = end
        }
    }

    private func sendHalving<Item>(_ items: [Item], send: ([Item]) async throws -> Void,
                                   failItem: (Item, CloudKitError) -> Void) async throws {
        do {
            try await send(items)
        } catch let error as CloudKitError where error.code == .limitExceeded {
            guard items.count > 1 else {
                failItem(items[0], error)
                return
            }
            container.logger.debug("CloudKit limit exceeded: splitting the batch", metadata: ["items": "\(items.count)"])
            let middle = items.count / 2
            try await sendHalving(Array(items[..<middle]), send: send, failItem: failItem)
            try await sendHalving(Array(items[middle...]), send: send, failItem: failItem)
        }
    }

    /// The answer element for `recordName` at `index`: the element at the same position when
    /// it is about that record (or names none), otherwise the first that names it.
    static func element(for recordName: String, at index: Int, in results: [JSONValue], key: String = "recordName") -> JSONValue? {
        if index < results.count {
            let name = results[index].objectValue?[key]?.stringValue
            if name == nil || name == recordName { return results[index] }
        }
        return results.first { $0.objectValue?[key]?.stringValue == recordName }
    }

    // MARK: records/modify

    enum ModifyItem {
        case save(Record, WireRecordOperation)
        case delete(Record.ID, WireRecordOperation)

        var recordID: Record.ID {
            switch self {
            case .save(let record, _): return record.recordID
            case .delete(let id, _): return id
            }
        }

        var operation: WireRecordOperation {
            switch self {
            case .save(_, let operation), .delete(_, let operation): return operation
            }
        }
    }

    /// The `records/modify` operation that saves `record` under `policy`.
    static func operation(for record: Record, policy: ModifyRecordsOperation.RecordSavePolicy) throws -> WireRecordOperation {
        guard !record.recordType.isEmpty else {
            throw CloudKitError(.invalidArguments, "record \(record.recordID.recordName) has no record type")
        }
        switch policy {
        case .ifServerRecordUnchanged:
            if record.recordChangeTag != nil {
                return WireRecordOperation(.update, try record.wire(keys: record.changedKeys(), includeChangeTag: true))
            }
            return WireRecordOperation(.create, try record.wire(keys: record.allKeys(), includeChangeTag: false))
        case .changedKeys:
            return WireRecordOperation(.forceUpdate, try record.wire(keys: record.changedKeys(), includeChangeTag: false))
        case .allKeys:
            return WireRecordOperation(.forceUpdate, try record.wire(keys: nil, includeChangeTag: false))
        }
    }

    /// Saves `records` and deletes `recordIDs` in `records/modify` requests. A deleted ID with a
    /// change tag in `deleteTags` is deleted only while the server's record still has that tag
    /// (`delete`); the others are deleted whatever their tag (`forceDelete`).
    func modifyRecords(saving records: [Record], deleting recordIDs: [Record.ID], deleteTags: [Record.ID: String] = [:],
                       policy: ModifyRecordsOperation.RecordSavePolicy, atomic: Bool, desiredKeys: [String]? = nil,
                       onProgress: (@Sendable (Record.ID, Double) -> Void)? = nil,
                       onSave: (Record.ID, Result<Record, CloudKitError>) -> Void,
                       onDelete: (Record.ID, Result<Void, CloudKitError>) -> Void,
                       onChangeTokens: (ModifyChangeTokens) -> Void = { _ in }) async throws {
        var items: [ModifyItem] = []
        let records = await uploadingAssets(of: records, onProgress: onProgress) { record, error in onSave(record.recordID, .failure(error)) }
        for record in records {
            do {
                items.append(.save(record, try Self.operation(for: record, policy: policy)))
            } catch {
                onSave(record.recordID, .failure(CloudKitError.wrap(error)))
            }
        }
        for id in recordIDs {
            if let tag = deleteTags[id] {
                var wire = WireRecord(recordName: id.recordName)
                wire.recordChangeTag = tag
                items.append(.delete(id, WireRecordOperation(.delete, wire)))
            } else {
                items.append(.delete(id, WireRecordOperation(.forceDelete, WireRecord(recordName: id.recordName))))
            }
        }
        // (an answer is a plain enum, not a `Result` of an optional record: Swift 6.3.1's
        // optimized code misread that shape elsewhere — docs/sync.md, "Folders before their files")
        func deliver(_ item: ModifyItem, _ answer: ModifyAnswer) {
            switch item {
            case .save(let record, _):
                switch answer {
                case .saved(let saved): onSave(record.recordID, .success(saved))
                case .done: onSave(record.recordID, .failure(CloudKitError(.internalError, "the server answered the save of \(record.recordID.recordName) without a record")))
                case .failed(var error):
                    if error.code == .serverRecordChanged { error.clientRecord = record }
                    onSave(record.recordID, .failure(error))
                }
            case .delete(let id, _):
                switch answer {
                case .saved, .done: onDelete(id, .success(()))
                case .failed(let error): onDelete(id, .failure(error))
                }
            }
        }
        for (zone, zoneItems) in Self.groupedByZone(items, zone: \.recordID.zoneID) {
            try await sendChunked(zoneItems, send: { chunk in
                let request = WireModifyRecordsRequest(operations: chunk.map(\.operation), zoneID: zone.wire, atomic: atomic,
                                                       desiredKeys: desiredKeys)
                let response = try await send("records/modify", body: request.json)
                let reader = try CloudContainer.reader(response, "records/modify")
                let results = try CloudContainer.unexpected("records/modify") { try reader.requiredArray("records") }
                // a Ubiquity server's extension: the zone's change tokens around the request
                if let before = try? reader.string("syncTokenBefore"), let after = try? reader.string("syncToken") {
                    onChangeTokens(ModifyChangeTokens(zoneID: zone, before: ServerChangeToken(rawValue: before), after: ServerChangeToken(rawValue: after)))
                }
                for (index, item) in chunk.enumerated() {
                    guard let element = Self.element(for: item.recordID.recordName, at: index, in: results) else {
                        deliver(item, .failed(CloudKitError(.internalError, "the server did not answer for record \(item.recordID.recordName)")))
                        continue
                    }
                    if let wire = WireError(json: element) {
                        deliver(item, .failed(CloudKitError(wire: wire, zone: zone)))
                    } else if case .save = item {
                        do {
                            deliver(item, .saved(try Record(wire: WireRecord(json: element, path: "records[\(index)]"), zone: zone)))
                        } catch {
                            deliver(item, .failed(CloudKitError(.internalError, "unexpected answer to records/modify: \(error)", underlying: error)))
                        }
                    } else {
                        deliver(item, .done)
                    }
                }
            }, failItem: { item, error in deliver(item, .failed(error)) })
        }
    }

    /// The server's answer for one item of a `records/modify`.
    enum ModifyAnswer {
        /// Saved: the record as the server has it now.
        case saved(Record)
        /// Done without a record (a delete).
        case done
        /// Refused, or not answered.
        case failed(CloudKitError)
    }

    // MARK: records/lookup

    func lookupRecords(_ ids: [Record.ID], desiredKeys: [String]?, onRecord: (Record.ID, Result<Record, CloudKitError>) -> Void) async throws {
        for (zone, zoneIDs) in Self.groupedByZone(ids, zone: \.zoneID) {
            try await sendChunked(zoneIDs, send: { chunk in
                let request = WireLookupRecordsRequest(records: chunk.map { .init(recordName: $0.recordName) }, zoneID: zone.wire,
                                                       desiredKeys: desiredKeys)
                let response = try await send("records/lookup", body: request.json)
                let results = try CloudContainer.unexpected("records/lookup") { try CloudContainer.reader(response, "records/lookup").requiredArray("records") }
                for (index, id) in chunk.enumerated() {
                    guard let element = Self.element(for: id.recordName, at: index, in: results) else {
                        onRecord(id, .failure(CloudKitError(.internalError, "the server did not answer for record \(id.recordName)")))
                        continue
                    }
                    onRecord(id, Self.recordResult(element, zone: zone, path: "records[\(index)]"))
                }
            }, failItem: { id, error in onRecord(id, .failure(error)) })
        }
    }

    /// A record, or the error in its place (a tombstone is `unknownItem`).
    static func recordResult(_ element: JSONValue, zone: RecordZone.ID?, path: String) -> Result<Record, CloudKitError> {
        if let wire = WireError(json: element) { return .failure(CloudKitError(wire: wire, zone: zone)) }
        do {
            let wire = try WireRecord(json: element, path: path)
            if wire.deleted { return .failure(CloudKitError(.unknownItem, "record \(wire.recordName) was deleted", serverErrorCode: nil)) }
            return .success(Record(wire: wire, zone: zone))
        } catch {
            return .failure(CloudKitError(.internalError, "unexpected record in the server's answer: \(error)", underlying: error))
        }
    }

    /// The record ID of a result element (for per-record errors and records alike).
    static func recordID(of element: JSONValue, zone: RecordZone.ID?) -> Record.ID? {
        guard let members = element.objectValue, let name = members["recordName"]?.stringValue else { return nil }
        let wireZone = members["zoneID"].flatMap { try? WireZoneID(json: $0, path: "zoneID") }
        let zoneID = zone?.matching(wireZone) ?? wireZone.map(RecordZone.ID.init(wire:)) ?? .default
        return Record.ID(recordName: name, zoneID: zoneID)
    }

    // MARK: records/query

    /// One page of a query; returns the continuation marker when more results exist.
    func queryRecords(_ query: WireQuery, zone: RecordZone.ID?, marker: String?, resultsLimit: Int?, desiredKeys: [String]?,
                      onRecord: (Record.ID, Result<Record, CloudKitError>) -> Void) async throws -> String? {
        let limit = resultsLimit.flatMap { $0 > 0 ? min($0, WireLimits.recordsPerResponse) : nil }
        let request = WireQueryRecordsRequest(query: query, zoneID: zone?.wire, resultsLimit: limit, continuationMarker: marker,
                                              desiredKeys: desiredKeys, zoneWide: zone == nil)
        let response = try await send("records/query", body: request.json)
        let reader = try CloudContainer.reader(response, "records/query")
        let results = try CloudContainer.unexpected("records/query") { try reader.array("records") ?? [] }
        for (index, element) in results.enumerated() {
            guard let id = Self.recordID(of: element, zone: zone) else { continue }
            onRecord(id, Self.recordResult(element, zone: zone, path: "records[\(index)]"))
        }
        return try CloudContainer.unexpected("records/query") { try reader.string("continuationMarker") }.flatMap { $0.isEmpty ? nil : $0 }
    }

    // MARK: changes/zone

    /// What one zone's page of changes held.
    struct ZoneChangesPage {
        var changed: [(Record.ID, Result<Record, CloudKitError>)] = []
        var deleted: [(Record.ID, String?)] = []
        var token: ServerChangeToken
        var moreComing: Bool
    }

    /// One `changes/zone` request for several zones; one result per zone, in order.
    func fetchZoneChanges(_ zones: [(RecordZone.ID, FetchRecordZoneChangesOperation.ZoneConfiguration)])
        async throws -> [Result<ZoneChangesPage, CloudKitError>] {
        let request = WireZoneChangesRequest(zones: zones.map { zone, configuration in
            WireZoneChangesRequest.Zone(zoneID: zone.wire, syncToken: configuration.previousServerChangeToken?.rawValue,
                                        desiredKeys: configuration.desiredKeys,
                                        resultsLimit: configuration.resultsLimit > 0 ? configuration.resultsLimit : nil)
        })
        let response = try await send("changes/zone", body: request.json)
        let results = try CloudContainer.unexpected("changes/zone") { try CloudContainer.reader(response, "changes/zone").requiredArray("zones") }
        return zones.enumerated().map { index, entry in
            let zone = entry.0
            let element: JSONValue? = {
                func name(_ value: JSONValue) -> String? { value.objectValue?["zoneID"]?.objectValue?["zoneName"]?.stringValue }
                if index < results.count, name(results[index]) == nil || name(results[index]) == zone.zoneName { return results[index] }
                return results.first { name($0) == zone.zoneName }
            }()
            guard let element else {
                return .failure(CloudKitError(.internalError, "the server did not answer for zone \(zone)"))
            }
            if let wire = WireError(json: element) { return .failure(CloudKitError(wire: wire, zone: zone)) }
            do {
                let reader = try WireReader(element, path: "zones[\(index)]")
                guard let token = try reader.string("syncToken") else {
                    return .failure(CloudKitError(.internalError, "the server's changes for zone \(zone) have no syncToken"))
                }
                var page = ZoneChangesPage(token: ServerChangeToken(rawValue: token), moreComing: try reader.bool("moreComing") ?? false)
                for (position, item) in (try reader.array("records") ?? []).enumerated() {
                    guard let id = Self.recordID(of: item, zone: zone) else { continue }
                    if item.objectValue?["deleted"]?.boolValue == true, WireError(json: item) == nil {
                        page.deleted.append((id, item.objectValue?["recordType"]?.stringValue))
                    } else {
                        page.changed.append((id, Self.recordResult(item, zone: zone, path: "zones[\(index)].records[\(position)]")))
                    }
                }
                return .success(page)
            } catch {
                return .failure(CloudKitError(.internalError, "unexpected answer to changes/zone: \(error)", underlying: error))
            }
        }
    }

    // MARK: changes/database

    /// What one page of database changes held.
    struct DatabaseChangesPage {
        var changed: [RecordZone.ID] = []
        var deleted: [RecordZone.ID] = []
        var purged: [RecordZone.ID] = []
        var token: ServerChangeToken
        var moreComing: Bool
    }

    func fetchDatabaseChanges(since token: ServerChangeToken?, resultsLimit: Int) async throws -> DatabaseChangesPage {
        var body = WireWriter()
        body.set("syncToken", token?.rawValue)
        if resultsLimit > 0 { body.set("resultsLimit", Int64(resultsLimit)) }
        let response = try await send("changes/database", body: body.json)
        return try CloudContainer.unexpected("changes/database") {
            let reader = try CloudContainer.reader(response, "changes/database")
            guard let newToken = try reader.string("syncToken") else {
                throw CloudKitError(.internalError, "the server's database changes have no syncToken")
            }
            var page = DatabaseChangesPage(token: ServerChangeToken(rawValue: newToken), moreComing: try reader.bool("moreComing") ?? false)
            for (index, element) in (try reader.array("zones") ?? []).enumerated() {
                let zoneReader = try WireReader(element, path: "zones[\(index)]")
                guard let zoneJSON = try zoneReader.value("zoneID") else { continue }
                let zone = RecordZone.ID(wire: try WireZoneID(json: zoneJSON, path: zoneReader.path("zoneID")))
                if try zoneReader.bool("purged") == true {
                    page.purged.append(zone)
                } else if try zoneReader.bool("deleted") == true {
                    page.deleted.append(zone)
                } else {
                    page.changed.append(zone)
                }
            }
            return page
        }
    }

    // MARK: zones

    /// Every zone (`zones/list`).
    func listZones() async throws -> [RecordZone] {
        let response = try await send("zones/list", method: "GET", body: nil)
        return try CloudContainer.unexpected("zones/list") {
            let results = try CloudContainer.reader(response, "zones/list").array("zones") ?? []
            return try results.compactMap { element in
                WireError(json: element) == nil ? try RecordZone(json: element, requested: nil) : nil
            }
        }
    }

    /// Looks zones up (`zones/lookup`), one result per ID.
    func lookupZones(_ ids: [RecordZone.ID], onZone: (RecordZone.ID, Result<RecordZone, CloudKitError>) -> Void) async throws {
        try await sendChunked(ids, send: { chunk in
            let body: JSONValue = .object(["zones": .array(chunk.map(\.wire.json))])
            let response = try await send("zones/lookup", body: body)
            let results = try CloudContainer.unexpected("zones/lookup") { try CloudContainer.reader(response, "zones/lookup").requiredArray("zones") }
            for (index, id) in chunk.enumerated() {
                onZone(id, Self.zoneResult(Self.zoneElement(for: id, at: index, in: results), id: id))
            }
        }, failItem: { id, error in onZone(id, .failure(error)) })
    }

    /// Creates and deletes zones (`zones/modify`).
    func modifyZones(saving zones: [RecordZone], deleting ids: [RecordZone.ID],
                     onSave: (RecordZone.ID, Result<RecordZone, CloudKitError>) -> Void,
                     onDelete: (RecordZone.ID, Result<Void, CloudKitError>) -> Void) async throws {
        enum Item { case save(RecordZone), delete(RecordZone.ID) }
        let items = zones.map(Item.save) + ids.map(Item.delete)
        func id(_ item: Item) -> RecordZone.ID {
            switch item {
            case .save(let zone): return zone.zoneID
            case .delete(let id): return id
            }
        }
        func deliver(_ item: Item, _ result: Result<RecordZone, CloudKitError>) {
            switch item {
            case .save: onSave(id(item), result)
            case .delete: onDelete(id(item), result.map { _ in () })
            }
        }
        try await sendChunked(items, send: { chunk in
            let operations = chunk.map { item -> JSONValue in
                switch item {
                case .save(let zone): return WireZoneOperation(.create, zone.zoneID.wire).json
                case .delete(let id): return WireZoneOperation(.delete, id.wire).json
                }
            }
            let response = try await send("zones/modify", body: .object(["operations": .array(operations)]))
            let results = try CloudContainer.unexpected("zones/modify") { try CloudContainer.reader(response, "zones/modify").requiredArray("zones") }
            for (index, item) in chunk.enumerated() {
                let zoneID = id(item)
                var result = Self.zoneResult(Self.zoneElement(for: zoneID, at: index, in: results), id: zoneID)
                if case .save(let zone) = item, case .success(var saved) = result, saved.currentServerChangeToken == nil,
                   !zone.capabilities.isEmpty, saved.capabilities.isEmpty {
                    saved.capabilities = zone.capabilities
                    result = .success(saved)
                }
                deliver(item, result)
            }
        }, failItem: { item, error in deliver(item, .failure(error)) })
    }

    static func zoneElement(for id: RecordZone.ID, at index: Int, in results: [JSONValue]) -> JSONValue? {
        func name(_ value: JSONValue) -> String? { value.objectValue?["zoneID"]?.objectValue?["zoneName"]?.stringValue }
        if index < results.count, name(results[index]) == nil || name(results[index]) == id.zoneName { return results[index] }
        return results.first { name($0) == id.zoneName }
    }

    static func zoneResult(_ element: JSONValue?, id: RecordZone.ID) -> Result<RecordZone, CloudKitError> {
        guard let element else { return .failure(CloudKitError(.internalError, "the server did not answer for zone \(id)")) }
        if let wire = WireError(json: element) { return .failure(CloudKitError(wire: wire, zone: id)) }
        guard element.objectValue?["zoneID"] != nil else { return .success(RecordZone(zoneID: id)) }
        do {
            return .success(try RecordZone(json: element, requested: id))
        } catch {
            return .failure(CloudKitError(.internalError, "unexpected zone in the server's answer: \(error)", underlying: error))
        }
    }
}
