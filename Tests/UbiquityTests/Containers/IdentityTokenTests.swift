// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing
import Ubiquity

@Suite("UbiquityIdentityToken and account file")
struct IdentityTokenTests {
    private let sandbox: ContainerSandbox

    init() throws { sandbox = try ContainerSandbox() }

    @Test func digestMatchesKnownVectors() {
        #expect(SHA256.hexHash([UInt8]()) == "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855")
        #expect(SHA256.hexHash("abc".utf8) == "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad")
        #expect(SHA256.hexHash("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq".utf8)
                == "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1")
    }

    @Test func tokenIdentifiesTheAccountWithoutRevealingIt() throws {
        let alice = UbiquityIdentityToken(server: "https://cloud.example.com", user: "alice")
        #expect(alice == UbiquityIdentityToken(server: "https://cloud.example.com", user: "alice"))
        #expect(alice != UbiquityIdentityToken(server: "https://cloud.example.com", user: "bob"))
        #expect(alice != UbiquityIdentityToken(server: "https://other.example.com", user: "alice"))
        #expect(UbiquityIdentityToken(server: "a:1", user: "b") != UbiquityIdentityToken(server: "a", user: "1:b"))
        let encoded = try JSONEncoder().encode(alice)
        let text = String(decoding: encoded, as: UTF8.self)
        #expect(!text.contains("alice") && !text.contains("example"))
        #expect(!alice.description.contains("alice"))
        #expect(try JSONDecoder().decode(UbiquityIdentityToken.self, from: encoded) == alice)
        #expect(throws: DecodingError.self) { try JSONDecoder().decode(UbiquityIdentityToken.self, from: Data(#""alice""#.utf8)) }
    }

    @Test func accountFileRoundTripsWithPrivateMode() throws {
        let file = UbiquityAccountFile(paths: sandbox.paths)
        #expect(file.url == sandbox.paths.accountFile)
        #expect(try file.read() == nil)
        #expect(file.identityToken == nil)

        let account = UbiquityAccountFile.Account(server: "https://cloud.example.com", user: "alice")
        try file.write(account)
        #expect(try file.read() == account)
        #expect(ContainerSandbox.mode(file.url.path) == 0o600)
        #expect(ContainerSandbox.mode(sandbox.paths.configDirectory.path) == 0o700)
        #expect(file.identityToken == UbiquityIdentityToken(account: account))

        try file.write(.init(server: "https://cloud.example.com", user: "bob"))
        #expect(try file.read()?.user == "bob")
        #expect(ContainerSandbox.mode(file.url.path) == 0o600)

        try file.remove()
        #expect(try file.read() == nil)
        try file.remove()  // removing twice is fine
    }

    @Test func extraFieldsAreIgnoredAndBadFilesAreReported() throws {
        let file = UbiquityAccountFile(paths: sandbox.paths)
        try UbiquityPaths.ensureDirectory(sandbox.paths.configDirectory)
        try Data(#"{"server": "https://s", "user": "u", "device": "laptop"}"#.utf8).write(to: file.url)
        #expect(try file.read() == .init(server: "https://s", user: "u"))

        try Data("not json".utf8).write(to: file.url)
        let error = try #require(throws: UbiquityError.self) { try file.read() }
        #expect(error.code == .invalidArgument)
        #expect(error.message.contains(file.url.path))
        #expect(file.identityToken == nil)

        try Data(#"{"server": "https://s", "user": "  "}"#.utf8).write(to: file.url)
        #expect(throws: UbiquityError.self) { try file.read() }
        #expect(throws: UbiquityError.self) { try file.write(.init(server: "", user: "u")) }
    }
}
