// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore
@testable import UbiquityWire

/// The CloudKit wire JSON: the writer copies runs of plain bytes at once and the parser takes
/// strings without escapes straight from the input; both give exactly what the byte-by-byte
/// versions gave (kept here as the reference).
@Suite struct JSONValueTests {
    /// The writer before the fast paths, byte by byte (the reference output).
    static func reference(_ value: JSONValue, to out: inout [UInt8]) {
        func string(_ text: String) {
            out.append(UInt8(ascii: "\""))
            for byte in text.utf8 {
                switch byte {
                case UInt8(ascii: "\""): out += [UInt8(ascii: "\\"), UInt8(ascii: "\"")]
                case UInt8(ascii: "\\"): out += [UInt8(ascii: "\\"), UInt8(ascii: "\\")]
                case 0x0A: out += [UInt8(ascii: "\\"), UInt8(ascii: "n")]
                case 0x0D: out += [UInt8(ascii: "\\"), UInt8(ascii: "r")]
                case 0x09: out += [UInt8(ascii: "\\"), UInt8(ascii: "t")]
                case 0..<0x20:
                    let hex = Array("0123456789abcdef".utf8)
                    out += [UInt8(ascii: "\\"), UInt8(ascii: "u"), UInt8(ascii: "0"), UInt8(ascii: "0"), hex[Int(byte >> 4)], hex[Int(byte & 15)]]
                default: out.append(byte)
                }
            }
            out.append(UInt8(ascii: "\""))
        }
        switch value {
        case .null: out += Array("null".utf8)
        case .bool(let flag): out += Array((flag ? "true" : "false").utf8)
        case .integer(let number): out += Array(String(number).utf8)
        case .number(let number):
            if number.isFinite {
                if number == number.rounded(.towardZero), abs(number) < 1e15 {
                    out += Array("\(Int64(number)).0".utf8)
                } else {
                    out += Array("\(number)".utf8)
                }
            } else {
                out += Array("null".utf8)
            }
        case .string(let text): string(text)
        case .array(let elements):
            out.append(UInt8(ascii: "["))
            for (index, element) in elements.enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                reference(element, to: &out)
            }
            out.append(UInt8(ascii: "]"))
        case .object(let members):
            out.append(UInt8(ascii: "{"))
            for (index, key) in members.keys.sorted().enumerated() {
                if index > 0 { out.append(UInt8(ascii: ",")) }
                string(key)
                out.append(UInt8(ascii: ":"))
                reference(members[key]!, to: &out)
            }
            out.append(UInt8(ascii: "}"))
        }
    }

    static let strings = [
        "", "a", "plain ASCII text", "é", "naïve café", "漢字かな", "🙂 emoji 👩‍👩‍👧", "quote \" inside", "back\\slash", "\\\"", "\"",
        "new\nline", "tab\there", "cr\rlf\n", "\u{01}\u{02}\u{1F}", "\u{7F} DEL stays", "ends with escape\n", "\n starts with one",
        "mixed 漢\"字\\\u{08}\u{0C}é", String(repeating: "long run of plain bytes ", count: 200) + "\"" + String(repeating: "ü", count: 300),
    ]

    /// Records of every field type, as the server writes them (fields sorted, nested objects).
    static var records: [JSONValue] {
        let zone = WireZoneID(zoneName: "_ubiquityDocuments", ownerRecordName: "_owner é")
        let bytes = Data((0..<1024).map { UInt8(truncatingIfNeeded: $0 &* 7) })
        let fields: [String: WireFieldValue] = [
            "path": .string("Folder 漢字/naïve \"quoted\" name\n.txt"),
            "size": .int64(1024), "ratio": .double(0.25), "whole": .double(10), "modified": .timestamp(1_764_000_000_123),
            "inline": .bytes(bytes), "empty": .bytes(Data()),
            "parent": .reference(WireReference(recordName: "folder-1", zoneID: zone, action: .deleteSelf)),
            "place": .location(WireLocation(latitude: 52.5, longitude: 13.4)),
            "content": .asset(WireAsset(fileChecksum: "q83vEjRWeJA=", size: 70_000, receipt: "r/é", downloadURL: "https://example.invalid/a?b=c&d=\"e\"")),
            "tags": .list(element: .string, [.string("a"), .string("ß"), .string("\"")]),
            "numbers": .list(element: .int64, [.int64(1), .int64(-2)]),
        ]
        let record = WireRecord(recordName: "ID-1 é", recordType: "UbiquityItem", recordChangeTag: "2s", fields: fields,
                                created: WireRecordStamp(timestamp: 1, userRecordName: "_u"),
                                modified: WireRecordStamp(timestamp: 2, userRecordName: "_u", deviceID: "dev\t1"), zoneID: zone)
        let tombstone = WireRecord(recordName: "gone", deleted: true, zoneID: zone)
        return [record.json(), record.json(numbersAsStrings: true), record.json(desiredKeys: ["path", "inline"]), tombstone.json()]
    }

    @Test func stringsAreWrittenAsBefore() throws {
        for text in Self.strings {
            var expected: [UInt8] = []
            Self.reference(.string(text), to: &expected)
            var written: [UInt8] = [0x5B]  // appended after what is there
            JSONValue.writeString(text, to: &written)
            #expect(written == [0x5B] + expected, "\(text.debugDescription)")
            #expect(try JSONValue.parse(Data(expected)) == .string(text), "\(text.debugDescription)")
        }
        // a bridged (non-native) string too
        let bridged = NSString(string: "bridged \"é\"\n") as String
        var expected: [UInt8] = []
        Self.reference(.string(bridged), to: &expected)
        var written: [UInt8] = []
        JSONValue.writeString(bridged, to: &written)
        #expect(written == expected)
    }

    @Test func recordsAreWrittenAsBefore() throws {
        for record in Self.records + Self.strings.map({ JSONValue.object([$0: .array([.string($0), .null, .bool(true), .integer(-5), .number(1.5)])]) }) {
            var expected: [UInt8] = []
            Self.reference(record, to: &expected)
            #expect([UInt8](record.serialized()) == expected)
            #expect(try JSONValue.parse(record.serialized()) == record)
        }
    }

    @Test func stringsWithEscapesAreParsed() throws {
        let cases: [(String, String)] = [
            (#""plain""#, "plain"), (#""""#, ""), (#""a\"b""#, "a\"b"), (#""\\""#, "\\"), (#""\/""#, "/"),
            (#""\b\f\n\r\t""#, "\u{08}\u{0C}\n\r\t"), (#""caf\u00e9""#, "café"), (#""\ud83d\ude42""#, "🙂"),
            (#""before é \n after""#, "before é \n after"), (#""漢字\"""#, "漢字\""),
        ]
        for (json, text) in cases {
            #expect(try JSONValue.parse(Data(json.utf8)) == .string(text), "\(json)")
        }
        for bad in [#""unterminated"#, "\"control \u{01}\"", #""bad \x""#, #""\ud83d alone""#, #""\u0000""#, "\"a\\"] {
            #expect(throws: UbiquityError.self, "\(bad)") { try JSONValue.parse(Data(bad.utf8)) }
        }
        // invalid UTF-8 in a string, with and without an escape before it
        #expect(throws: UbiquityError.self) { try JSONValue.parse(Data([0x22, 0x61, 0xFF, 0x22])) }
        #expect(throws: UbiquityError.self) { try JSONValue.parse(Data([0x22, 0x5C, 0x6E, 0xC3, 0x22])) }
        // whitespace of every kind between tokens
        #expect(try JSONValue.parse(Data(" \t\r\n{ \"a\" :\n[ 1 ,\t\"x\" ] }\n".utf8)) == .object(["a": .array([.integer(1), .string("x")])]))
    }

    @Test func objectsNestedInObjectsAndArraysKeepTheirOwnMembers() throws {
        // each object's members are gathered on one stack and made a dictionary when it closes
        let json = #"{"a":{"b":1,"c":{"d":[{"e":2},{}],"f":{}}},"g":[{"h":3,"i":{"j":4}}],"k":5}"#
        let expected: JSONValue = [
            "a": ["b": 1, "c": ["d": [["e": 2], .object([:])], "f": .object([:])]],
            "g": [["h": 3, "i": ["j": 4]]],
            "k": 5,
        ]
        #expect(try JSONValue.parse(Data(json.utf8)) == expected)
        // a repeated name: the last one wins, at every level
        #expect(try JSONValue.parse(Data(#"{"a":1,"b":{"x":1,"x":2},"a":3}"#.utf8)) == ["a": 3, "b": ["x": 2]])
        // an error inside a nested object leaves nothing behind for the next parse
        #expect(throws: UbiquityError.self) { try JSONValue.parse(Data(#"{"a":{"b":1,"c":}}"#.utf8)) }
        #expect(try JSONValue.parse(Data(#"{"z":{"y":true}}"#.utf8)) == ["z": ["y": true]])
    }
}
