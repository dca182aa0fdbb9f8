// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityCloudKit
import UbiquityWire

@Suite("CloudKit record value encoding")
struct CloudKitRecordEncodingTests {
    typealias Support = CloudKitTestSupport

    /// Saves `record` through a fake that answers with one record, and returns the request's
    /// `operations[0].record.fields`.
    func sentFields(_ record: Record) async throws -> JSONValue {
        let fake = FakeCloudKitTransport(json: #"{"records":[\#(Support.recordJSON(record.recordID.recordName))]}"#)
        _ = try await Support.container(fake).privateCloudDatabase.save(record)
        return try #require(try fake.body()[path: "operations[0].record.fields"])
    }

    @Test("every value type is sent with its CloudKit type and encoding")
    func everyType() async throws {
        var record = Record(recordType: "Artist", recordID: Record.ID(recordName: "mei"))
        let born = Date(timeIntervalSince1970: 1_422_312_944.104)
        record["name"] = "Mei Chen"
        record["age"] = 30
        record["big"] = RecordValue(Int64.max)
        record["isActive"] = true
        record["rating"] = 4.5
        record["born"] = RecordValue(born)
        record["photo"] = RecordValue(Data([0, 1, 2, 250]))
        record["label"] = RecordValue(Reference(recordID: Record.ID(recordName: "label-1"), action: .deleteSelf))
        record["elsewhere"] = RecordValue(Reference(recordID: Record.ID(recordName: "x", zoneID: RecordZone.ID(zoneName: "Other")), action: .validate))
        record["studio"] = RecordValue(Location(latitude: 37.33, longitude: -122.03, altitude: 12, horizontalAccuracy: 5, verticalAccuracy: 3,
                                                course: 90, speed: 1.5, timestamp: born))
        record["tags"] = ["jazz", "piano"]
        record["scores"] = RecordValue([1, 2, 3])
        record["weights"] = RecordValue([1.5, 2.5])
        record["dates"] = RecordValue([born])
        record["blobs"] = RecordValue([Data([1]), Data([2])])
        record["links"] = RecordValue([Reference(recordID: Record.ID(recordName: "a"), action: .none)])
        record["places"] = RecordValue([Location(latitude: 1, longitude: 2)])
        let fields = try await sentFields(record)
        let expected = try Support.json("""
            {"name":{"value":"Mei Chen","type":"STRING"},
             "age":{"value":30,"type":"INT64"},
             "big":{"value":9223372036854775807,"type":"INT64"},
             "isActive":{"value":1,"type":"INT64"},
             "rating":{"value":4.5,"type":"DOUBLE"},
             "born":{"value":1422312944104,"type":"TIMESTAMP"},
             "photo":{"value":"AAEC+g==","type":"BYTES"},
             "label":{"value":{"recordName":"label-1","action":"DELETE_SELF"},"type":"REFERENCE"},
             "elsewhere":{"value":{"recordName":"x","action":"VALIDATE","zoneID":{"zoneName":"Other","zoneType":"REGULAR_CUSTOM_ZONE"}},"type":"REFERENCE"},
             "studio":{"value":{"latitude":37.33,"longitude":-122.03,"altitude":12,"horizontalAccuracy":5,"verticalAccuracy":3,
                                "course":90,"speed":1.5,"timestamp":1422312944104},"type":"LOCATION"},
             "tags":{"value":["jazz","piano"],"type":"STRING_LIST"},
             "scores":{"value":[1,2,3],"type":"INT64_LIST"},
             "weights":{"value":[1.5,2.5],"type":"DOUBLE_LIST"},
             "dates":{"value":[1422312944104],"type":"TIMESTAMP_LIST"},
             "blobs":{"value":["AQ==","Ag=="],"type":"BYTES_LIST"},
             "links":{"value":[{"recordName":"a","action":"NONE"}],"type":"REFERENCE_LIST"},
             "places":{"value":[{"latitude":1,"longitude":2}],"type":"LOCATION_LIST"}}
            """)
        #expect(fields == expected)
    }

    @Test("a fetched record decodes every field type and the system fields")
    func decoding() async throws {
        let fields = """
            {"name":{"value":"Mei","type":"STRING"},"age":{"value":"30","type":"INT64"},"rating":{"value":4.5,"type":"DOUBLE"},
             "born":{"value":1422312944104,"type":"TIMESTAMP"},"photo":{"value":"AAEC+g==","type":"BYTES"},
             "label":{"value":{"recordName":"label-1","action":"DELETE_SELF"},"type":"REFERENCE"},
             "studio":{"value":{"latitude":37.33,"longitude":-122.03},"type":"LOCATION"},
             "art":{"value":{"fileChecksum":"AY6c","size":1884695,"downloadURL":"https://x/${f}"},"type":"ASSETID"},
             "tags":{"value":[],"type":"STRING_LIST"},"scores":{"value":[1,2],"type":"INT64_LIST"}}
            """
        let fake = FakeCloudKitTransport(json: #"{"records":[\#(Support.recordJSON("mei", fields: fields))]}"#)
        let record = try await Support.container(fake).privateCloudDatabase.record(for: Record.ID(recordName: "mei"))
        #expect(record.recordType == "Artist")
        #expect(record.recordChangeTag == "1e")
        #expect(record.recordID == Record.ID(recordName: "mei"))
        #expect(record.creationDate == Date(timeIntervalSince1970: 1_422_312_944.104))
        #expect(record.modificationDate == Date(timeIntervalSince1970: 1_422_312_944.105))
        #expect(record.creatorUserRecordID?.recordName == "_9a065b60313a5937e75e03ed8e8f383d")
        #expect(record.lastModifiedUserRecordID?.recordName == "_9a065b60313a5937e75e03ed8e8f383d")
        let name: String? = record["name"]
        #expect(name == "Mei")
        let age: Int? = record["age"]
        #expect(age == 30)
        #expect(record["rating"] == .double(4.5))
        #expect(record["born"]?.dateValue == Date(timeIntervalSince1970: 1_422_312_944.104))
        #expect(record["photo"]?.dataValue == Data([0, 1, 2, 250]))
        #expect(record["label"]?.referenceValue == Reference(recordID: Record.ID(recordName: "label-1"), action: .deleteSelf))
        #expect(record["studio"]?.locationValue == Location(latitude: 37.33, longitude: -122.03))
        #expect(record["art"]?.assetValue?.size == 1_884_695)
        #expect(record["tags"] == .list([]))
        let scores: [Int]? = record["scores"]
        #expect(scores == [1, 2])
        #expect(record.allKeys() == ["age", "art", "born", "label", "name", "photo", "rating", "scores", "studio", "tags"])
        #expect(record.changedKeys().isEmpty)
        // An emptied list keeps the type it was fetched with; a removed key is sent as null.
        var changed = record
        changed["tags"] = .list([])
        changed["photo"] = nil
        #expect(changed.changedKeys() == ["photo", "tags"])
        let operation = try CloudDatabase.operation(for: changed, policy: .ifServerRecordUnchanged)
        #expect(operation.json[path: "record.fields"] == (try Support.json(#"{"tags":{"value":[],"type":"STRING_LIST"},"photo":{"value":null}}"#)))
    }

    @Test("a field value is small: the large cases are boxed (a fetch of 100,000 records holds 100,000 field dictionaries)")
    func valueLayout() {
        // String and Data are the largest unboxed payloads (16 bytes)
        #expect(MemoryLayout<RecordValue>.size <= 17)
        #expect(MemoryLayout<Location>.size > 64 && MemoryLayout<Asset>.size > 64)  // why they are boxed
        // boxed values compare, hash and read back as before
        let place = Location(latitude: 37.33, longitude: -122.03, altitude: 12)
        let asset = Asset(fileChecksum: "abc", size: 3, downloadURL: "https://example.invalid/a")
        let link = Reference(recordID: Record.ID(recordName: "label-1"), action: .deleteSelf)
        var copy = RecordValue.location(place)
        #expect(copy == .location(place) && copy.locationValue == place)
        copy = .asset(asset)
        #expect(copy.assetValue == asset && Set([copy, .asset(asset), .reference(link)]).count == 2)
        #expect(RecordValue.reference(link).referenceValue == link)
    }

    @Test("typed accessors, literals and conversions")
    func accessors() {
        var record = Record(recordType: "Note")
        record["flag"] = false
        record["count"] = 7
        record.setObject(Int32(5), forKey: "small")
        record["list"] = ["a", "b"]
        let flag: Bool? = record["flag"]
        #expect(flag == false)
        #expect(record["count"]?.intValue == 7)
        #expect(record["count"]?.doubleValue == 7)
        #expect(record.object(forKey: "small") == .int64(5))
        let list: [String]? = record["list"]
        #expect(list == ["a", "b"])
        let wrong: Date? = record["count"]
        #expect(wrong == nil)
        record.removeValue(forKey: "count")
        #expect(record["count"] == nil)
        #expect(record.changedKeys() == ["count", "flag", "list", "small"])
        #expect(record.allKeys() == ["flag", "list", "small"])
        #expect(RecordValue.list([1, 2]).typeName == "INT64_LIST")
        #expect(RecordValue.list([]).typeName == "UNKNOWN_LIST")
        #expect(Record.ID().recordName.count == 36)
    }

    @Test("a mixed list, a nested list, a bad field name or NaN is refused before sending")
    func invalidValues() async throws {
        let fake = FakeCloudKitTransport(json: #"{"records":[]}"#)
        let database = Support.container(fake).privateCloudDatabase
        for (key, value) in [("mixed", RecordValue.list(["a", 1])), ("nested", .list([.list([1])])), ("bad-name", "x"),
                             ("nan", .double(.nan)), ("far", .location(Location(latitude: 91, longitude: 0)))] {
            var record = Record(recordType: "Note")
            record[key] = value
            let error = await #expect(throws: CloudKitError.self) { try await database.save(record) }
            #expect(error?.code == .invalidArguments, "\(key)")
            #expect(error?.reason.contains(key) == true, "\(String(describing: error))")
        }
        #expect(fake.requests.isEmpty)
    }
}

@Suite("CloudKit record dictionaries in and out")
struct CloudKitRecordJSONTests {
    @Test("records read from CloudKit JSON count their fields as changed and keep the change tag")
    func reading() throws {
        let single = try Record.fromCloudKitJSON(Data(#"{"recordType":"Artist","recordName":"mei","recordChangeTag":"1e","fields":{"age":{"value":30},"gone":null}}"#.utf8))
        #expect(single.count == 1)
        #expect(single[0].recordChangeTag == "1e")
        #expect(single[0].changedKeys() == ["age", "gone"])
        #expect(try CloudDatabase.operation(for: single[0], policy: .ifServerRecordUnchanged).operationType == .update)

        let zone = RecordZone.ID(zoneName: "Notes")
        let many = try Record.fromCloudKitJSON(Data(#"[{"recordType":"Note","fields":{}},{"recordType":"Note","recordName":"x","zoneID":{"zoneName":"Other"}}]"#.utf8), zoneID: zone)
        #expect(many[0].recordID.zoneID == zone)
        #expect(many[0].recordID.recordName.count == 36)
        #expect(many[1].recordID.zoneID == RecordZone.ID(zoneName: "Other"))
        let wrapped = try Record.fromCloudKitJSON(Data(#"{"records":[{"recordType":"Note","recordName":"a"}]}"#.utf8))
        #expect(wrapped.map(\.recordID.recordName) == ["a"])

        let error = #expect(throws: CloudKitError.self) {
            try Record.fromCloudKitJSON(Data(#"[{"recordType":"Note"},{"recordName":"b","fields":{"n":{"value":"x","type":"INT64"}}}]"#.utf8))
        }
        #expect(error?.code == .invalidArguments)
        #expect(error?.reason.contains("[1].fields.n.value") == true, "\(String(describing: error))")
        let missingType = #expect(throws: CloudKitError.self) { try Record.fromCloudKitJSON(Data(#"{"recordName":"b"}"#.utf8)) }
        #expect(missingType?.reason.contains("recordType") == true)
    }

    @Test("a record written as CloudKit JSON reads back the same")
    func roundTrip() throws {
        var record = Record(recordType: "Artist", recordID: Record.ID(recordName: "mei", zoneID: RecordZone.ID(zoneName: "Music")))
        record["name"] = "Mei"
        record["born"] = RecordValue(Date(timeIntervalSince1970: 1_000))
        record["tags"] = ["a"]
        record["label"] = RecordValue(Reference(recordID: Record.ID(recordName: "l", zoneID: RecordZone.ID(zoneName: "Music")), action: .deleteSelf))
        let text = record.cloudKitJSON()
        let back = try #require(try Record.fromCloudKitJSON(Data(text.utf8)).first)
        #expect(back.recordID == record.recordID)
        #expect(back.fields == record.fields)
        let json = try JSONValue.parse(Data(text.utf8))
        #expect(json[path: "fields.label.value"] == (try JSONValue.parse(Data(#"{"recordName":"l","action":"DELETE_SELF"}"#.utf8))))
        #expect(json[path: "zoneID.zoneName"] == "Music")
        #expect(Record.ID(recordName: "x").cloudKitTombstoneJSON() == #"{"deleted":true,"recordName":"x","zoneID":{"zoneName":"_defaultZone","zoneType":"DEFAULT_ZONE"}}"#)
    }
}
