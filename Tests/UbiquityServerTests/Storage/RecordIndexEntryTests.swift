// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
import UbiquityServer
import UbiquityWire

/// Bytes and assets have no index rows ("Data fields aren't searchable", Apple's `CKRecord`):
/// a 1 KiB inline file's record wrote a 256-character text row, the largest key of its index
/// rows, that no query could use. Filters and sorts on them are refused; a schema cannot make
/// them queryable or sortable, and its text leaves out what an older server set.
@Suite struct RecordIndexEntryTests {
    @Test func bytesAndAssetsAreNotIndexed() {
        for size in [0, 1, 192, 1024, 65_536] {
            let data = Data((0..<size).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) })
            #expect(RecordIndexEntry.entry(field: "inline", value: .bytes(data), zoneName: "Z") == nil, "\(size) bytes")
        }
        let record = StoredRecord(zone: 1, recordName: "r", recordType: "Item", changeTag: "t", sequence: 1, deleted: false,
                                  fields: ["inline": .bytes(Data([1, 2, 3])), "list": .list(element: .bytes, [.bytes(Data([1]))]),
                                           "path": .string("a/b.txt"), "size": .int64(3)],
                                  created: WireRecordStamp(timestamp: 1, userRecordName: "_u", deviceID: nil),
                                  modified: WireRecordStamp(timestamp: 1, userRecordName: "_u", deviceID: nil), parent: nil, shortGUID: nil)
        #expect(Set(RecordIndexEntry.entries(for: record, zoneName: "Z").map(\.field)) == ["path", "size"])
    }

    @Test func bytesAndAssetFieldsCannotBeQueriedSortedOrDeclaredQueryable() throws {
        for type in ["BYTES", "BYTES_LIST", "ASSETID", "ASSETID_LIST"] {
            #expect(!SchemaField.canBeIndexed(type: type))
            #expect(SchemaField.justInTime(name: "b", type: type) == SchemaField(name: "b", type: type, queryable: false, sortable: false, searchable: false))
        }
        for type in ["STRING", "INT64", "DOUBLE", "TIMESTAMP", "REFERENCE", "LOCATION", "STRING_LIST"] {
            #expect(SchemaField.canBeIndexed(type: type) && SchemaField.justInTime(name: "f", type: type).queryable)
        }
    }
}
