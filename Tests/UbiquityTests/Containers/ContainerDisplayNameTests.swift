// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

/// A container's declared display name (Apple's `NSUbiquitousContainerName`): kept in the
/// container's directory, validated as a folder name, removable.
@Suite struct ContainerDisplayNameTests {
    let sandbox: ContainerSandbox

    init() throws { sandbox = try ContainerSandbox() }

    @Test func setReadAndRemove() throws {
        let containers = try sandbox.containers(["iCloud.com.example.Notes", "iCloud.com.example.Sketch"])
        #expect(try containers.displayName() == nil)
        try containers.setDisplayName("  My Notes ✎ ", for: nil)
        #expect(try containers.displayName(for: "iCloud.com.example.Notes") == "My Notes ✎")
        #expect(try containers.displayName(for: "iCloud.com.example.Sketch") == nil)
        let directory = try containers.containerURL(for: "iCloud.com.example.Notes")
        #expect(UbiquityContainers.displayName(ofContainerAt: directory) == "My Notes ✎")
        // the declaration is beside Documents/, never one of the documents
        #expect(try FileManager.default.contentsOfDirectory(atPath: try containers.documentsURL().path).isEmpty)
        try containers.setDisplayName("Renamed")
        #expect(try containers.displayName() == "Renamed")
        try containers.setDisplayName(nil)
        #expect(try containers.displayName() == nil)
        try containers.setDisplayName(nil)  // removing twice is fine
    }

    @Test(arguments: ["", "   ", ".hidden", "..", "a/b", "tab\there", String(repeating: "é", count: 128), "nul\u{0}"])
    func invalidNamesAreRefusedAndChangeNothing(_ name: String) throws {
        let containers = try sandbox.containers(["iCloud.com.example.Notes"])
        try containers.setDisplayName("Kept")
        do {
            try containers.setDisplayName(name)
            Issue.record("'\(name)' was accepted")
        } catch let error as UbiquityError {
            #expect(error.code == .invalidArgument)
            #expect(error.message.contains("invalid container display name"))
        }
        #expect(try containers.displayName() == "Kept")
    }

    @Test func aHandEditedFileThatIsNotANameIsIgnored() throws {
        let containers = try sandbox.containers(["iCloud.com.example.Notes"])
        let directory = try containers.containerURL()
        let file = directory.appendingPathComponent(UbiquityContainers.containerInfoFileName)
        for text in [#"{"name": "../../etc"}"#, #"{"name": 3}"#, "not json", #"["x"]"#] {
            try Data(text.utf8).write(to: file)
            #expect(UbiquityContainers.displayName(ofContainerAt: directory) == nil, "\(text)")
        }
    }

    @Test func anUndeclaredContainerIsNamed() throws {
        let containers = try sandbox.containers(["iCloud.com.example.Notes"])
        #expect(throws: UbiquityError.self) { try containers.setDisplayName("X", for: "iCloud.com.example.Other") }
    }
}
