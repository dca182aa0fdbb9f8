// SPDX-License-Identifier: Apache-2.0
import Foundation
import UbiquityCloudKit

/// Saving, fetching and updating a record (CloudKitAtlas's "Records" section).
extension Atlas {
    /// Where Apple's sample puts its first item.
    static let applePark = Location(latitude: 37.3349, longitude: -122.0090)

    /// `save(_:)`: a new record with a field of each common type, in the default zone.
    func saveRecord() async throws -> String {
        var record = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-item"))
        record["name"] = "Atlas item \(run)"
        record["count"] = 1
        record["price"] = 9.5
        record["location"] = Self.applePark
        record["tags"] = ["atlas", "sample"]
        record["seen"] = Date(timeIntervalSince1970: 1_700_000_000)
        record["bytes"] = Data([0xCA, 0xFE])
        let saved = try await database.save(record)
        madeRecords.append(saved.recordID)
        try check(saved.recordChangeTag != nil, "the saved record has no change tag")
        item = saved
        return "\(saved.recordType)/\(saved.recordID.recordName) tag \(saved.recordChangeTag ?? "?")"
    }

    /// `fetch(withRecordID:)`: the record comes back with the values saved.
    func fetchRecord() async throws -> String {
        let saved = try need(item, from: "save-record")
        let fetched = try await database.record(for: saved.recordID)
        try check(fetched["name"] as String? == "Atlas item \(run)", "name is \(fetched["name"]?.description ?? "missing")")
        try check(fetched["count"] as Int64? == 1, "count is \(fetched["count"]?.description ?? "missing")")
        try check(fetched["price"] as Double? == 9.5, "price is \(fetched["price"]?.description ?? "missing")")
        try check(fetched["tags"] as [String]? == ["atlas", "sample"], "tags are \(fetched["tags"]?.description ?? "missing")")
        try check(fetched["seen"] as Date? == Date(timeIntervalSince1970: 1_700_000_000), "seen is \(fetched["seen"]?.description ?? "missing")")
        try check(fetched["bytes"] as Data? == Data([0xCA, 0xFE]), "bytes are \(fetched["bytes"]?.description ?? "missing")")
        let location = fetched["location"] as Location?
        try check(location.map { $0.distance(from: Self.applePark) < 1 } == true, "location is \(location?.description ?? "missing")")
        try check(fetched.recordChangeTag == saved.recordChangeTag, "the change tag is \(fetched.recordChangeTag ?? "none"), saved \(saved.recordChangeTag ?? "none")")
        item = fetched
        return "\(fetched.recordID.recordName): \(fetched.allKeys().count) fields"
    }

    /// `save(_:)` of the fetched record with a changed field: an update with its change tag.
    func updateRecord() async throws -> String {
        var record = try need(item, from: "fetch-record")
        record["name"] = "Atlas item \(run) (updated)"
        record["count"] = 2
        let updated = try await database.save(record)
        try check(updated.recordChangeTag != nil && updated.recordChangeTag != record.recordChangeTag,
                  "the change tag did not change (\(updated.recordChangeTag ?? "none"))")
        let fetched = try await database.record(for: record.recordID)
        try check(fetched["name"] as String? == "Atlas item \(run) (updated)", "name is \(fetched["name"]?.description ?? "missing") after the update")
        try check(fetched["count"] as Int64? == 2, "count is \(fetched["count"]?.description ?? "missing") after the update")
        try check(fetched["price"] as Double? == 9.5, "price was lost by the update")
        item = fetched
        return "tag \(record.recordChangeTag ?? "?") → \(fetched.recordChangeTag ?? "?")"
    }
}

/// References with cascading deletes (CloudKitAtlas's "References" section).
extension Atlas {
    /// A parent and two children pointing at it with `DELETE_SELF` references.
    func saveReferences() async throws -> String {
        var parent = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-parent"))
        parent["name"] = "Atlas parent \(run)"
        var records = [parent]
        for index in 1...2 {
            var child = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-child-\(index)"))
            child["name"] = "Atlas child \(index) \(run)"
            child["parentItem"] = Reference(record: parent, action: .deleteSelf)
            records.append(child)
        }
        let (results, _) = try await database.modifyRecords(saving: records, deleting: [])
        for record in records {
            madeRecords.append(record.recordID)
            guard let result = results[record.recordID] else { throw AtlasFailure("no answer for \(record.recordID.recordName)") }
            _ = try result.get()
        }
        parent = try results[parent.recordID]!.get()
        self.parent = parent
        children = records.dropFirst().map(\.recordID)
        let child = try await database.record(for: children[0])
        let reference = child["parentItem"] as Reference?
        try check(reference?.recordID.recordName == parent.recordID.recordName && reference?.action == .deleteSelf,
                  "the child's reference is \(reference.map { "\($0) action \($0.action)" } ?? "missing"), expected the parent with deleteSelf")
        return "\(parent.recordID.recordName) ← \(children.map(\.recordName).joined(separator: ", ")) (deleteSelf)"
    }

    /// A query for the records referring to the parent.
    func queryReferences() async throws -> String {
        let parent = try need(parent, from: "reference-save")
        let query = Query(recordType: Self.itemType, predicate: "parentItem == %@", parent.recordID)
        let found = try await names(query, in: .default)
        let expected = ["Atlas child 1 \(run)", "Atlas child 2 \(run)"]
        try check(found == expected, "found \(found), expected \(expected)")
        return "parentItem == \(parent.recordID.recordName): \(found.count) children"
    }

    /// Deleting the parent deletes the children (`DELETE_SELF`).
    func cascadeDelete() async throws -> String {
        let parent = try need(parent, from: "reference-save")
        try await database.deleteRecord(withID: parent.recordID)
        let results = try await database.records(for: children)
        for id in children {
            switch results[id] {
            case .failure(let error as CloudKitError) where error.code == .unknownItem:
                continue
            case .success:
                throw AtlasFailure("\(id.recordName) still exists after its parent was deleted")
            case .failure(let error):
                throw AtlasFailure("fetching \(id.recordName): \(error)")
            case nil:
                throw AtlasFailure("no answer for \(id.recordName)")
            }
        }
        return "deleted \(parent.recordID.recordName); \(children.count) children gone with it"
    }
}

/// Assets (CloudKitAtlas's "Assets" section, an image there).
extension Atlas {
    /// Saves a record with an asset made from a local file (uploaded by the save).
    func saveAsset() async throws -> String {
        try FileManager.default.createDirectory(at: scratch, withIntermediateDirectories: true)
        var generator = SystemRandomNumberGenerator()
        let content = Data((0..<(256 * 1024 + 17)).map { _ in UInt8.random(in: 0...255, using: &generator) })
        let file = scratch.appendingPathComponent("upload.bin")
        try content.write(to: file)
        var record = Record(recordType: Self.itemType, recordID: Record.ID(recordName: "atlas-\(run)-asset"))
        record["name"] = "Atlas asset \(run)"
        record["asset"] = Asset(fileURL: file)
        let saved = try await database.save(record)
        madeRecords.append(saved.recordID)
        let asset = try need(saved["asset"] as Asset?, from: "asset-save (the saved record has no asset)")
        try check(asset.size == Int64(content.count), "the saved asset's size is \(asset.size.map { "\($0)" } ?? "unknown"), expected \(content.count)")
        assetRecord = saved.recordID
        assetContent = content
        return "\(content.count) bytes, checksum \(asset.fileChecksum ?? "?")"
    }

    /// Fetches the record and downloads its asset: the same bytes.
    func downloadAsset() async throws -> String {
        let id = try need(assetRecord, from: "asset-save")
        let content = try need(assetContent, from: "asset-save")
        let fetched = try await database.record(for: id)
        let asset = try need(fetched["asset"] as Asset?, from: "asset-save (the fetched record has no asset)")
        let local = try await asset.download(to: scratch.appendingPathComponent("download.bin"))
        let downloaded = try Data(contentsOf: local)
        try check(downloaded == content, "downloaded \(downloaded.count) bytes that differ from the \(content.count) uploaded")
        return "\(downloaded.count) bytes, identical"
    }
}
