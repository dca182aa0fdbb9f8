// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityServer
import UbiquityWire

/// What the Console computes without I/O: the development → production differences, a record's
/// fields as shown, and a filter's value typed as the schema types its field.
@Suite struct ConsoleValuesTests {
    @Test func differencesListWhatADeploymentChangesAndWhatItRefuses() {
        var production = ContainerSchema(recordTypes: [
            "Note": RecordTypeSchema(name: "Note", fields: ["title": SchemaField(name: "title", type: "STRING", queryable: true, sortable: false, searchable: false)]),
        ])
        var development = production
        development.roles = ["editor"]
        development.recordTypes["Note"]!.fields["title"]!.sortable = true
        development.recordTypes["Note"]!.fields["rank"] = SchemaField(name: "rank", type: "INT64", queryable: true, sortable: true, searchable: false)
        development.recordTypes["Tag"] = RecordTypeSchema(name: "Tag", fields: ["name": SchemaField(name: "name", type: "STRING", queryable: true, sortable: false, searchable: false)])
        #expect(development.differences(from: production) == [
            .addedRole("editor"),
            .addedField(type: "Note", field: "rank", fieldType: "INT64"),
            .changedIndexes(type: "Note", field: "title", production: .init(queryable: true, sortable: false, searchable: false),
                            development: .init(queryable: true, sortable: true, searchable: false)),
            .addedType("Tag"), .addedField(type: "Tag", field: "name", fieldType: "STRING"),
        ])
        #expect(development.differences(from: development).isEmpty)
        // production has what development lost: the deployment is refused
        production.recordTypes["Old"] = RecordTypeSchema(name: "Old")
        let refused = development.differences(from: production)
        #expect(refused.contains { $0.isRefusal && $0.description.contains("Old") })
    }

    @Test func aRecordsFieldsAreShownWithTheirReferencesAndAssets() {
        let record = StoredRecord(zone: 1, recordName: "n1", recordType: "Note", changeTag: "t", sequence: 3, deleted: false, fields: [
            "title": .string("<b>hi</b>"),
            "when": .timestamp(1_780_000_000_000),
            "tags": .list(element: .string, [.string("a"), .string("b")]),
            "owner": .reference(WireReference(recordName: "u1", zoneID: WireZoneID(zoneName: "People"))),
            "file": .asset(WireAsset(fileChecksum: "abc", size: 2048)),
        ], created: WireRecordStamp(timestamp: 1, userRecordName: "_u"), modified: WireRecordStamp(timestamp: 2, userRecordName: "_u"))
        let fields = ConsoleRecordView.fields(of: record)
        #expect(fields.map(\.name) == ["file", "owner", "tags", "title", "when"])
        #expect(fields[0].type == "ASSET" && fields[0].assets.first?.fileChecksum == "abc")
        #expect(fields[1].type == "REFERENCE" && fields[1].references.first?.recordName == "u1")
        #expect(fields[2].type == "LIST<STRING>" && fields[2].text == "a\nb")
        #expect(fields[3].text == "<b>hi</b>")  // escaped by the template, not here
        #expect(fields[4].text.hasPrefix("2026-"))
    }

    @Test func aFiltersValueIsTypedAsItsField() throws {
        #expect(try ConsoleRecordView.filterValue("42", fieldType: "INT64", zone: "_defaultZone") == .int64(42))
        #expect(try ConsoleRecordView.filterValue("2.5", fieldType: "DOUBLE", zone: "_defaultZone") == .double(2.5))
        #expect(try ConsoleRecordView.filterValue("2026-01-01T00:00:00Z", fieldType: "TIMESTAMP", zone: "_defaultZone") == .timestamp(1_767_225_600_000))
        #expect(try ConsoleRecordView.filterValue("x", fieldType: "STRING_LIST", zone: "_defaultZone") == .string("x"))
        #expect(try ConsoleRecordView.filterValue("u1", fieldType: "REFERENCE", zone: "People")
                == .reference(WireReference(recordName: "u1", zoneID: WireZoneID(zoneName: "People"))))
        #expect(try ConsoleRecordView.filterValue("free text", fieldType: nil, zone: "_defaultZone") == .string("free text"))
        #expect(throws: UbiquityError.self) { try ConsoleRecordView.filterValue("many", fieldType: "INT64", zone: "_defaultZone") }
        #expect(throws: UbiquityError.self) { try ConsoleRecordView.filterKey("___nope") }
        #expect(try ConsoleRecordView.filterKey("___createTime") == .system(.createdTimestamp))
    }

    @Test func signingInGoesBackOnlyToAPageOfThisSite() {
        #expect(DriveRoutes.nextPath("/console/iCloud.a/records?env=production") == "/console/iCloud.a/records?env=production")
        for refused in ["//evil.example/x", "/\\evil.example", "https://evil.example/", "console", "/a\nb", nil] {
            #expect(DriveRoutes.nextPath(refused) == nil)
        }
    }
}
