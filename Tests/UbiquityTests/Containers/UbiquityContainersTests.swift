// SPDX-License-Identifier: Apache-2.0
import Foundation
import Testing
import Ubiquity

@Suite("UbiquityContainers")
struct UbiquityContainersTests {
    private let sandbox: ContainerSandbox

    init() throws { sandbox = try ContainerSandbox() }

    @Test func declarationsComeFromCodeThenEnvironmentWithoutDuplicates() throws {
        let containers = try sandbox.containers(["iCloud.a.b"],
                                                adding: ["UBIQUITY_CONTAINERS": " iCloud.c.d ,,iCloud.a.b, iCloud.e.f,"])
        #expect(containers.identifiers.map(\.rawValue) == ["iCloud.a.b", "iCloud.c.d", "iCloud.e.f"])
        #expect(containers.defaultIdentifier?.rawValue == "iCloud.a.b")
        #expect(containers.paths == sandbox.paths)
    }

    @Test func environmentAloneDeclaresTheDefault() throws {
        let containers = try sandbox.containers(adding: ["UBIQUITY_CONTAINERS": "iCloud.com.example.Notes,iCloud.com.example.Other"])
        #expect(containers.defaultIdentifier?.rawValue == "iCloud.com.example.Notes")
    }

    @Test func invalidEnvironmentEntryIsNamed() throws {
        let error = try #require(throws: UbiquityError.self) {
            try sandbox.containers(adding: ["UBIQUITY_CONTAINERS": "iCloud.ok.One,not valid"])
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("UBIQUITY_CONTAINERS"))
        #expect(error.message.contains("'not valid'"))
    }

    @Test func invalidDeclaredIdentifierIsRefused() throws {
        let error = try #require(throws: UbiquityError.self) { try sandbox.containers(["iCloud..x"]) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("iCloud..x"))
    }

    @Test func parseDeclarationsSeparatesValidAndInvalid() {
        let parsed = UbiquityContainers.parseDeclarations("a.b, bad, ,c.d,-x.y")
        #expect(parsed.valid.map(\.rawValue) == ["a.b", "c.d"])
        #expect(parsed.invalid.map(\.entry) == ["bad", "-x.y"])
        #expect(parsed.invalid.allSatisfy { $0.error.code == .invalidArgument })
    }

    @Test func containerURLCreatesTheLayout() throws {
        let containers = try sandbox.containers(["iCloud.com.example.Notes"])
        let expected = sandbox.paths.containersDirectory.appendingPathComponent("iCloud~com~example~Notes").path
        #expect(FileStamp.of(expected) == nil)

        let url = try containers.containerURL(for: "iCloud.com.example.Notes")
        #expect(url.path == expected)
        #expect(url.hasDirectoryPath)
        #expect(FileStamp.of(expected)?.isDirectory == true)
        #expect(ContainerSandbox.mode(expected) == 0o700)
        let documents = try containers.documentsURL(for: "iCloud.com.example.Notes")
        #expect(documents.path == expected + "/Documents")
        #expect(FileStamp.of(documents.path)?.isDirectory == true)
        #expect(url.path.hasPrefix(sandbox.root.path + "/data/ubiquity/containers/"))
    }

    @Test func containerURLKeepsExistingContents() throws {
        let containers = try sandbox.containers(["iCloud.com.example.Notes"])
        let documents = try containers.documentsURL()
        let file = documents.appendingPathComponent("note.txt")
        try Data("hello".utf8).write(to: file)
        #expect(try containers.containerURL() == containers.containerURL(for: "iCloud.com.example.Notes"))
        #expect(try Data(contentsOf: file) == Data("hello".utf8))
    }

    @Test func ubiquityHomeMovesContainers() throws {
        let home = sandbox.path("device-b")
        let containers = try sandbox.containers(["iCloud.a.b"], adding: ["UBIQUITY_HOME": home])
        #expect(try containers.containerURL().path == home + "/containers/iCloud~a~b")
    }

    @Test func nilIdentifierIsTheDefault() throws {
        let containers = try sandbox.containers(["iCloud.first.One", "iCloud.second.Two"])
        #expect(try containers.identifier(for: nil).rawValue == "iCloud.first.One")
        #expect(try containers.containerURL(for: nil) == containers.containerURL(for: "iCloud.first.One"))
        #expect(containers.url(forUbiquityContainerIdentifier: nil) == containers.url(forUbiquityContainerIdentifier: "iCloud.first.One"))
        #expect(containers.url(forUbiquityContainerIdentifier: "iCloud.second.Two")?.lastPathComponent == "iCloud~second~Two")
    }

    @Test func unknownIdentifierNamesTheDeclaredOnes() throws {
        let containers = try sandbox.containers(["iCloud.first.One", "iCloud.second.Two"])
        #expect(containers.url(forUbiquityContainerIdentifier: "iCloud.not.Declared") == nil)
        let error = try #require(throws: UbiquityError.self) { try containers.containerURL(for: "iCloud.not.Declared") }
        #expect(error.code == .unknownContainer)
        #expect(error.message.contains("iCloud.not.Declared"))
        #expect(error.message.contains("iCloud.first.One"))
        #expect(error.message.contains("iCloud.second.Two"))
        #expect(error.message.contains("UBIQUITY_CONTAINERS"))
        #expect(FileStamp.of(containers.location(of: try ContainerIdentifier("iCloud.not.Declared")).path) == nil)
    }

    @Test func invalidIdentifierIsAnInvalidArgument() throws {
        let containers = try sandbox.containers(["iCloud.first.One"])
        #expect(containers.url(forUbiquityContainerIdentifier: "../escape") == nil)
        #expect(containers.url(forUbiquityContainerIdentifier: "") == nil)
        let error = try #require(throws: UbiquityError.self) { try containers.containerURL(for: "../escape") }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("../escape"))
        #expect(FileStamp.of(sandbox.paths.containersDirectory.path) == nil)
    }

    @Test func noDeclaredContainerSaysSo() throws {
        let containers = try sandbox.containers()
        #expect(containers.identifiers.isEmpty)
        #expect(containers.defaultIdentifier == nil)
        #expect(containers.url(forUbiquityContainerIdentifier: nil) == nil)
        let error = try #require(throws: UbiquityError.self) { try containers.containerURL() }
        #expect(error.code == .unknownContainer)
        #expect(error.message.contains("no ubiquity container is declared"))
        #expect(error.message.contains("UBIQUITY_CONTAINERS"))
        let other = try #require(throws: UbiquityError.self) { try containers.containerURL(for: "iCloud.a.b") }
        #expect(other.code == .unknownContainer)
        #expect(other.message.contains("no container is declared"))
    }

    @Test func declarationsInCodeComeFirstAndAreValidated() throws {
        let environment = sandbox.environment(adding: ["UBIQUITY_CONTAINERS": "iCloud.env.One,bad entry"])
        let declarations = ContainerDeclarations(environment: environment)
        #expect(declarations.containers.identifiers.map(\.rawValue) == ["iCloud.env.One"])
        try declarations.declare(["iCloud.code.One", "iCloud.env.One"])
        try declarations.declare(["iCloud.code.Two", "iCloud.code.One"])
        #expect(declarations.containers.identifiers.map(\.rawValue) == ["iCloud.code.One", "iCloud.env.One", "iCloud.code.Two"])
        #expect(throws: UbiquityError.self) { try declarations.declare(["iCloud.code.Never", "bad"]) }
        #expect(!declarations.containers.identifiers.map(\.rawValue).contains("iCloud.code.Never"))
        #expect(declarations.containers.paths == sandbox.paths)
        // The invalid environment entry was skipped, and lookups say so.
        let error = try #require(throws: UbiquityError.self) { try declarations.containers.containerURL(for: "iCloud.x.Y") }
        #expect(error.message.contains("'bad entry'"))
    }

    @Test func fileManagerLookupsOfUndeclaredContainersAreNil() {
        // The shared declarations are process-wide: only look up names nobody declares.
        #expect(FileManager.default.url(forUbiquityContainerIdentifier: "iCloud.test.ubiquity.Undeclared") == nil)
        #expect(FileManager.default.url(forUbiquityContainerIdentifier: "not valid") == nil)
        #expect(UbiquityContainers.shared.paths == UbiquityPaths())
    }
}
