// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import Testing
import Ubiquity

@Suite("UbiquityContainers membership")
struct ContainerMembershipTests {
    private static let notes = "iCloud.com.example.Notes"
    private static let other = "iCloud.com.example.Other"

    private let sandbox: ContainerSandbox
    private let containers: UbiquityContainers
    /// The Notes container's directory.
    private let root: URL

    /// Two declared, created containers and a folder outside them.
    init() throws {
        sandbox = try ContainerSandbox()
        containers = try sandbox.containers([Self.notes, Self.other])
        root = try containers.containerURL(for: Self.notes)
        _ = try containers.containerURL(for: Self.other)
        try sandbox.makeDirectory("outside/dir")
    }

    @Test func findsTheContainerAndTheRelativePath() throws {
        let document = root.appendingPathComponent("Documents/a.txt")
        let found = try containers.container(containing: document)
        #expect(found.identifier.rawValue == Self.notes)
        #expect(found.relativePath == "Documents/a.txt")
        #expect(try containers.container(containing: root).relativePath == "")
        #expect(try containers.container(containing: root.appendingPathComponent("data/missing/deep")).relativePath == "data/missing/deep")
        let inOther = try containers.container(containing: containers.documentsURL(for: Self.other).appendingPathComponent("b"))
        #expect(inOther.identifier.rawValue == Self.other)
        #expect(inOther.relativePath == "Documents/b")
    }

    @Test func dotDotInsideTheContainerIsResolved() throws {
        let url = URL(fileURLWithPath: root.path + "/Documents/sub/../a.txt")
        #expect(try containers.container(containing: url).relativePath == "Documents/a.txt")
        #expect(try containers.validate(url, in: Self.notes).path == root.path + "/Documents/a.txt")
    }

    @Test func dotDotCannotEscape() throws {
        // Documents, the container, containers, ubiquity, data: five levels up is the sandbox.
        let escape = URL(fileURLWithPath: root.path + "/Documents/../../../../../outside/dir/x")
        let error = try #require(throws: UbiquityError.self) { try containers.container(containing: escape) }
        #expect(error.code == .outsideContainer)
        #expect(error.message.contains("resolved to '\(sandbox.path("outside/dir/x"))'"))
        let refused = try #require(throws: UbiquityError.self) { try containers.validate(escape, in: Self.notes) }
        #expect(refused.code == .outsideContainer)
        #expect(refused.message.contains(Self.notes))
    }

    @Test func dotDotIntoAnotherContainerIsRefusedByValidate() throws {
        let sideways = URL(fileURLWithPath: root.path + "/../iCloud~com~example~Other/Documents/x")
        #expect(try containers.container(containing: sideways).identifier.rawValue == Self.other)
        let error = try #require(throws: UbiquityError.self) { try containers.validate(sideways, in: Self.notes) }
        #expect(error.code == .outsideContainer)
        #expect(try containers.validate(sideways, in: Self.other).path.hasSuffix("iCloud~com~example~Other/Documents/x"))
    }

    @Test func undeclaredContainerDirectoryIsAnUnknownContainer() throws {
        let stranger = sandbox.paths.containersDirectory.appendingPathComponent("iCloud~org~stranger~App/Documents/x")
        let error = try #require(throws: UbiquityError.self) { try containers.container(containing: stranger) }
        #expect(error.code == .unknownContainer)
        #expect(error.message.contains("iCloud.org.stranger.App"))
        #expect(error.message.contains("UBIQUITY_CONTAINERS"))
    }

    @Test func symbolicLinksCannotEscape() throws {
        let documents = root.path + "/Documents"
        try FileManager.default.createSymbolicLink(atPath: documents + "/link", withDestinationPath: sandbox.path("outside/dir"))
        try FileManager.default.createSymbolicLink(atPath: documents + "/dangling", withDestinationPath: sandbox.path("outside/missing/file"))
        try FileManager.default.createSymbolicLink(atPath: documents + "/relative", withDestinationPath: "../../../../outside")
        let escapes = [
            documents + "/link",
            documents + "/link/secret.txt",
            documents + "/link/../x",            // the kernel applies '..' after following the link
            documents + "/dangling",             // writing through it would create a file outside
            documents + "/relative/dir/y",
        ]
        for path in escapes {
            let url = URL(fileURLWithPath: path)
            let error = try #require(throws: UbiquityError.self, "\(path)") { try containers.validate(url, in: Self.notes) }
            #expect(error.code == .outsideContainer, "\(path)")
            #expect(error.message.contains("resolved to"), "\(path)")
            #expect(throws: UbiquityError.self, "\(path)") { try containers.container(containing: url) }
        }
    }

    @Test func symbolicLinksInsideTheContainerAreFollowed() throws {
        try FileManager.default.createDirectory(atPath: root.path + "/Documents/real", withIntermediateDirectories: true)
        try FileManager.default.createSymbolicLink(atPath: root.path + "/Documents/alias", withDestinationPath: "real")
        let found = try containers.container(containing: URL(fileURLWithPath: root.path + "/Documents/alias/n.txt"))
        #expect(found.relativePath == "Documents/real/n.txt")
    }

    @Test func symbolicLinkLoopsAreRefused() throws {
        #expect(symlink("loop", root.path + "/Documents/loop") == 0)
        let error = try #require(throws: UbiquityError.self) {
            try containers.validate(URL(fileURLWithPath: root.path + "/Documents/loop/x"), in: Self.notes)
        }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("symbolic links"))
    }

    @Test func containersBehindASymlinkedHomeAreRecognised() throws {
        try sandbox.makeDirectory("real-home")
        try sandbox.symlink("linked-home", to: sandbox.path("real-home"))
        let containers = try sandbox.containers([Self.notes], adding: ["UBIQUITY_HOME": sandbox.path("linked-home")])
        let root = try containers.containerURL()
        #expect(root.path.hasPrefix(sandbox.path("linked-home")))
        let viaRealPath = URL(fileURLWithPath: sandbox.path("real-home/containers/iCloud~com~example~Notes/Documents/a"))
        #expect(try containers.container(containing: viaRealPath).relativePath == "Documents/a")
        #expect(try containers.container(containing: root.appendingPathComponent("Documents/a")).relativePath == "Documents/a")
        #expect(try containers.validate(viaRealPath).path == viaRealPath.path)
    }

    @Test func relativePathsAndOtherSchemesAreRefused() throws {
        let relative = try #require(URL(string: "Documents/a.txt"))
        let error = try #require(throws: UbiquityError.self) { try containers.container(containing: relative) }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains("relative"))
        let validateError = try #require(throws: UbiquityError.self) { try containers.validate(relative, in: Self.notes) }
        #expect(validateError.code == .invalidArgument)
        let web = try #require(URL(string: "https://example.com/Documents/a.txt"))
        let webError = try #require(throws: UbiquityError.self) { try containers.container(containing: web) }
        #expect(webError.code == .invalidArgument)
        #expect(webError.message.contains("not a file URL"))
    }

    @Test func outsideEverythingIsOutsideContainer() throws {
        let error = try #require(throws: UbiquityError.self) {
            try containers.container(containing: URL(fileURLWithPath: sandbox.path("outside/dir/file")))
        }
        #expect(error.code == .outsideContainer)
        #expect(error.message.contains(Self.notes))
        #expect(throws: UbiquityError.self) { try containers.container(containing: URL(fileURLWithPath: "/")) }
        // A sibling whose name merely starts with the container's is not inside it.
        let sibling = URL(fileURLWithPath: sandbox.paths.containersDirectory.path + "/iCloud~com~example~NotesX/a")
        #expect(throws: UbiquityError.self) { try containers.validate(sibling, in: Self.notes) }
    }

    @Test func validateNeedsADeclaredContainer() throws {
        let url = root.appendingPathComponent("Documents/a")
        let unknown = try #require(throws: UbiquityError.self) { try containers.validate(url, in: "iCloud.not.Declared") }
        #expect(unknown.code == .unknownContainer)
        let invalid = try #require(throws: UbiquityError.self) { try containers.validate(url, in: "nope") }
        #expect(invalid.code == .invalidArgument)
        #expect(try containers.validate(url).path == url.path)
    }
}
