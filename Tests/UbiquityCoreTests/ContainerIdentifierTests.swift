// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import UbiquityCore

@Suite("ContainerIdentifier")
struct ContainerIdentifierTests {
    @Test(arguments: [
        "iCloud.com.example.Notes", "a.b", "iCloud.md.obsidian", "com.example.my-app_2", "A1.b-2.C_3",
        String(repeating: "a.", count: 127) + "b",  // 255 bytes
    ])
    func acceptsReverseDNS(_ raw: String) throws {
        let identifier = try ContainerIdentifier(raw)
        #expect(identifier.rawValue == raw)
        #expect(identifier.description == raw)
    }

    @Test(arguments: [
        ("", "empty"),
        ("single", "at least two dot-separated parts"),
        ("a..b", "empty part"),
        (".a.b", "empty part"),
        ("a.b.", "empty part"),
        ("a.-b", "starts with '-'"),
        ("-a.b", "starts with '-'"),
        ("a.b c", "character ' '"),
        ("a/b.c", "character '/'"),
        ("../x.y", "empty part"),
        ("a.bé", "character 'é'"),
        ("a.b~c", "character '~'"),
        (String(repeating: "a.", count: 128), "longer than 255 bytes"),
    ])
    func refusesOthersSayingWhy(_ raw: String, _ reason: String) throws {
        let error = try #require(throws: UbiquityError.self) { try ContainerIdentifier(raw) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains(reason), "\(error.message)")
        #expect(error.message.contains("'\(raw)'"))
        #expect(error.message.contains("reverse-DNS"))
    }

    @Test func directoryNameReplacesDots() throws {
        #expect(try ContainerIdentifier("iCloud.md.obsidian").directoryName == "iCloud~md~obsidian")
        #expect(try ContainerIdentifier("com.apple.CloudDocs").directoryName == "com~apple~CloudDocs")
    }

    @Test func codableValidates() throws {
        let identifier = try ContainerIdentifier("iCloud.com.example.Notes")
        let data = try JSONEncoder().encode([identifier])
        #expect(String(decoding: data, as: UTF8.self) == #"["iCloud.com.example.Notes"]"#)
        #expect(try JSONDecoder().decode([ContainerIdentifier].self, from: data) == [identifier])
        #expect(throws: (any Error).self) { try JSONDecoder().decode([ContainerIdentifier].self, from: Data(#"["bad"]"#.utf8)) }
    }

    @Test func ordersAndHashesByRawValue() throws {
        let a = try ContainerIdentifier("a.b"), b = try ContainerIdentifier("a.c")
        #expect(a < b)
        #expect([b, a].sorted() == [a, b])
        #expect(Set([a, try ContainerIdentifier("a.b")]).count == 1)
    }
}
